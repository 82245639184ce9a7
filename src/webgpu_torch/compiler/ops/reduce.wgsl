// reduce.wgsl — out[o] = reduce_r x[o, r] over some dims of a tensor: sum, mean, prod, max, min (with the index
// of the winner: argmax, argmin, max.dim, min.dim), any, all, vector norms (of every order p),
// var / std (with the mean), logsumexp.
//
// Layout: the input is a strided view whose dims split into kept dims (enumerating o; the outputs are
//   contiguous over them) and reduced dims (enumerating r, R = reduce_size elements per output), up to 8 of
//   each, each with its element stride in Params. `out` receives the value (under WRITE_OUT) and `aux` the
//   second result (under WRITE_AUX): the winner's r for max / min, a flat index over the reduced dims, or the
//   mean for var / std. An output a node does not need is bound to a placeholder and never written.
// Geometry: ROW threads (a power of two, <= 256) reduce one output element; a workgroup of 256 threads
//   handles 256 / ROW outputs; the grid is folded to fit 65,535 workgroups per dimension. A pass over a row
//   (reduce_row) has each thread fold a strided share of it, then the row's threads combine in workgroup
//   memory by halving. Most ops take one pass; var / std take three (max |x|, the mean, the squared
//   deviations), logsumexp and the p-norm two (the max, the sum of exponentials; max or min |x|, the sum of
//   powers).
// Semantics are torch's: max and min return NaN where the row has one, with the index of the first NaN; ties
//   go to the smallest index; any / all count NaN as true; var / std scale the row by a power of two near
//   max |x| before squaring, so they stay finite wherever the result is (std of values near 1e30); the p-norm
//   divides by a power of two near max |x| (p > 0) or min |x| (p < 0), so no power overflows, and is that
//   extreme itself where it is NaN, ±inf or 0; logsumexp subtracts the max (0 where it is ±inf). Norms of
//   ord ±inf are max / min |x| (NaN wins), of ord 0 the count of nonzeros.
// Split rows (reduce.py's `split_slices`: few long rows of a single-pass op, as a GPU's greedy argmax over a
//   vocabulary): entry `split` folds slice s of row o (p.slices slices of ceil(R / p.slices) elements, a
//   workgroup each, ROW = WORKGROUP) into pair o * p.slices + s of `out`, bound as u32 words (OutT = u32): the
//   fold's bits, then its index in the row; entry `combine` folds each row's pairs, bound as x (InT = u32), in
//   slice order, into the row's results, as `main` writes them. Ties and NaN resolve as in one pass: a slice
//   keeps its first winner, and the first slice holding the row's winner holds its first occurrence.
// Types: InT (input), AccT (accumulation: f32 for float results, i32 for integer ones, so an integer sum or a
//   count of a mask is exact; u32 for bool max / min / any / all), OutT and AuxT are set by alias substitution.

//! include bounded.wgsl
//! include ieee.wgsl
//! include strided.wgsl

const OP_SUM: u32 = 0u;
const OP_MEAN: u32 = 1u;
const OP_PROD: u32 = 2u;
const OP_MAX: u32 = 3u;
const OP_MIN: u32 = 4u;
const OP_ANY: u32 = 5u;
const OP_ALL: u32 = 6u;
const OP_NORM2: u32 = 7u;      // sqrt(sum x²): linalg_vector_norm with ord 2
const OP_VAR: u32 = 8u;        // sum (x - mean)² / max(R - correction, 0)
const OP_STD: u32 = 9u;        // sqrt of it
const OP_LOGSUMEXP: u32 = 10u;
const OP_NORM1: u32 = 11u;      // sum |x|
const OP_NORM_INF: u32 = 12u;   // max |x|
const OP_NORM_NEG_INF: u32 = 13u;  // min |x|
const OP_NORM0: u32 = 14u;      // the count of x != 0
const OP_NORM_P: u32 = 15u;     // (sum |x|^p)^(1/p), p = Params.ord (not 0, ±inf)

// How a pass folds its terms, and which term of an element it folds.
const K_SUM: u32 = 0u;
const K_PROD: u32 = 1u;
const K_MAX: u32 = 2u;
const K_MIN: u32 = 3u;
const E_VALUE: u32 = 0u;       // x
const E_TRUTH: u32 = 1u;       // x != 0 (NaN is true)
const E_SQUARE: u32 = 2u;      // x²
const E_ABS: u32 = 3u;         // |x|
const E_SCALED: u32 = 4u;      // x·s
const E_DEVIATION: u32 = 5u;   // (x·s - c)²
const E_EXP: u32 = 6u;         // exp(x - c)
const E_POWER: u32 = 7u;       // (|x| / s)^c, 0 where |x| / s is 0 or inf (c < 0 there)

const EMPTY: u32 = 0xffffffffu;  // the index of a lane that has no element

alias InT = f32;
alias AccT = f32;
alias OutT = f32;
alias AuxT = i32;

override OP: u32 = OP_SUM;
override ROW: u32 = 256u;
override WRITE_OUT: bool = true;
override WRITE_AUX: bool = false;

const WORKGROUP: u32 = 256u;

struct Params {
  num_out: u32,
  reduce_size: u32,
  kept_ndim: u32,
  red_ndim: u32,
  offset: u32,
  correction: f32,
  ord: f32,
  slices: u32,  // split rows only: slices per row
  kept_shape: array<vec4<u32>, 2>,
  kept_strides: array<vec4<u32>, 2>,
  red_shape: array<vec4<u32>, 2>,
  red_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<InT>;
@group(0) @binding(1) var<storage, read_write> out: array<OutT>;
@group(0) @binding(2) var<storage, read_write> aux: array<AuxT>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> vals: array<AccT, WORKGROUP>;
var<workgroup> idxs: array<u32, WORKGROUP>;

struct Partial {
  v: AccT,
  i: u32,  // for max / min: the index of v in its row, EMPTY for none
}

fn term(what: u32, v: InT, c: f32, s: f32) -> AccT {
  switch what {
    case E_TRUTH: { return AccT(v != InT(0) || is_nan(f32(v))); }
    case E_SQUARE: { return AccT(v * v); }
    case E_ABS: { return AccT(abs(v)); }
    case E_SCALED: { return AccT(f32(v) * s); }
    case E_DEVIATION: {
      let d = f32(v) * s - c;
      return AccT(d * d);
    }
    case E_EXP: { return AccT(exp(f32(v) - c)); }
    case E_POWER: {
      let a = abs(f32(v)) / s;
      return AccT(select(pow(a, c), 0.0, a == 0.0 || is_inf(a)));  // pow is undefined there in WGSL
    }
    default: { return AccT(v); }
  }
}

// The power of two at or below m > 0 (1 for a subnormal m): dividing by it is exact and leaves m in [1, 2).
fn pow2_floor(m: f32) -> f32 {
  let e = bitcast<u32>(m) & 0x7f800000u;
  return select(bitcast<f32>(e), 1.0, e == 0u);
}

// Whether (v, i) beats (w, j) for max (or min): NaN beats every number, as in torch; ties (NaN and NaN too)
// go to the smaller index; an empty lane never wins.
fn wins(kind: u32, v: AccT, i: u32, w: AccT, j: u32) -> bool {
  if (i == EMPTY || j == EMPTY) {
    return j == EMPTY && i != EMPTY;
  }
  let v_nan = is_nan(f32(v));
  let w_nan = is_nan(f32(w));
  if (v_nan || w_nan) {
    return v_nan && (!w_nan || i < j);
  }
  if (v == w) {
    return i < j;
  }
  return (v > w) == (kind == K_MAX);
}

// What folding nothing gives: 0, 1 for a product, an empty lane for max / min.
fn identity(kind: u32) -> Partial {
  return Partial(select(AccT(0), AccT(1), kind == K_PROD), select(0u, EMPTY, kind >= K_MAX));
}

fn fold(kind: u32, a: Partial, b: Partial) -> Partial {
  if (kind == K_SUM) {
    return Partial(a.v + b.v, 0u);
  }
  if (kind == K_PROD) {
    return Partial(a.v * b.v, 0u);
  }
  if (wins(kind, b.v, b.i, a.v, a.i)) {
    return b;
  }
  return a;
}

// Elements [span.x, span.y) of the row at `base` folded: every thread of the workgroup calls it (it holds
// barriers); the result reaches all of the row's threads. c and s parametrise the term (E_SCALED,
// E_DEVIATION, E_EXP).
fn reduce_row(kind: u32, what: u32, base: u32, span: vec2<u32>, li: u32, lane: u32, c: f32, s: f32) -> Partial {
  var acc = identity(kind);
  let end = bounded(span.y, arrayLength(&x));
  for (var r = span.x + lane; r < end; r += ROW) {
    let t = Partial(term(what, x[base + strided_offset(r, p.red_ndim, p.red_shape, p.red_strides)], c, s), r);
    acc = fold(kind, acc, t);
  }
  return fold_lanes(kind, acc, li, lane);
}

// The row's ROW lanes' partials folded, in workgroup memory by halving; the result reaches every lane.
fn fold_lanes(kind: u32, acc: Partial, li: u32, lane: u32) -> Partial {
  workgroupBarrier();  // the previous pass's readers are done with vals and idxs
  vals[li] = acc.v;
  idxs[li] = acc.i;
  workgroupBarrier();
  for (var half = ROW / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      let merged = fold(kind, Partial(vals[li], idxs[li]), Partial(vals[li + half], idxs[li + half]));
      vals[li] = merged.v;
      idxs[li] = merged.i;
    }
    workgroupBarrier();
  }
  return Partial(vals[li - lane], idxs[li - lane]);
}

// The whole of a live row, nothing of another.
fn whole_row(live: bool) -> vec2<u32> {
  return select(vec2<u32>(0u), vec2<u32>(0u, p.reduce_size), live);
}

// (fold, term) of an op that takes one pass: all but var / std, logsumexp and the p-norm.
fn single_pass(op: u32) -> vec2<u32> {
  switch op {
    case OP_PROD: { return vec2<u32>(K_PROD, E_VALUE); }
    case OP_MAX: { return vec2<u32>(K_MAX, E_VALUE); }
    case OP_MIN: { return vec2<u32>(K_MIN, E_VALUE); }
    case OP_ANY: { return vec2<u32>(K_MAX, E_TRUTH); }
    case OP_ALL: { return vec2<u32>(K_MIN, E_TRUTH); }
    case OP_NORM2: { return vec2<u32>(K_SUM, E_SQUARE); }
    case OP_NORM1: { return vec2<u32>(K_SUM, E_ABS); }
    case OP_NORM_INF: { return vec2<u32>(K_MAX, E_ABS); }
    case OP_NORM_NEG_INF: { return vec2<u32>(K_MIN, E_ABS); }
    case OP_NORM0: { return vec2<u32>(K_SUM, E_TRUTH); }
    default: { return vec2<u32>(K_SUM, E_VALUE); }
  }
}

// Output o of a single-pass op from its row's fold over n elements.
fn write_single(o: u32, result: Partial, n: f32) {
  if (WRITE_OUT) {
    switch OP {
      case OP_MEAN: { out[o] = OutT(f32(result.v) / n); }
      case OP_NORM2: { out[o] = OutT(sqrt(f32(result.v))); }
      default: { out[o] = OutT(result.v); }
    }
  }
  if (WRITE_AUX) {
    aux[o] = AuxT(result.i);
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let o = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let lane = li % ROW;
  let live = o < p.num_out;
  let base = p.offset + strided_offset(select(0u, o, live), p.kept_ndim, p.kept_shape, p.kept_strides);
  let n = f32(p.reduce_size);

  var value: f32;
  var second: f32;
  var result: Partial;
  if (OP == OP_VAR || OP == OP_STD) {
    let row = whole_row(live);
    let scale = power_of_two_scale(f32(reduce_row(K_MAX, E_ABS, base, row, li, lane, 0.0, 1.0).v));
    let mean_scaled = f32(reduce_row(K_SUM, E_SCALED, base, row, li, lane, 0.0, 1.0 / scale).v) / n;
    let m2 = f32(reduce_row(K_SUM, E_DEVIATION, base, row, li, lane, mean_scaled, 1.0 / scale).v);
    let q = m2 / max(n - p.correction, 0.0);
    value = select(q * scale * scale, sqrt(q) * scale, OP == OP_STD);
    second = mean_scaled * scale;
  } else if (OP == OP_LOGSUMEXP) {
    let m = f32(reduce_row(K_MAX, E_VALUE, base, whole_row(live), li, lane, 0.0, 1.0).v);
    let shift = select(m, 0.0, is_inf(m));  // a row of -inf gives -inf, one with +inf gives +inf
    value = log(f32(reduce_row(K_SUM, E_EXP, base, whole_row(live), li, lane, shift, 1.0).v)) + shift;
  } else if (OP == OP_NORM_P) {
    let row = whole_row(live);
    let m = f32(reduce_row(select(K_MIN, K_MAX, p.ord > 0.0), E_ABS, base, row, li, lane, 0.0, 1.0).v);
    let scale = pow2_floor(m);
    let total = f32(reduce_row(K_SUM, E_POWER, base, row, li, lane, p.ord, scale).v);  // >= 1 term near 1
    value = select(pow(total, 1.0 / p.ord) * scale, m, is_nan(m) || is_inf(m) || m == 0.0);
  } else {
    let fold_term = single_pass(OP);
    result = reduce_row(fold_term.x, fold_term.y, base, whole_row(live), li, lane, 0.0, 1.0);
  }
  if (!live || lane != 0u) {
    return;
  }
  if (OP == OP_VAR || OP == OP_STD || OP == OP_LOGSUMEXP || OP == OP_NORM_P) {
    if (WRITE_OUT) {
      out[o] = OutT(value);
    }
    if (WRITE_AUX) {
      aux[o] = AuxT(second);
    }
    return;
  }
  write_single(o, result, n);
}

@compute @workgroup_size(WORKGROUP)
fn split(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;  // o * p.slices + s
  let live = block < p.num_out * p.slices;
  let o = select(0u, block / p.slices, live);
  let len = (p.reduce_size + p.slices - 1u) / p.slices;
  let first = (block % p.slices) * len;
  let span = select(vec2<u32>(0u), vec2<u32>(first, min(first + len, p.reduce_size)), live);
  let base = p.offset + strided_offset(o, p.kept_ndim, p.kept_shape, p.kept_strides);
  let fold_term = single_pass(OP);
  let result = reduce_row(fold_term.x, fold_term.y, base, span, li, li, 0.0, 1.0);
  if (live && li == 0u) {
    out[2u * block] = OutT(bitcast<u32>(result.v));
    out[2u * block + 1u] = OutT(result.i);
  }
}

@compute @workgroup_size(WORKGROUP)
fn combine(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) li: u32) {
  let o = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let lane = li % ROW;
  let live = o < p.num_out;
  let kind = single_pass(OP).x;
  var acc = identity(kind);
  let slices = select(0u, bounded(p.slices, arrayLength(&x) / 2u), live);
  for (var j = lane; j < slices; j += ROW) {
    let at = 2u * (o * p.slices + j);
    acc = fold(kind, acc, Partial(bitcast<AccT>(u32(x[at])), u32(x[at + 1u])));
  }
  let result = fold_lanes(kind, acc, li, lane);
  if (live && lane == 0u) {
    write_single(o, result, f32(p.reduce_size));
  }
}
