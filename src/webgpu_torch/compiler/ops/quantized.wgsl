// quantized.wgsl — packed integer weights as float32 (docs/artifact.md, "Packed weights"): out[r, k] is
// element (row(r), k) of the packed matrix in `b`, for the kernels that cannot decode it themselves
// (`GATHER` false: row(r) = r, the whole matrix) and for an embedding over packed rows (`GATHER`: row(r) =
// idx[r]; an index outside [0, rows) sets word `check` of `status`, as indexing.wgsl's, and writes NaN). `b`
// holds rows window_lo .. window_hi of the table (all of them, but for a table gathered in row chunks, one
// dispatch a chunk): output rows whose index falls outside the window are left to the other chunks'.
//
// Layout: b the packed words; idx i32 [out rows] contiguous from idx_offset (int64 travels as int32);
//   out contiguous [out rows, cols].
// Geometry: one thread per output element (per_element.wgsl).

//! include ieee.wgsl
//! include per_element.wgsl

override GATHER: bool = false;

struct Params {
  numel: u32,
  cols: u32,
  rows: u32,
  idx_offset: u32,
  check: u32,
  window_lo: u32,
  window_hi: u32,
  packing: vec4<u32>,  // packed.wgsl's (R, group, G, parameters' word)
}

@group(0) @binding(0) var<storage, read> b: array<vec4<u32>>;
@group(0) @binding(1) var<storage, read> idx: array<i32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<storage, read_write> status: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

//! include packed.wgsl

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  var row = i / p.cols;
  let k = i % p.cols;
  if (GATHER) {
    let at = idx[p.idx_offset + row];
    if (at < 0 || u32(at) >= p.rows) {
      status[p.check] = 1u;
      out[i] = nan_f32();
      return;
    }
    if (u32(at) < p.window_lo || u32(at) >= p.window_hi) {
      return;
    }
    row = u32(at) - p.window_lo;
  }
  out[i] = packed_vec4(p.packing, row, k & ~3u)[k % 4u];
}
