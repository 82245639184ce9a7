// indexing.wgsl — gathers and their mirror, over 32-bit words (f32, i32 and bool-as-u32 alike):
//   main     out[o] = src[direct(o) + sum_t wrap_t(idx_t[o]) * index_stride_t]: embedding, index_select, gather
//            and index.Tensor.
//   scatter  out[direct(o) + sum_t wrap_t(idx_t[o]) * index_stride_t] = src[values(o)]: index_put written in
//            place over its input (a state's update: a KV cache's rows at a position), one thread per value,
//            so a call costs what it writes, not the whole tensor. Duplicate positions: which value lands is
//            unspecified (as torch's index_put_ without accumulate says).
// A float16 or bfloat16 model's embedding table is read in its 16 bits and each element widened to f32's word:
// Src = f16 (SRC_FLOAT; the kernel then requires shader-f16, and its fallback reads the table widened to f32),
// or SRC_BF16 (Src = u32 words of two bfloat16s, the lower half first: shifted into an f32's high half).
//
// Layout: o runs row-major over `shape` (up to 8 dims): main's contiguous output, scatter's values. The indexed
//   tensor (main's src, scatter's out) is addressed at table_offset plus, per dim of `shape`, o's coordinate
//   times table_strides (0 for dims that an index supplies). Each of the NUM_INDICES (<= 3) index tensors
//   idx0..idx2 (i32: int64 travels as int32) is a strided view broadcast to `shape`; its value selects along
//   a dim of the indexed tensor of `index_sizes[t]` elements at `index_strides[t]`. scatter reads its value
//   o at values_offset + strided(o, values_strides). With WRAP_NEGATIVE (index.Tensor and index_put, as
//   Python indexing) -1 is the last; without it (gather, index_select, embedding, where torch raises) a
//   negative index is out of range. An index outside its dim sets word `check` of `status` (the runtime then
//   raises IndexError naming the node: docs/artifact.md, Checks); main writes `fill` (NaN's bits for float, 0
//   otherwise) and scatter writes nothing.
//   With WINDOWED, `src` holds only rows [window_lo, window_hi) of index 0's source dim (a weight over the
//   binding limit, split into chunks, one dispatch per chunk): other rows are another dispatch's to write.
// Geometry: one thread per element of `shape`, 256 per workgroup, over a grid folded to fit 65,535 workgroups
//   per dimension; threads past `numel` exit at once.

//! include strided.wgsl

alias Src = u32;
const SRC_FLOAT: bool = false;  // Src is a float type (f16; f32 in the fallback): the word is f32(x)'s bits
const SRC_BF16: bool = false;

override NUM_INDICES: u32 = 1u;
override WINDOWED: bool = false;
override WRAP_NEGATIVE: bool = true;

const WORKGROUP: u32 = 256u;

struct Params {
  numel: u32,
  ndim: u32,
  table_offset: u32,
  values_offset: u32,
  fill: u32,
  window_lo: u32,
  window_hi: u32,
  check: u32,
  idx_offsets: vec4<u32>,
  index_strides: vec4<u32>,
  index_sizes: vec4<u32>,
  shape: array<vec4<u32>, 2>,
  table_strides: array<vec4<u32>, 2>,
  values_strides: array<vec4<u32>, 2>,
  idx0_strides: array<vec4<u32>, 2>,
  idx1_strides: array<vec4<u32>, 2>,
  idx2_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> src: array<Src>;
@group(0) @binding(1) var<storage, read> idx0: array<i32>;
@group(0) @binding(2) var<storage, read> idx1: array<i32>;
@group(0) @binding(3) var<storage, read> idx2: array<i32>;
@group(0) @binding(4) var<storage, read_write> out: array<u32>;
@group(0) @binding(5) var<storage, read_write> status: array<u32>;
@group(0) @binding(6) var<uniform> p: Params;

// Source element `at` as a 32-bit word of the output.
fn word(at: u32) -> u32 {
  if (SRC_BF16) {
    let pair = u32(src[at / 2u]);  // Src is u32: the word itself
    return select(pair << 16u, pair & 0xffff0000u, (at & 1u) == 1u);
  }
  if (SRC_FLOAT) {
    return bitcast<u32>(f32(src[at]));
  }
  return u32(src[at]);
}

// Index tensor t's value as a position in [0, index_sizes[t]), or -1 when out of range.
fn wrapped(t: u32, value: i32) -> i32 {
  let n = i32(p.index_sizes[t]);
  let v = select(value, value + n, WRAP_NEGATIVE && value < 0);
  return select(v, -1, v < 0 || v >= n);
}

// The indices of element i as the offset, in the indexed tensor, of what they select; -1 when any is out of
// range (then the check is set).
fn indexed(i: u32) -> i32 {
  var rows = array<i32, 3>(0, 0, 0);
  rows[0] = wrapped(0u, idx0[p.idx_offsets.x + strided_offset(i, p.ndim, p.shape, p.idx0_strides)]);
  if (NUM_INDICES > 1u) {
    rows[1] = wrapped(1u, idx1[p.idx_offsets.y + strided_offset(i, p.ndim, p.shape, p.idx1_strides)]);
  }
  if (NUM_INDICES > 2u) {
    rows[2] = wrapped(2u, idx2[p.idx_offsets.z + strided_offset(i, p.ndim, p.shape, p.idx2_strides)]);
  }
  if (min(rows[0], min(rows[1], rows[2])) < 0) {
    status[p.check] = 1u;
    return -1;
  }
  if (WINDOWED) {
    if (u32(rows[0]) < p.window_lo || u32(rows[0]) >= p.window_hi) {
      return -2;  // another window's row: not this dispatch's to write
    }
    rows[0] -= i32(p.window_lo);
  }
  return rows[0] * i32(p.index_strides.x) + rows[1] * i32(p.index_strides.y) + rows[2] * i32(p.index_strides.z);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WORKGROUP;
  if (i >= p.numel) {
    return;
  }
  let parts = indexed(i);
  if (parts == -1) {
    out[i] = p.fill;
  } else if (parts >= 0) {
    out[i] = word(p.table_offset + strided_offset(i, p.ndim, p.shape, p.table_strides) + u32(parts));
  }
}

@compute @workgroup_size(WORKGROUP)
fn scatter(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WORKGROUP;
  if (i >= p.numel) {
    return;
  }
  let parts = indexed(i);
  if (parts >= 0) {
    out[p.table_offset + strided_offset(i, p.ndim, p.shape, p.table_strides) + u32(parts)] =
        word(p.values_offset + strided_offset(i, p.ndim, p.shape, p.values_strides));
  }
}
