// gemm.wgsl — batched C = act(alpha * (A @ B) + beta * bias + residual) in float32, float32 accumulation.
//
// Layouts (element strides and offsets in Params; any stride may be 0, which broadcasts):
//   A[z, m, k] = a[a_offset + z*a_strides.x + m*a_strides.y + k*a_strides.z]
//   B[z, k, n] = b[b_offset + z*b_strides.x + k*b_strides.y + n*b_strides.z]
//   bias[z, m, n], residual[z, m, n] likewise (read only when HAS_BIAS, HAS_RESIDUAL)
//   C: contiguous [batch, M, N].
// So a transposed operand is read in place; A_K_CONTIGUOUS / B_N_CONTIGUOUS say which axis of each operand is
// the contiguous one, and pick the thread-to-element mapping that keeps global loads coalesced.
//
// Tiling: tiled_matmul.wgsl's main loop (TILE_M x TILE_N blocks, TILE_K k-steps, THREAD_M x THREAD_N register
//   tiles); this file supplies its tile loaders and the epilogue (gemm_params.wgsl's epilogue_sum, then the
//   activation).
// Geometry: blocks are numbered n-fastest, then m, then z, over a grid folded to fit 65,535 workgroups per
//   dimension; workgroups past the last block exit at once (uniformly, before any barrier).
// `act` is the fused activation epilogue (ACTIVATION, from activation.wgsl).

//! include activation.wgsl
//! include bounded.wgsl
//! include tiled_matmul.wgsl

override A_K_CONTIGUOUS: bool = true;
override B_N_CONTIGUOUS: bool = true;
override ACTIVATION: u32 = ACT_NONE;

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> a: array<A_T>;
@group(0) @binding(1) var<storage, read> b: array<B_T>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<C_T>;
@group(0) @binding(4) var<storage, read> residual: array<R_T>;
@group(0) @binding(5) var<uniform> p: Params;

// Element i of B as f32 (gemm_params.wgsl's B_T; with B_BF16 half of a u32 word, widened exactly).
fn b_at(i: u32) -> f32 {
  if (B_BF16) {
    let word = u32(b[i / 2u]);  // B_T is u32: the word itself
    return bitcast<f32>(select(word << 16u, word & 0xffff0000u, (i & 1u) == 1u));
  }
  return f32(b[i]);
}

fn load_a_tile(z: u32, m0: u32, k0: u32, li: u32) {
  let base = p.a_offset + z * p.a_strides.x;
  for (var e = li; e < TILE_M * TILE_K; e += THREADS) {
    var m = e % TILE_M;
    var k = e / TILE_M;
    if (A_K_CONTIGUOUS) {
      m = e / TILE_K;
      k = e % TILE_K;
    }
    var v = 0.0;
    if (m0 + m < p.M && k0 + k < p.K) {
      v = f32(a[base + (m0 + m) * p.a_strides.y + (k0 + k) * p.a_strides.z]);
    }
    a_tile[k * TILE_M + m] = v;
  }
}

fn load_b_tile(z: u32, k0: u32, n0: u32, li: u32) {
  let base = p.b_offset + z * p.b_strides.x;
  for (var e = li; e < TILE_N * TILE_K; e += THREADS) {
    var n = e / TILE_K;
    var k = e % TILE_K;
    if (B_N_CONTIGUOUS) {
      n = e % TILE_N;
      k = e / TILE_N;
    }
    var v = 0.0;
    if (k0 + k < p.K && n0 + n < p.N) {
      v = b_at(base + (k0 + k) * p.b_strides.y + (n0 + n) * p.b_strides.z);
    }
    b_tile[k * TILE_N + n] = v;
  }
}

fn store_c(z: u32, m: u32, n: u32, acc: f32) {
  c[(z * p.M + m) * p.N + n] = C_T(activate(epilogue_sum(z, m, n, acc), ACTIVATION, p.act_lo, p.act_hi));
}

@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  let per_z = p.tiles_m * p.tiles_n;
  if (block >= per_z * p.batch) {
    return;
  }
  let z = block / per_z;
  let m0 = (block % per_z) / p.tiles_n * TILE_M;
  let n0 = (block % p.tiles_n) * TILE_N;
  tiled_matmul(z, m0, n0, p.M, p.N, bounded(p.K, max(arrayLength(&a), arrayLength(&b))), lid, li);
}
