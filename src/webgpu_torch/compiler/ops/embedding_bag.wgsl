// embedding_bag.wgsl — out[b, c] = reduce over the bag's positions k of weight[indices[k], c] (times
// per_sample_weights[k] under HAS_WEIGHTS): sum, mean or max of the rows each bag gathers.
//
// Layout: indices (i32: int64 travels as int32), offsets and per_sample_weights are strided 1-d views; bag b
//   holds positions [offsets[b], end) with end = offsets[b + 1], or the index count past the last offset
//   (with include_last_offset, torch's last offset is that end and makes no bag of its own). weight [rows, dim] is a strided view; out is
//   contiguous [bags, dim]. Positions whose index is `padding_idx` (-1: none) are skipped and not counted;
//   an index outside [0, rows) is skipped too (the place a device-side error flag would be raised). An empty
//   bag is 0 in every mode.
// Geometry: one thread per output element (per_element.wgsl), a bag's threads along its row's columns, so
//   the row reads of one position are coalesced; threads past `numel` exit at once.

//! include bounded.wgsl
//! include per_element.wgsl

const MODE_SUM: u32 = 0u;
const MODE_MEAN: u32 = 1u;
const MODE_MAX: u32 = 2u;

override MODE: u32 = MODE_SUM;
override HAS_WEIGHTS: bool = false;

struct Params {
  numel: u32,
  dim: u32,
  rows: u32,
  count: u32,
  n_offsets: u32,
  padding_idx: i32,
  weight_offset: u32,
  index_offset: u32,
  offsets_offset: u32,
  psw_offset: u32,
  weight_strides: vec2<u32>,
  index_stride: u32,
  offsets_stride: u32,
  psw_stride: u32,
}

@group(0) @binding(0) var<storage, read> weight: array<f32>;
@group(0) @binding(1) var<storage, read> indices: array<i32>;
@group(0) @binding(2) var<storage, read> offsets: array<i32>;
@group(0) @binding(3) var<storage, read> psw: array<f32>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

fn offset_at(b: u32) -> u32 {
  return u32(offsets[p.offsets_offset + b * p.offsets_stride]);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let b = i / p.dim;
  let c = i % p.dim;
  let start = offset_at(b);
  let count = bounded(p.count, arrayLength(&indices));  // offsets are data: a bag never runs past them
  var end = count;
  if (b + 1u < p.n_offsets) {
    end = min(offset_at(b + 1u), count);
  }
  var acc = 0.0;
  var taken = 0u;
  for (var k = start; k < end; k++) {
    let row = indices[p.index_offset + k * p.index_stride];
    if (row == p.padding_idx || row < 0 || u32(row) >= p.rows) {
      continue;
    }
    var v = weight[p.weight_offset + u32(row) * p.weight_strides.x + c * p.weight_strides.y];
    if (HAS_WEIGHTS) {
      v *= psw[p.psw_offset + k * p.psw_stride];
    }
    if (MODE == MODE_MAX) {
      acc = select(max(acc, v), v, taken == 0u);
    } else {
      acc += v;
    }
    taken += 1u;
  }
  if (MODE == MODE_MEAN && taken > 0u) {
    acc /= f32(taken);
  }
  out[i] = acc;
}
