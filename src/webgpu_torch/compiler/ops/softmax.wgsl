// softmax.wgsl — softmax, log_softmax and the "safe" softmax (a row of only -inf gives 0, not NaN) along
// one dim of a tensor, numerically safe: exp(x - max) is never above 1.
//
// Layout: the input is a strided view; its other dims enumerate rows o (up to 7, with their strides in
//   Params, as reduce.wgsl's kept dims) and the softmax dim has N elements at element stride `stride`. The
//   output is contiguous in the input's shape: row o = (outer, inner) over the dims before and after the
//   softmax dim, element r at (outer * N + r) * inner + inner_index.
// Geometry: ROW threads (a power of two <= 256) share a row, a workgroup of 256 threads handles 256 / ROW
//   rows; the grid is folded to fit 65,535 workgroups per dimension. Three passes over the row: its max, the
//   sum of exp(x - max), then the result.

//! include bounded.wgsl
//! include row.wgsl
//! include strided.wgsl

const OP_SOFTMAX: u32 = 0u;
const OP_LOG_SOFTMAX: u32 = 1u;
const OP_SAFE_SOFTMAX: u32 = 2u;

override OP: u32 = OP_SOFTMAX;
override ROW: u32 = 256u;

const WORKGROUP: u32 = 256u;

//! include row_params.wgsl

// In, Out: how x and out are stored: f32, or f16 activations (precision="float16"); the row is computed in f32.
alias In = f32;
alias Out = f32;

@group(0) @binding(0) var<storage, read> x: array<In>;
@group(0) @binding(1) var<storage, read_write> out: array<Out>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let o = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let lane = li % ROW;
  let live = o < p.rows;
  let base = p.offset + strided_offset(select(0u, o, live), p.kept_ndim, p.kept_shape, p.kept_strides);
  let n = bounded(p.n, arrayLength(&x));

  var neg_inf_bits = 0xff800000u;  // a runtime value: WGSL rejects -inf in constant expressions
  let neg_inf = bitcast<f32>(neg_inf_bits);
  var m = neg_inf;
  for (var r = lane; live && r < n; r += ROW) {
    m = max(m, f32(x[base + r * p.stride]));
  }
  m = row_max(li, lane, m);
  let all_masked = m == neg_inf;
  let shift = select(m, 0.0, all_masked);  // keeps exp(x - shift) defined on a row of only -inf
  var s = 0.0;
  for (var r = lane; live && r < n; r += ROW) {
    s += exp(f32(x[base + r * p.stride]) - shift);
  }
  s = row_sum(li, lane, s);
  if (!live) {
    return;
  }
  let log_s = log(s);
  let at = (o / p.inner * p.n) * p.inner + o % p.inner;
  for (var r = lane; r < n; r += ROW) {
    let v = f32(x[base + r * p.stride]) - shift;
    var y = exp(v) / s;
    if (OP == OP_LOG_SOFTMAX) {
      y = v - log_s;
    } else if (OP == OP_SAFE_SOFTMAX && all_masked) {
      y = 0.0;
    }
    out[at + r * p.inner] = Out(y);
  }
}
