// group_norm.wgsl — the statistics pass of normalisation by statistics of the input itself (group norm;
// batch norm with batch statistics): for each chunk of each row of elements, their mean and the sum of their
// squared deviations from it (M2). group_norm_apply.wgsl merges a row's chunks and normalises.
//
// Layout: x is a strided [N, C, HW] view (x_offset; spatial stride ss — any layout whose spatial dims merge
//   into one stride, channels-last included). Row r's first element is at x_offset + (r / row_split) *
//   row_stride_hi + (r % row_split) * row_stride_lo, and its element i at (i / HW) * elem_stride + (i % HW) *
//   ss from there: for group norm row n * groups + g spans group g's channels (elem_stride the channel
//   stride) of sample n; for batch statistics row c spans channel c of every sample (elem_stride the sample
//   stride). partial is contiguous [rows, chunks, 2]: (mean, M2) of each chunk.
// Geometry: one workgroup of 256 threads per (row, chunk), numbered chunk-fastest and folded into (x, y) to
//   fit 65,535 per dimension (workgroups past rows * chunks exit at once); chunk k holds the row's elements
//   [k * chunk_len, min((k + 1) * chunk_len, row_len)) — none when a dynamic row is shorter than the chunks
//   were planned for (its statistics are then NaN, and never merged). Two passes over the chunk in f32 (its
//   mean, then the squared deviations from that mean), so a large common offset does not cancel; the merge
//   (Chan et al.) keeps that property.

//! include bounded.wgsl
//! include row.wgsl

const WORKGROUP: u32 = 256u;
const ROW: u32 = WORKGROUP;  // the whole workgroup shares a chunk (row.wgsl's row)

struct Params {
  rows: u32,
  chunks: u32,
  chunk_len: u32,
  row_len: u32,
  row_split: u32,
  row_stride_hi: u32,
  row_stride_lo: u32,
  elem_stride: u32,
  HW: u32,
  ss: u32,
  x_offset: u32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> partial: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

// Element i of row r in x.
fn x_at(r: u32, i: u32) -> f32 {
  let row = p.x_offset + (r / p.row_split) * p.row_stride_hi + (r % p.row_split) * p.row_stride_lo;
  return x[row + (i / p.HW) * p.elem_stride + (i % p.HW) * p.ss];
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.rows * p.chunks) {
    return;  // uniform across the workgroup, before any barrier
  }
  let r = block / p.chunks;
  let start = (block % p.chunks) * p.chunk_len;
  let end = min(start + bounded(p.chunk_len, arrayLength(&x)), bounded(p.row_len, arrayLength(&x)));
  var s = 0.0;
  for (var i = start + li; i < end; i += WORKGROUP) {
    s += x_at(r, i);
  }
  let mean = row_sum(li, li, s) / f32(end - start);
  var d2 = 0.0;
  for (var i = start + li; i < end; i += WORKGROUP) {
    let d = x_at(r, i) - mean;
    d2 += d * d;
  }
  let m2 = row_sum(li, li, d2);
  if (li == 0u) {
    partial[2u * block] = mean;
    partial[2u * block + 1u] = m2;
  }
}
