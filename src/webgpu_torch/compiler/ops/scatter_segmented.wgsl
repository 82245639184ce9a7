// scatter_segmented.wgsl — the same result as scatter.wgsl, for scatters whose pull would scan long: the
// sources are grouped by the output element they reach (a counting sort into segments), then each output
// folds its own segment in source order. O(sources + outputs) work; still deterministic, because a segment
// is put back in source order before order matters (the counting sort's atomics place a segment's sources
// in arrival order, so each output sorts its own segment: cheap for the few sources a segment usually has).
//
// Sources are the positions s of a row-major source space `shape` (<= 8 dims). Source s reaches output
//   element strided(s, out_strides) + sum over index tensors t of position(idx_t[s]) * index_out_strides[t]
//   (out_strides: the contiguous output stride of the output dim each source dim runs along, 0 for the dim
//   the indices replace), or nothing when an index is out of range; its value is src at
//   src_offset + strided(s, src_strides), or the scalar word `value` without HAS_SRC. idx_t is read at
//   idx_offsets[t] + strided(s, idx_t_strides). Outputs: contiguous [outputs] over `out_shape`; `base`
//   (self) a strided view over out_shape.
// Passes (entry points), with counts [outputs + 1] zeroed by `clear`:
//   clear  counts[i] = 0
//   count  counts[reached(s)] += 1 for every source (integer atomics)
//   (prefix_sum.wgsl turns counts into starts: segment i is order[starts[i] .. starts[i + 1]])
//   place  order[starts[t] + --counts[t]] = s for every source s reaching t (counts end at zero)
//   fold   output i folds its segment: NONE takes its largest s (the last source), MAX and MIN any order,
//          the others sort it by s first (insertion sort, in place: this thread owns the segment)
// Reductions, types and index rules: scatter_fold.wgsl.
// Geometry: one thread per count, source or output (per_element.wgsl), over grids folded to fit 65,535
//   workgroups per dimension; threads past the end exit at once.

//! include per_element.wgsl
//! include bounded.wgsl
//! include strided.wgsl
//! include scatter_fold.wgsl

override NUM_INDICES: u32 = 1u;
override HAS_SRC: bool = true;

struct Params {
  sources: u32,
  outputs: u32,
  ndim: u32,
  out_ndim: u32,
  base_offset: u32,
  src_offset: u32,
  value: u32,
  idx_offsets: vec4<u32>,
  index_out_strides: vec4<u32>,
  index_sizes: vec4<u32>,
  shape: array<vec4<u32>, 2>,
  out_strides: array<vec4<u32>, 2>,
  src_strides: array<vec4<u32>, 2>,
  idx0_strides: array<vec4<u32>, 2>,
  idx1_strides: array<vec4<u32>, 2>,
  idx2_strides: array<vec4<u32>, 2>,
  out_shape: array<vec4<u32>, 2>,
  base_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> base: array<T>;
@group(0) @binding(1) var<storage, read> src: array<T>;
@group(0) @binding(2) var<storage, read> idx0: array<i32>;
@group(0) @binding(3) var<storage, read> idx1: array<i32>;
@group(0) @binding(4) var<storage, read> idx2: array<i32>;
@group(0) @binding(5) var<storage, read_write> out: array<T>;
@group(0) @binding(6) var<storage, read_write> counts: array<atomic<u32>>;
@group(0) @binding(7) var<storage, read> starts: array<u32>;
@group(0) @binding(8) var<storage, read_write> order: array<u32>;
@group(0) @binding(9) var<uniform> p: Params;

const NOWHERE: u32 = 0xffffffffu;

// The output element source s reaches, or NOWHERE.
fn reached(s: u32) -> u32 {
  var at = strided_offset(s, p.ndim, p.shape, p.out_strides);
  let pos0 = position(idx0[p.idx_offsets.x + strided_offset(s, p.ndim, p.shape, p.idx0_strides)], p.index_sizes.x);
  var missing = pos0 < 0;
  at += u32(max(pos0, 0)) * p.index_out_strides.x;
  if (NUM_INDICES > 1u) {
    let pos = position(idx1[p.idx_offsets.y + strided_offset(s, p.ndim, p.shape, p.idx1_strides)], p.index_sizes.y);
    missing = missing || pos < 0;
    at += u32(max(pos, 0)) * p.index_out_strides.y;
  }
  if (NUM_INDICES > 2u) {
    let pos = position(idx2[p.idx_offsets.z + strided_offset(s, p.ndim, p.shape, p.idx2_strides)], p.index_sizes.z);
    missing = missing || pos < 0;
    at += u32(max(pos, 0)) * p.index_out_strides.z;
  }
  return select(at, NOWHERE, missing);
}

fn value(s: u32) -> T {
  if (HAS_SRC) {
    return src[p.src_offset + strided_offset(s, p.ndim, p.shape, p.src_strides)];
  }
  return bitcast<T>(p.value);
}

@compute @workgroup_size(WORKGROUP)
fn clear(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i <= p.outputs) {
    atomicStore(&counts[i], 0u);
  }
}

@compute @workgroup_size(WORKGROUP)
fn count(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let s = element_index(wid, nwg, li);
  if (s >= p.sources) {
    return;
  }
  let t = reached(s);
  if (t != NOWHERE) {
    atomicAdd(&counts[t], 1u);
  }
}

@compute @workgroup_size(WORKGROUP)
fn place(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let s = element_index(wid, nwg, li);
  if (s >= p.sources) {
    return;
  }
  let t = reached(s);
  if (t != NOWHERE) {
    order[starts[t] + atomicSub(&counts[t], 1u) - 1u] = s;
  }
}

// Sorts order[lo .. hi) ascending.
fn sort_segment(lo: u32, hi: u32) {
  for (var j = lo + 1u; j < hi; j++) {
    let s = order[j];
    var k = j;
    while (k > lo && order[k - 1u] > s) {
      order[k] = order[k - 1u];
      k--;
    }
    order[k] = s;
  }
}

@compute @workgroup_size(WORKGROUP)
fn fold(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.outputs) {
    return;
  }
  var f = fold_start(base[p.base_offset + strided_offset(i, p.out_ndim, p.out_shape, p.base_strides)]);
  let lo = starts[i];
  let hi = bounded(starts[i + 1u], arrayLength(&order));  // a segment never runs past the order it sorts
  if (REDUCE == REDUCE_NONE) {
    var last = NOWHERE;
    for (var j = lo; j < hi; j++) {
      last = select(max(last, order[j]), order[j], last == NOWHERE);
    }
    if (last != NOWHERE) {
      f = fold_in(f, value(last));
    }
  } else {
    if (REDUCE != REDUCE_MAX && REDUCE != REDUCE_MIN) {
      sort_segment(lo, hi);
    }
    for (var j = lo; j < hi; j++) {
      f = fold_in(f, value(order[j]));
    }
  }
  out[i] = fold_end(f);
}
