// scatter_fold.wgsl — what a scatter does with the values that reach one output element, shared by the pull
// (scatter.wgsl) and segmented (scatter_segmented.wgsl) kernels. Not a kernel: kernels include it.
//
// Reduction (REDUCE): NONE — the last source wins; SUM, PROD, MAX, MIN, MEAN — self's value (with
//   INCLUDE_SELF) and every source folded in order, MEAN divided by their count (flooring for integers, as
//   torch does); an output no source reaches keeps self's value.
// Types: T by alias (f32, i32, or u32 for bool, whose sums and products are torch's logical or and and).
// Indices: an index value v names position v of a dim of n elements (negative v counts from the end with
//   WRAP_NEGATIVE); one outside the dim names nothing (the place a device-side error flag would be raised).

const REDUCE_NONE: u32 = 0u;
const REDUCE_SUM: u32 = 1u;
const REDUCE_PROD: u32 = 2u;
const REDUCE_MAX: u32 = 3u;
const REDUCE_MIN: u32 = 4u;
const REDUCE_MEAN: u32 = 5u;

alias T = f32;

override REDUCE: u32 = REDUCE_NONE;
override INCLUDE_SELF: bool = true;
override WRAP_NEGATIVE: bool = false;
override FLOOR_MEAN: bool = false;  // integer T: a mean rounds toward negative infinity
override SATURATE: bool = false;    // bool T: results are 0 or 1

// The position index value v names along a dim of n elements, or -1 for none.
fn position(v: i32, n: u32) -> i32 {
  let w = select(v, v + i32(n), WRAP_NEGATIVE && v < 0);
  return select(-1, w, w >= 0 && u32(w) < n);
}

struct Fold {
  acc: T,
  count: u32,  // values folded into acc (self's included)
}

fn fold_start(own: T) -> Fold {
  return Fold(own, select(0u, 1u, INCLUDE_SELF));
}

fn fold_in(f: Fold, v: T) -> Fold {
  var acc = v;
  if (f.count > 0u) {
    switch REDUCE {
      case REDUCE_SUM, REDUCE_MEAN: { acc = f.acc + v; }
      case REDUCE_PROD: { acc = f.acc * v; }
      case REDUCE_MAX: { acc = max(f.acc, v); }
      case REDUCE_MIN: { acc = min(f.acc, v); }
      default: {}
    }
  }
  return Fold(acc, f.count + 1u);
}

fn fold_end(f: Fold) -> T {
  var acc = f.acc;
  if (REDUCE == REDUCE_MEAN && f.count > 1u) {
    let c = T(f.count);
    let q = acc / c;
    acc = select(q, q - T(1), FLOOR_MEAN && q * c != acc && acc < T(0));
  }
  if (SATURATE) {
    acc = min(acc, T(1));
  }
  return acc;
}
