// gemm_vec4.wgsl — batched C = act(beta * bias + alpha * (A @ B)), float32, 16-byte loads (interface,
// layouts, tiling and loads: gemm_vec4_io.wgsl).
//
// Accumulators: a private array of GM*4*GN vec4s, indexed in loops with constant bounds. Tint's output keeps
// it in registers (the driver unrolls the loops); this is the faster style on Dawn. On wgpu-native, naga
// emits loops the driver does not unroll, so the array lives in local memory: gemm_vec4_regs.wgsl is used
// there instead.

//! include gemm_vec4_io.wgsl

@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let index = wid.x + wid.y * nwg.x;
  if (index >= p.tiles_m * p.tiles_n * p.batch) {
    return;
  }
  let blk = block_of(index);
  var next: Next;
  prefetch(&next, blk.a_base, blk.b_base, blk.m0, blk.n0, 0u, li);
  var acc: array<vec4<f32>, GM * 4u * GN>;
  for (var k0 = 0u; k0 < p.K; k0 += TILE_K) {
    stage(&next, li);
    workgroupBarrier();
    if (k0 + TILE_K < p.K) {
      prefetch(&next, blk.a_base, blk.b_base, blk.m0, blk.n0, k0 + TILE_K, li);
    }
    for (var k = 0u; k < TILE_K; k++) {
      var af: array<vec4<f32>, GM>;
      var bf: array<vec4<f32>, GN>;
      for (var g = 0u; g < GM; g++) {
        af[g] = a_tile[k * (TILE_M / 4u) + g * WG_M + lid.y];
      }
      for (var h = 0u; h < GN; h++) {
        bf[h] = b_tile[k * (TILE_N / 4u) + h * WG_N + lid.x];
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
      let m = blk.m0 + (g * WG_M + lid.y) * 4u + i;
      for (var h = 0u; h < GN; h++) {
        finish(blk.z, m, blk.n0 + (h * WG_N + lid.x) * 4u, acc[(g * 4u + i) * GN + h]);
      }
    }
  }
}
