// bucketize.wgsl — searchsorted and bucketize: out[i] = the number of elements of value i's row of a sorted
// sequence that come before it: those < it (left), or <= it (RIGHT), found by a binary search (at most 32
// halvings, whatever Params say). The search halves as torch's does and steps past an element exactly where
// torch's does (NaN on either side: past it, tested on the bits), so a sequence with NaNs, which torch sorts
// last, gives torch's answers too.
//
// Layout: `seq` contiguous rows of n elements, row r of them at r · row_stride (row_stride = 0: one sequence
//   for every value); value i (contiguous `values`) searches row i / m. With SORTER, row position k holds
//   element seq[row start + sorter[row start + k]] (torch's sorter: the order that sorts each row).
// Types: T (f32, i32, or u32 for bool) by alias substitution, for the sequence and the values alike; the
//   result is i32 (int64 and int32 alike on the device).
// Geometry: one thread per value (per_element.wgsl).

//! include ieee.wgsl
//! include per_element.wgsl

alias T = f32;

override RIGHT: bool = false;
override SORTER: bool = false;

struct Params {
  numel: u32,
  n: u32,
  m: u32,
  row_stride: u32,
}

@group(0) @binding(0) var<storage, read> seq: array<T>;
@group(0) @binding(1) var<storage, read> sorter: array<i32>;
@group(0) @binding(2) var<storage, read> values: array<T>;
@group(0) @binding(3) var<storage, read_write> out: array<i32>;
@group(0) @binding(4) var<uniform> p: Params;

// Whether the search goes on past sequence element s for value v: torch's `!(s >= v)` (left) and `!(s > v)`
// (right), which a NaN on either side makes true.
fn before(s: T, v: T) -> bool {
  if (is_nan(f32(s)) || is_nan(f32(v))) {
    return true;
  }
  return select(s < v, s <= v, RIGHT);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let start = i / p.m * p.row_stride;
  let v = values[i];
  var lo = 0u;
  var hi = p.n;
  while (lo < hi) {
    let mid = lo + (hi - lo) / 2u;  // at most 32 halvings
    var at = start + mid;
    if (SORTER) {
      at = start + u32(sorter[at]);
    }
    if (before(seq[at], v)) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  out[i] = i32(lo);
}
