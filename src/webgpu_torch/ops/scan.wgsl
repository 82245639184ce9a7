// scan.wgsl — out[o, r] = x[o, 0] + ... + x[o, r]: cumsum along one dim of a tensor.
//
// Layout: as softmax.wgsl's: the dims other than the scan dim enumerate rows o (up to 7, their strides in
//   Params), the scan dim has N elements at element stride `stride`; the output is contiguous in the input's
//   shape, row o's element r at (o / inner * N + r) * inner + o % inner.
// Geometry: one thread per row, scanning it in order, 64 rows per workgroup, over a grid folded to fit
//   65,535 workgroups per dimension. Meant for the short rows models scan (positions from a mask), not long
//   ones: a row's N steps are serial.
// Types: InT, AccT (f32, or i32 for an integer result, which is then exact) and OutT by alias substitution.

//! include strided.wgsl

alias InT = f32;
alias AccT = f32;
alias OutT = f32;

const WORKGROUP: u32 = 64u;

//! include row_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<InT>;
@group(0) @binding(1) var<storage, read_write> out: array<OutT>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let o = gid.x + gid.y * nwg.x * WORKGROUP;
  if (o >= p.rows) {
    return;
  }
  let base = p.offset + strided_offset(o, p.kept_ndim, p.kept_shape, p.kept_strides);
  let at = (o / p.inner * p.n) * p.inner + o % p.inner;
  var acc = AccT(0);
  for (var r = 0u; r < p.n; r++) {
    acc += AccT(x[base + r * p.stride]);
    out[at + r * p.inner] = OutT(acc);
  }
}
