// gemm_vec4.wgsl — batched C = act(beta * bias + alpha * (A @ B)), float32, 16-byte loads (interface,
// layouts, loads: gemm_operands.wgsl; tiling: gemm_vec4_io.wgsl).
//
// Accumulators: a private array of GM*4*GN vec4s, indexed in loops with constant bounds. Tint's output keeps
// it in registers (the driver unrolls the loops); this is the faster style on Dawn. On wgpu-native, naga
// emits loops the driver does not unroll, so the array lives in local memory: gemm_vec4_regs.wgsl is used
// there instead.

//! include gemm_vec4_io.wgsl

// One stage of tiles, two barriers per k-step. Double-buffered (one barrier per step, as
// gemm_vec4_regs.wgsl) this loop measured slower on Dawn: 4.04 against 3.95 ms at 4096³ on an H200.
var<workgroup> a_tile: array<vec4<f32>, A_STAGE>;
var<workgroup> b_tile: array<vec4<f32>, B_STAGE>;

// The main loop is written out here rather than through helpers (a block struct, prefetch/stage functions
// taking the registers by pointer): that form measured 3.84 ms against this one's 3.17 ms at 4096³ on an
// H200 under Dawn.
@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let index = wid.x + wid.y * nwg.x;
  let per_z = p.tiles_m * p.tiles_n;
  if (index >= per_z * p.batch * p.splits) {
    return;
  }
  let block = index % (per_z * p.batch);
  let z = block / per_z;
  let zc = index / (per_z * p.batch) * p.batch + z;  // C's batch index: slice s writes C[s * batch + z]
  let m0 = (block % per_z) / p.tiles_n * TILE_M;
  let n0 = (block % p.tiles_n) * TILE_N;
  let a_base = p.a_offset + z * p.a_strides.x;
  let b_base = p.b_offset + z * p.b_strides.x;
  let k_begin = (zc / p.batch) * p.k_part;
  let k_end = min(k_steps(), k_begin + p.k_part);

  var a_next: array<vec4<f32>, A_LOADS>;
  var b_next: array<vec4<f32>, B_LOADS>;
  for (var i = 0u; i < A_LOADS; i++) {
    a_next[i] = fetch_a(a_base, m0, k_begin, li + i * THREADS);
  }
  for (var i = 0u; i < B_LOADS; i++) {
    b_next[i] = fetch_b(b_base, k_begin, n0, li + i * THREADS);
  }

  var acc: array<vec4<f32>, GM * 4u * GN>;
  for (var k0 = k_begin; k0 < k_end; k0 += TILE_K) {
    for (var i = 0u; i < A_LOADS; i++) {
      store_a(0u, li + i * THREADS, a_next[i]);
    }
    for (var i = 0u; i < B_LOADS; i++) {
      store_b(0u, li + i * THREADS, b_next[i]);
    }
    workgroupBarrier();
    if (k0 + TILE_K < k_end) {
      for (var i = 0u; i < A_LOADS; i++) {
        a_next[i] = fetch_a(a_base, m0, k0 + TILE_K, li + i * THREADS);
      }
      for (var i = 0u; i < B_LOADS; i++) {
        b_next[i] = fetch_b(b_base, k0 + TILE_K, n0, li + i * THREADS);
      }
    }
    for (var k = 0u; k < TILE_K; k++) {
      var af: array<vec4<f32>, GM>;
      var bf: array<vec4<f32>, GN>;
      for (var g = 0u; g < GM; g++) {
        af[g] = a_tile[k * A_ROW + g * WG_M + lid.y];
      }
      for (var h = 0u; h < GN; h++) {
        bf[h] = b_tile[k * B_ROW + h * WG_N + lid.x];
      }
      for (var g = 0u; g < GM; g++) {
        for (var i = 0u; i < 4u; i++) {
          let av = vec4<f32>(af[g][i]);
          for (var h = 0u; h < GN; h++) {
            acc[(g * 4u + i) * GN + h] = fma(av, bf[h], acc[(g * 4u + i) * GN + h]);
          }
        }
      }
    }
    workgroupBarrier();
  }

  for (var g = 0u; g < GM; g++) {
    for (var i = 0u; i < 4u; i++) {
      let m = m0 + (g * WG_M + lid.y) * 4u + i;
      for (var h = 0u; h < GN; h++) {
        finish(zc, m, n0 + (h * WG_N + lid.x) * 4u, acc[(g * 4u + i) * GN + h], stored_activation());
      }
    }
  }
  if (ACTIVATION != stored_activation()) {  // exp, erf or tanh: a pass of its own (gemm_operands.wgsl)
    for (var g = 0u; g < GM; g++) {
      for (var i = 0u; i < 4u; i++) {
        let m = m0 + (g * WG_M + lid.y) * 4u + i;
        for (var h = 0u; h < GN; h++) {
          activate_stored(zc, m, n0 + (h * WG_N + lid.x) * 4u);
        }
      }
    }
  }
}
