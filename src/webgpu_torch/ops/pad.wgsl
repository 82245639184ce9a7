// pad.wgsl — constant_pad_nd: out[o] = x[o - before] where that lies inside x, else `value`, over up to 8 dims.
//
// Layout: x any strided view (offset and element strides in Params), out contiguous; `before` is the padding
//   in front of each dim, negative where the pad crops. Dims are numbered outermost first.
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include per_element.wgsl

struct Params {
  numel: u32,
  ndim: u32,
  x_offset: u32,
  value: f32,
  out_shape: array<vec4<u32>, 2>,
  in_shape: array<vec4<u32>, 2>,
  before: array<vec4<i32>, 2>,
  x_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  var rest = i;
  var at = p.x_offset;
  var inside = true;
  for (var d = p.ndim; d > 0u; d--) {
    let k = d - 1u;
    let n = p.out_shape[k / 4u][k % 4u];
    let src = i32(rest % n) - p.before[k / 4u][k % 4u];
    rest /= n;
    inside = inside && src >= 0 && u32(src) < p.in_shape[k / 4u][k % 4u];
    at += u32(max(src, 0)) * p.x_strides[k / 4u][k % 4u];
  }
  var v = p.value;
  if (inside) {
    v = x[at];
  }
  out[i] = v;
}
