// gemm_split_sum.wgsl — the last dispatch of a GEMM whose K was split (or, among the tuned candidates, not):
// C[z, m, n] = act(sum over s < splits of P[s, z, m, n] + beta * bias[z, m, n] + residual[z, m, n]).
//
// Layout: `c` holds the slices P[s] the tiled kernel wrote (alpha already applied), slice s at element offset
//   s * batch * M * N; C is slice 0, updated in place: each element is read and then written by one thread,
//   so the tiled kernel's slice 0 needs no buffer of its own. bias and residual as in gemm_params.wgsl.
// Geometry: one thread per output element (per_element.wgsl).

//! include activation.wgsl
//! include bounded.wgsl
//! include per_element.wgsl

override ACTIVATION: u32 = ACT_NONE;

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> bias: array<f32>;
@group(0) @binding(1) var<storage, read_write> c: array<f32>;
@group(0) @binding(2) var<storage, read> residual: array<R_T>;
@group(0) @binding(3) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  let total = p.batch * p.M * p.N;
  if (i >= total) {
    return;
  }
  var acc = 0.0;
  let splits = bounded(p.splits, arrayLength(&c));
  for (var s = 0u; s < splits; s++) {
    acc += c[s * total + i];
  }
  let plane = p.M * p.N;
  c[i] = activate(epilogue_sum(i / plane, (i % plane) / p.N, i % p.N, acc), ACTIVATION, p.act_lo, p.act_hi);
}
