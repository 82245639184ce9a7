// scan.wgsl — out[o, r] = x[o, 0] ⊕ ... ⊕ x[o, r]: cumsum and cumprod along one dim of a tensor.
//
// Layout: as softmax.wgsl's: the dims other than the scan dim enumerate rows o (up to 8, their strides in
//   Params), the scan dim has N elements at element stride `stride`; the output is contiguous in the input's
//   shape, row o's element r at (o / inner * N + r) * inner + o % inner.
// Geometry: ROW threads (a power of two <= 256) share a row, a workgroup of 256 threads handles 256 / ROW
//   rows; the grid is folded to fit 65,535 workgroups per dimension. Thread t of a row owns the contiguous
//   chunk [t·C, (t + 1)·C) of it, C = ceil(N / ROW): it folds its chunk, the row's threads scan those totals
//   in workgroup memory (Hillis–Steele, log2(ROW) steps), and each thread rewrites its chunk from the total
//   of the chunks before it. A row of a few elements gets one thread (ROW = 1), which scans it in order.
// Types: InT, AccT (f32, or i32 for an integer result, which is then exact while it fits) and OutT by alias
//   substitution.

//! include bounded.wgsl
//! include strided.wgsl

const OP_SUM: u32 = 0u;
const OP_PROD: u32 = 1u;

alias InT = f32;
alias AccT = f32;
alias OutT = f32;

override OP: u32 = OP_SUM;
override ROW: u32 = 256u;

const WORKGROUP: u32 = 256u;

//! include row_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<InT>;
@group(0) @binding(1) var<storage, read_write> out: array<OutT>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> totals: array<AccT, WORKGROUP>;

fn combine(a: AccT, b: AccT) -> AccT {
  return select(a + b, a * b, OP == OP_PROD);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let o = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let lane = li % ROW;
  let live = o < p.rows;
  let base = p.offset + strided_offset(select(0u, o, live), p.kept_ndim, p.kept_shape, p.kept_strides);
  let at = (o / p.inner * p.n) * p.inner + o % p.inner;
  let n = bounded(p.n, arrayLength(&x));
  let chunk = (n + ROW - 1u) / ROW;
  let start = lane * chunk;
  let end = select(0u, min(start + chunk, n), live);
  let identity = select(AccT(0), AccT(1), OP == OP_PROD);

  var acc = identity;
  for (var r = start; r < end; r++) {
    acc = combine(acc, AccT(x[base + r * p.stride]));
  }
  totals[li] = acc;
  workgroupBarrier();
  for (var d = 1u; d < ROW; d *= 2u) {
    var before = identity;
    if (lane >= d) {
      before = totals[li - d];
    }
    workgroupBarrier();
    totals[li] = combine(before, totals[li]);
    workgroupBarrier();
  }
  acc = identity;
  if (lane > 0u) {
    acc = totals[li - 1u];
  }
  for (var r = start; r < end; r++) {
    acc = combine(acc, AccT(x[base + r * p.stride]));
    out[at + r * p.inner] = OutT(acc);
  }
}
