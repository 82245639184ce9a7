// scatter.wgsl — out = self with source values written, or reduced, into the positions their indices name,
// by pulling: each output element scans, in order, the `scan` source positions k that may reach it and folds
// in those whose indices all name it (scatter, scatter_add, scatter_reduce, index_put, masked_scatter). No
// thread writes another's element and no atomics are used, so results are deterministic and sums add in
// source order (CPU torch's). Cost: `scan` index reads per output element, so scatter.py takes it where scans
// are short and scatter_segmented.wgsl otherwise.
//
// Layout: out contiguous over self's shape (<= 8 dims); `base` (self), src and the index tensors are strided
//   views. Index tensor t < NUM_INDICES (idx0..idx2, i32: int64 travels as int32) targets output dim d_t: o's
//   coordinate along it is (i / coord_divs[t]) % coord_sizes[t]. For output element i (coordinates o) and
//   position k, index t is read at idx_offsets[t] + strided(o, idx_t_strides) + k * idx_scan_strides[t], the
//   source value at src_offset + strided(o, src_strides) + k * src_scan_stride (or is the scalar word `value`
//   without HAS_SRC). Strides along the indexed dims are 0: there o's coordinate is what the indices name.
//   Outputs at or beyond `bounds` along any dim have no sources (a scatter index smaller than self).
//   With MASK, idx0 is instead a bool mask viewed over o, scan is 1, and position 0 reaches o where the mask
//   is true (index_put by a bool mask); with RANKED too, idx1 holds o's rank among the true elements and the
//   value is source element src_offset + rank * src_scan_stride, if rank < src_count (masked_scatter).
// Reductions, types and index rules: scatter_fold.wgsl.
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include bounded.wgsl
//! include per_element.wgsl
//! include strided.wgsl
//! include scatter_fold.wgsl

override NUM_INDICES: u32 = 1u;
override HAS_SRC: bool = true;
override MASK: bool = false;
override RANKED: bool = false;

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
  for (var d = min(p.ndim, 8u); d > 0u; d--) {
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
  return position(v, n) == i32(c);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  var f = fold_start(base[p.base_offset + strided_offset(i, p.ndim, p.shape, p.base_strides)]);
  if (in_bounds(i)) {
    var coords = vec3<u32>(0u);
    for (var t = 0u; t < NUM_INDICES; t++) {
      coords[t] = (i / p.coord_divs[t]) % p.coord_sizes[t];
    }
    let at0 = p.idx_offsets.x + strided_offset(i, p.ndim, p.shape, p.idx0_strides);
    let at1 = p.idx_offsets.y + strided_offset(i, p.ndim, p.shape, p.idx1_strides);
    let at2 = p.idx_offsets.z + strided_offset(i, p.ndim, p.shape, p.idx2_strides);
    let at_src = p.src_offset + strided_offset(i, p.ndim, p.shape, p.src_strides);
    let scan = bounded(p.scan, max(arrayLength(&idx0), arrayLength(&src)));
    for (var k = 0u; k < scan; k++) {
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
      f = fold_in(f, v);
    }
  }
  out[i] = fold_end(f);
}
