// softmax.wgsl — softmax, log_softmax and the "safe" softmax (a row of only -inf gives 0, not NaN) along
// one dim of a tensor, numerically safe: exp(x - max) is never above 1.
//
// Layout: the input is a strided view; its other dims enumerate rows o (up to 7, with their strides in
//   Params, as reduce.wgsl's kept dims) and the softmax dim has N elements at element stride `stride`. The
//   output is contiguous in the input's shape: row o = (outer, inner) over the dims before and after the
//   softmax dim, element r at (outer * N + r) * inner + inner_index.
// Geometry: a row is cut into p.slices slices of p.slice_len elements (one, the whole row, unless the row is
//   split); ROW threads (a power of two <= 256) share a slice, a workgroup of 256 threads handles 256 / ROW
//   slices; the grid is folded to fit 65,535 workgroups per dimension. Whole rows (`main`, p.slices = 1):
//   three passes over the row: its max, the sum of exp(x - max), then the result.
// Split rows (softmax.py: few long rows, such as a sampler's over a vocabulary; ROW = WORKGROUP): entry
//   `slice_stats` takes slice s of row o to its max m_s and sum Σ exp(x - m_s) (0 where m_s is -inf), the
//   pair o * p.slices + s of `stats` (f32 bits); then `main`, a workgroup per slice, joins the row's pairs
//   into its max M and its sum Σ_s sum_s · exp(m_s - M) and writes its slice. A NaN, or a +inf (whose
//   x - max is NaN), in any slice makes the row's sum NaN, as whole.

//! include bounded.wgsl
//! include ieee.wgsl
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
@group(0) @binding(2) var<storage, read_write> stats: array<u32>;  // split rows: (max, sum) per slice
@group(0) @binding(3) var<uniform> p: Params;

// What exp(x - max) subtracts: the max, or 0 on a row (or slice) of only -inf, keeping it defined there.
fn shift_of(m: f32) -> f32 {
  return select(m, 0.0, m == -inf_f32());
}

// The max and the sum of exp(x - max) over elements [first, last) of the row at `base` (empty: -inf, 0).
fn fold_stats(base: u32, first: u32, last: u32, li: u32, lane: u32) -> vec2<f32> {
  var m = -inf_f32();
  for (var r = first + lane; r < last; r += ROW) {
    m = max(m, f32(x[base + r * p.stride]));
  }
  m = row_max(li, lane, m);
  let shift = shift_of(m);
  var s = 0.0;
  for (var r = first + lane; r < last; r += ROW) {
    s += exp(f32(x[base + r * p.stride]) - shift);
  }
  return vec2<f32>(m, row_sum(li, lane, s));
}

// Row o's max and sum from its slices' pairs (never more than `stats` holds: bounded.wgsl).
fn joined_stats(o: u32, li: u32, lane: u32, live: bool) -> vec2<f32> {
  let slices = select(0u, bounded(p.slices, arrayLength(&stats) / 2u), live);
  var m = -inf_f32();
  for (var j = lane; j < slices; j += ROW) {
    m = max(m, bitcast<f32>(stats[2u * (o * p.slices + j)]));
  }
  m = row_max(li, lane, m);
  let shift = shift_of(m);
  var s = 0.0;
  for (var j = lane; j < slices; j += ROW) {
    let at = 2u * (o * p.slices + j);
    s += bitcast<f32>(stats[at + 1u]) * exp(bitcast<f32>(stats[at]) - shift);
  }
  return vec2<f32>(m, row_sum(li, lane, s));
}

@compute @workgroup_size(WORKGROUP)
fn slice_stats(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) li: u32) {
  let segment = wid.x + wid.y * nwg.x;
  let at = row_slice(segment);
  let folded = fold_stats(at.base, at.first, at.last, li, li);
  if (at.live && li == 0u) {
    stats[2u * segment] = bitcast<u32>(folded.x);
    stats[2u * segment + 1u] = bitcast<u32>(folded.y);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let lane = li % ROW;
  let at = row_slice((wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW);
  var row: vec2<f32>;  // the row's max and sum of exp(x - max)
  if (p.slices == 1u) {
    row = fold_stats(at.base, at.first, at.last, li, lane);
  } else {
    row = joined_stats(at.o, li, lane, at.live);
  }
  let all_masked = row.x == -inf_f32();
  let shift = shift_of(row.x);
  let s = row.y;
  let log_s = log(s);
  let o = at.o;
  let out_at = (o / p.inner * p.n) * p.inner + o % p.inner;
  for (var r = at.first + lane; r < at.last; r += ROW) {
    let v = f32(x[at.base + r * p.stride]) - shift;
    var y = exp(v) / s;
    if (OP == OP_LOG_SOFTMAX) {
      y = v - log_s;
    } else if (OP == OP_SAFE_SOFTMAX && all_masked) {
      y = 0.0;
    }
    out[out_at + r * p.inner] = Out(y);
  }
}
