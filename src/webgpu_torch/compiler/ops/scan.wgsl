// scan.wgsl — out[o, r] = x[o, 0] ⊕ ... ⊕ x[o, r] along one dim of a tensor: cumsum, cumprod, logcumsumexp,
// and cummax / cummin with the index of the element each value came from.
//
// Layout: as softmax.wgsl's: the dims other than the scan dim enumerate rows o (up to 8, their strides in
//   Params), the scan dim has N elements at element stride `stride`; the outputs are contiguous in the input's
//   shape, row o's element r at (o / inner * N + r) * inner + o % inner (`out_idx` only for cummax / cummin;
//   the others bind a sink there).
// Geometry: a row is cut into p.slices slices of p.slice_len elements (one, the whole row, unless the row is
//   split); ROW threads (a power of two <= 256) share a slice, a workgroup of 256 threads handles 256 / ROW
//   slices; the grid is folded to fit 65,535 workgroups per dimension. Thread t of a slice owns the
//   contiguous chunk [t·C, (t + 1)·C) of it, C = ceil(slice_len / ROW): it folds its chunk, the slice's
//   threads scan those totals in workgroup memory (Hillis–Steele, log2(ROW) steps), and each thread rewrites
//   its chunk from the total of the chunks before it. A row of a few elements gets one thread (ROW = 1),
//   which scans it in order.
// Split rows (scan.py: few long rows, such as a sampler's cumulative sums over a vocabulary; ROW =
//   WORKGROUP): entry `slice_totals` writes slice s of row o's total, pair o * p.slices + s of `totals` (the
//   value's bits, its index); `main` then starts slice s from the fold of the row's totals before it, taken
//   in order by one thread.
// ⊕ is associative on (value, index) pairs, the right operand always the later part of the row: max / min
//   pick by a total order (NaN above every number, a later NaN above an earlier one; equal numbers: the
//   later), which is torch's sequential rule (the running value is replaced by x when x is NaN or, while it is
//   no NaN, x >= it; <= for cummin); logcumsumexp adds in log space, NaN and ±inf as torch's.
// Types: InT, AccT (f32, or i32 for an integer result, which is then exact while it fits) and OutT by alias
//   substitution.

//! include bounded.wgsl
//! include activation.wgsl
//! include math.wgsl
//! include strided.wgsl

const OP_SUM: u32 = 0u;
const OP_PROD: u32 = 1u;
const OP_LOGSUMEXP: u32 = 2u;
const OP_MAX: u32 = 3u;
const OP_MIN: u32 = 4u;

alias InT = f32;
alias AccT = f32;
alias OutT = f32;

override OP: u32 = OP_SUM;
override ROW: u32 = 256u;

const WORKGROUP: u32 = 256u;
const NONE: u32 = 0xffffffffu;  // the index of the identity: no element yet

//! include row_params.wgsl

@group(0) @binding(0) var<storage, read> x: array<InT>;
@group(0) @binding(1) var<storage, read_write> out: array<OutT>;
@group(0) @binding(2) var<storage, read_write> out_idx: array<u32>;
@group(0) @binding(3) var<storage, read_write> slice_sums: array<u32>;  // split rows: each slice's total
@group(0) @binding(4) var<uniform> p: Params;

struct Acc {
  v: AccT,
  i: u32,  // max / min: the position of the element v came from (NONE for the identity)
}

var<workgroup> totals: array<AccT, WORKGROUP>;
var<workgroup> total_ids: array<u32, WORKGROUP>;

fn total(t: u32) -> Acc {
  return Acc(totals[t], total_ids[t]);
}

fn set_total(t: u32, a: Acc) {
  totals[t] = a.v;
  total_ids[t] = a.i;
}

fn identity() -> Acc {
  if (OP == OP_LOGSUMEXP) {
    return Acc(AccT(-inf_f32()), NONE);
  }
  return Acc(select(AccT(0), AccT(1), OP == OP_PROD), NONE);
}

// log(e^a + e^b): NaN if either is; ±inf where the larger is (so -inf with -inf stays -inf).
fn log_add_exp(a: f32, b: f32) -> f32 {
  if (is_nan(a) || is_nan(b)) {
    return a + b;
  }
  let hi = max(a, b);
  if (is_inf(hi)) {
    return hi;
  }
  return hi + log1p_f32(exp(min(a, b) - hi));
}

// a ⊕ b, b the later part of the row.
fn combine(a: Acc, b: Acc) -> Acc {
  switch OP {
    case OP_SUM: { return Acc(a.v + b.v, NONE); }
    case OP_PROD: { return Acc(a.v * b.v, NONE); }
    case OP_LOGSUMEXP: { return Acc(AccT(log_add_exp(f32(a.v), f32(b.v))), NONE); }
    default: {
      let wins = select(b.v <= a.v, b.v >= a.v, OP == OP_MAX);
      if (a.i == NONE || (b.i != NONE && (is_nan(f32(b.v)) || (!is_nan(f32(a.v)) && wins)))) {
        return b;
      }
      return a;
    }
  }
}

// Thread `lane`'s chunk of slice `at`: [start, end) along the row.
fn chunk_of(at: RowSlice, lane: u32) -> vec2<u32> {
  let chunk = (p.slice_len + ROW - 1u) / ROW;
  let start = at.first + lane * chunk;
  return vec2<u32>(start, select(start, min(start + chunk, at.last), start < at.last));
}

// Each thread's chunk folded, then the slice's totals scanned in workgroup memory: total(li) is the fold of
// this thread's chunk and those before it in the slice.
fn scan_chunks(at: RowSlice, li: u32, lane: u32) {
  let span = chunk_of(at, lane);
  var acc = identity();
  for (var r = span.x; r < span.y; r++) {
    acc = combine(acc, Acc(AccT(x[at.base + r * p.stride]), r));
  }
  set_total(li, acc);
  workgroupBarrier();
  for (var d = 1u; d < ROW; d *= 2u) {
    var before = identity();
    if (lane >= d) {
      before = total(li - d);
    }
    workgroupBarrier();
    set_total(li, combine(before, total(li)));
    workgroupBarrier();
  }
}

// Split rows: the fold of the row's slices before this one.
var<workgroup> slice_start: AccT;
var<workgroup> slice_start_id: u32;

@compute @workgroup_size(WORKGROUP)
fn slice_totals(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
                @builtin(local_invocation_index) li: u32) {
  let segment = wid.x + wid.y * nwg.x;
  let at = row_slice(segment);
  scan_chunks(at, li, li);
  if (at.live && li == ROW - 1u) {
    let t = total(li);
    slice_sums[2u * segment] = bitcast<u32>(t.v);
    slice_sums[2u * segment + 1u] = t.i;
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let lane = li % ROW;
  let segment = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let at = row_slice(segment);
  scan_chunks(at, li, lane);
  if (p.slices > 1u) {  // one slice a workgroup: its thread 0 folds the row's earlier slices, in order
    if (li == 0u) {
      var before = identity();
      for (var j = at.o * p.slices; at.live && j < segment; j++) {
        before = combine(before, Acc(bitcast<AccT>(slice_sums[2u * j]), slice_sums[2u * j + 1u]));
      }
      slice_start = before.v;
      slice_start_id = before.i;
    }
    workgroupBarrier();
  }
  var acc = identity();
  if (p.slices > 1u) {
    acc = Acc(slice_start, slice_start_id);
  }
  if (lane > 0u) {
    acc = combine(acc, total(li - 1u));
  }
  let out_at = (at.o / p.inner * p.n) * p.inner + at.o % p.inner;
  let span = chunk_of(at, lane);
  for (var r = span.x; r < span.y; r++) {
    acc = combine(acc, Acc(AccT(x[at.base + r * p.stride]), r));
    out[out_at + r * p.inner] = OutT(acc.v);
    if (OP == OP_MAX || OP == OP_MIN) {
      out_idx[out_at + r * p.inner] = acc.i;
    }
  }
}
