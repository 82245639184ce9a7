// gemm_vec4_regs.wgsl — batched C = act(beta * bias + alpha * (A @ B)), float32, 16-byte loads (interface,
// layouts, loads: gemm_operands.wgsl; tiling: gemm_vec4_io.wgsl). The same computation as gemm_vec4.wgsl,
// for wgpu-native.
//
// Accumulators: named vec4 variables, never an indexed array. naga (wgpu-native's compiler) emits loops the
// driver does not unroll, so gemm_vec4.wgsl's indexed accumulator array lands in local memory there (13x
// slower at 4096³ on an H200); named variables stay in registers whatever the loops become. A thread holds at
// most 2 x 2 blocks of 4 x 4 outputs: c<r><h> is row r (0-7: block g = r / 4, row r % 4) and column block h.
// Blocks a configuration does not have (GM or GN of 1) are skipped by constant conditions.

//! include gemm_vec4_io.wgsl

const_assert GM <= 2u && GN <= 2u;

// Two stages of tiles (double-buffered): a k-step's tiles go to the stage the previous step did not read, so
// one barrier per step suffices (the stage written was last read before the previous step's barrier).
// Measured on an H200 under wgpu-native: 5.87 against 6.32 ms single-buffered at 4096³.
var<workgroup> a_tile: array<vec4<f32>, 2u * A_STAGE>;
var<workgroup> b_tile: array<vec4<f32>, 2u * B_STAGE>;

struct Next {
  a: array<vec4<f32>, A_LOADS>,
  b: array<vec4<f32>, B_LOADS>,
}

fn prefetch(next: ptr<function, Next>, a_base: u32, b_base: u32, m0: u32, n0: u32, k0: u32, li: u32) {
  for (var i = 0u; i < A_LOADS; i++) {
    (*next).a[i] = fetch_a(a_base, m0, k0, li + i * THREADS);
  }
  for (var i = 0u; i < B_LOADS; i++) {
    (*next).b[i] = fetch_b(b_base, k0, n0, li + i * THREADS);
  }
}

fn stage(next: ptr<function, Next>, s: u32, li: u32) {
  for (var i = 0u; i < A_LOADS; i++) {
    store_a(s, li + i * THREADS, (*next).a[i]);
  }
  for (var i = 0u; i < B_LOADS; i++) {
    store_b(s, li + i * THREADS, (*next).b[i]);
  }
}

struct Block {
  zc: u32,  // C's batch index: slice s of batch z writes C[s * batch + z]
  m0: u32,
  n0: u32,
  a_base: u32,
  b_base: u32,
  k_begin: u32,  // the K slice [k_begin, k_end)
  k_end: u32,
}

// The output block of workgroup number `index` (valid when index < tiles_m * tiles_n * batch * splits).
fn block_of(index: u32) -> Block {
  let per_z = p.tiles_m * p.tiles_n;
  let block = index % (per_z * p.batch);
  let z = block / per_z;
  let s = index / (per_z * p.batch);
  let k_begin = s * p.k_part;
  return Block(s * p.batch + z, (block % per_z) / p.tiles_n * TILE_M, (block % p.tiles_n) * TILE_N,
               p.a_offset + z * p.a_strides.x, p.b_offset + z * p.b_strides.x, k_begin,
               min(k_steps(), k_begin + p.k_part));
}

@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let index = wid.x + wid.y * nwg.x;
  if (index >= p.tiles_m * p.tiles_n * p.batch * p.splits) {
    return;
  }
  let blk = block_of(index);
  var next: Next;
  prefetch(&next, blk.a_base, blk.b_base, blk.m0, blk.n0, blk.k_begin, li);
  let zero = vec4<f32>(0.0);
  var c00 = zero; var c10 = zero; var c20 = zero; var c30 = zero; var c40 = zero; var c50 = zero; var c60 = zero;
  var c70 = zero; var c01 = zero; var c11 = zero; var c21 = zero; var c31 = zero; var c41 = zero; var c51 = zero;
  var c61 = zero; var c71 = zero;
  stage(&next, 0u, li);
  workgroupBarrier();
  var s = 0u;  // the stage holding this k-step's tiles
  for (var k0 = blk.k_begin; k0 < blk.k_end; k0 += TILE_K) {
    let more = k0 + TILE_K < blk.k_end;
    if (more) {
      prefetch(&next, blk.a_base, blk.b_base, blk.m0, blk.n0, k0 + TILE_K, li);
    }
    let at = s * A_STAGE;
    let bt = s * B_STAGE;
    for (var k = 0u; k < TILE_K; k++) {
      let a0 = a_tile[at + k * A_ROW + lid.y];
      let b0 = b_tile[bt + k * B_ROW + lid.x];
      c00 = fma(vec4<f32>(a0.x), b0, c00);
      c10 = fma(vec4<f32>(a0.y), b0, c10);
      c20 = fma(vec4<f32>(a0.z), b0, c20);
      c30 = fma(vec4<f32>(a0.w), b0, c30);
      if (GN == 2u) {
        let b1 = b_tile[bt + k * B_ROW + WG_N + lid.x];
        c01 = fma(vec4<f32>(a0.x), b1, c01);
        c11 = fma(vec4<f32>(a0.y), b1, c11);
        c21 = fma(vec4<f32>(a0.z), b1, c21);
        c31 = fma(vec4<f32>(a0.w), b1, c31);
      }
      if (GM == 2u) {
        let a1 = a_tile[at + k * A_ROW + WG_M + lid.y];
        c40 = fma(vec4<f32>(a1.x), b0, c40);
        c50 = fma(vec4<f32>(a1.y), b0, c50);
        c60 = fma(vec4<f32>(a1.z), b0, c60);
        c70 = fma(vec4<f32>(a1.w), b0, c70);
        if (GN == 2u) {
          let b1 = b_tile[bt + k * B_ROW + WG_N + lid.x];
          c41 = fma(vec4<f32>(a1.x), b1, c41);
          c51 = fma(vec4<f32>(a1.y), b1, c51);
          c61 = fma(vec4<f32>(a1.z), b1, c61);
          c71 = fma(vec4<f32>(a1.w), b1, c71);
        }
      }
    }
    if (more) {
      s = 1u - s;
      stage(&next, s, li);
    }
    workgroupBarrier();
  }
  let r0 = blk.m0 + lid.y * 4u;
  let r1 = blk.m0 + (WG_M + lid.y) * 4u;
  let n0 = blk.n0 + lid.x * 4u;
  let n1 = blk.n0 + (WG_N + lid.x) * 4u;
  finish(blk.zc, r0, n0, c00, ACTIVATION);
  finish(blk.zc, r0 + 1u, n0, c10, ACTIVATION);
  finish(blk.zc, r0 + 2u, n0, c20, ACTIVATION);
  finish(blk.zc, r0 + 3u, n0, c30, ACTIVATION);
  if (GN == 2u) {
    finish(blk.zc, r0, n1, c01, ACTIVATION);
    finish(blk.zc, r0 + 1u, n1, c11, ACTIVATION);
    finish(blk.zc, r0 + 2u, n1, c21, ACTIVATION);
    finish(blk.zc, r0 + 3u, n1, c31, ACTIVATION);
  }
  if (GM == 2u) {
    finish(blk.zc, r1, n0, c40, ACTIVATION);
    finish(blk.zc, r1 + 1u, n0, c50, ACTIVATION);
    finish(blk.zc, r1 + 2u, n0, c60, ACTIVATION);
    finish(blk.zc, r1 + 3u, n0, c70, ACTIVATION);
    if (GN == 2u) {
      finish(blk.zc, r1, n1, c41, ACTIVATION);
      finish(blk.zc, r1 + 1u, n1, c51, ACTIVATION);
      finish(blk.zc, r1 + 2u, n1, c61, ACTIVATION);
      finish(blk.zc, r1 + 3u, n1, c71, ACTIVATION);
    }
  }
}
