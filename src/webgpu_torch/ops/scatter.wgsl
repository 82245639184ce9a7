// scatter.wgsl — out = self with source values written, or reduced, into the positions their indices name:
// scatter (src or value), scatter_add, scatter_reduce and index_put, as one deterministic pull. Each output
// element scans, in order, the `scan` source positions k that may target it and folds in those whose indices
// all name it; no thread writes another's element and no atomics are used, so float sums are reproducible and
// add in source order (CPU torch's order). Cost: `scan` index reads per output element.
//
// Layout: out contiguous over self's shape (<= 8 dims); `base` (self), src and the index tensors are strided
//   views.
//   Index tensor t < NUM_INDICES (idx0..idx2, i32: int64 travels as int32) targets output dim d_t: o's
//   coordinate along it is (i / coord_divs[t]) % coord_sizes[t]. For output element i (coordinates o) and
//   position k, index t is read at idx_offsets[t] + strided(o, idx_t_strides) + k * idx_scan_strides[t], the
//   source value at src_offset + strided(o, src_strides) + k * src_scan_stride (or is the scalar word `value`
//   without HAS_SRC). Strides along the indexed dims are 0: there o's coordinate is what the indices name.
//   An index names position v of its dim (negative v counts from the end with WRAP_NEGATIVE); one outside its
//   dim names nothing (the place a device-side error flag would be raised). With MASK, idx0 is instead a bool
//   mask viewed over o, scan is 1, and position 0 targets o where the mask is true (index_put by a bool mask);
//   with RANKED too, idx1 holds o's rank among the true elements and the value is source element
//   src_offset + rank * src_scan_stride, if rank < src_count (masked_scatter).
//   Outputs at or beyond `bounds` along any dim have no sources (a scatter index smaller than self).
// Reduction (REDUCE): NONE — the last targeting position wins; SUM, PROD, MAX, MIN, MEAN — self's value (with
//   INCLUDE_SELF) and every targeting source folded in order, MEAN divided by their count (flooring for
//   integers, as torch does); an output no position targets keeps self's value.
// Types: T by alias (f32, i32, or u32 for bool, whose sums and products are torch's logical or and and).
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include per_element.wgsl
//! include strided.wgsl

const REDUCE_NONE: u32 = 0u;
const REDUCE_SUM: u32 = 1u;
const REDUCE_PROD: u32 = 2u;
const REDUCE_MAX: u32 = 3u;
const REDUCE_MIN: u32 = 4u;
const REDUCE_MEAN: u32 = 5u;

alias T = f32;

override REDUCE: u32 = REDUCE_NONE;
override INCLUDE_SELF: bool = true;
override NUM_INDICES: u32 = 1u;
override HAS_SRC: bool = true;
override WRAP_NEGATIVE: bool = false;
override MASK: bool = false;
override RANKED: bool = false;
override FLOOR_MEAN: bool = false;  // integer T: a mean rounds toward negative infinity
override SATURATE: bool = false;    // bool T: results are 0 or 1

struct Params {
  numel: u32,
  ndim: u32,
  scan: u32,
  base_offset: u32,
  src_offset: u32,
  src_scan_stride: u32,
  src_count: u32,
  value: u32,
  idx_offsets: vec4<u32>,
  idx_scan_strides: vec4<u32>,
  coord_divs: vec4<u32>,
  coord_sizes: vec4<u32>,
  shape: array<vec4<u32>, 2>,
  bounds: array<vec4<u32>, 2>,
  base_strides: array<vec4<u32>, 2>,
  src_strides: array<vec4<u32>, 2>,
  idx0_strides: array<vec4<u32>, 2>,
  idx1_strides: array<vec4<u32>, 2>,
  idx2_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> base: array<T>;
@group(0) @binding(1) var<storage, read> src: array<T>;
@group(0) @binding(2) var<storage, read> idx0: array<i32>;
@group(0) @binding(3) var<storage, read> idx1: array<i32>;
@group(0) @binding(4) var<storage, read> idx2: array<i32>;
@group(0) @binding(5) var<storage, read_write> out: array<T>;
@group(0) @binding(6) var<uniform> p: Params;

fn in_bounds(i: u32) -> bool {
  var rest = i;
  for (var d = p.ndim; d > 0u; d--) {
    let k = d - 1u;
    let n = p.shape[k / 4u][k % 4u];
    if (rest % n >= p.bounds[k / 4u][k % 4u]) {
      return false;
    }
    rest /= n;
  }
  return true;
}

// Whether index value v names coordinate c of a dim of n elements.
fn names(v: i32, c: u32, n: u32) -> bool {
  let w = select(v, v + i32(n), WRAP_NEGATIVE && v < 0);
  return w >= 0 && u32(w) == c && c < n;
}

fn combine(acc: T, v: T) -> T {
  switch REDUCE {
    case REDUCE_SUM, REDUCE_MEAN: { return acc + v; }
    case REDUCE_PROD: { return acc * v; }
    case REDUCE_MAX: { return max(acc, v); }
    case REDUCE_MIN: { return min(acc, v); }
    default: { return v; }
  }
}

fn mean(acc: T, count: u32) -> T {
  let c = T(count);
  var q = acc / c;
  if (FLOOR_MEAN && q * c != acc && acc < T(0)) {
    q -= T(1);
  }
  return q;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  var acc = base[p.base_offset + strided_offset(i, p.ndim, p.shape, p.base_strides)];
  var count = select(0u, 1u, INCLUDE_SELF);
  if (in_bounds(i)) {
    var coords = vec3<u32>(0u);
    for (var t = 0u; t < NUM_INDICES; t++) {
      coords[t] = (i / p.coord_divs[t]) % p.coord_sizes[t];
    }
    let at0 = p.idx_offsets.x + strided_offset(i, p.ndim, p.shape, p.idx0_strides);
    let at1 = p.idx_offsets.y + strided_offset(i, p.ndim, p.shape, p.idx1_strides);
    let at2 = p.idx_offsets.z + strided_offset(i, p.ndim, p.shape, p.idx2_strides);
    let at_src = p.src_offset + strided_offset(i, p.ndim, p.shape, p.src_strides);
    for (var k = 0u; k < p.scan; k++) {
      var hit: bool;
      if (MASK) {
        hit = idx0[at0] != 0 && (!RANKED || u32(idx1[at1]) < p.src_count);
      } else {
        hit = names(idx0[at0 + k * p.idx_scan_strides.x], coords.x, p.coord_sizes.x);
        if (NUM_INDICES > 1u) {
          hit = hit && names(idx1[at1 + k * p.idx_scan_strides.y], coords.y, p.coord_sizes.y);
        }
        if (NUM_INDICES > 2u) {
          hit = hit && names(idx2[at2 + k * p.idx_scan_strides.z], coords.z, p.coord_sizes.z);
        }
      }
      if (!hit) {
        continue;
      }
      var v = bitcast<T>(p.value);
      if (RANKED) {
        v = src[p.src_offset + u32(idx1[at1]) * p.src_scan_stride];
      } else if (HAS_SRC) {
        v = src[at_src + k * p.src_scan_stride];
      }
      acc = select(combine(acc, v), v, count == 0u);
      count += 1u;
    }
  }
  if (REDUCE == REDUCE_MEAN && count > 1u) {
    acc = mean(acc, count);
  }
  if (SATURATE) {
    acc = min(acc, T(1));
  }
  out[i] = acc;
}
