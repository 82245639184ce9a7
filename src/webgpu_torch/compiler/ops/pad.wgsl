// pad.wgsl — out[o] = x[map(o)] over up to 8 dims, each output coordinate mapped to an input one by its own
// dim's rule: padding (constant, reflect, replicate, circular) and the maps that share its shape (flip, roll,
// repeat). Values move as 32-bit words, so every device dtype (f32, i32, bool as u32) is the same kernel.
//
// Layout: x any strided view (offset and element strides in Params), out contiguous; dims are numbered
//   outermost first. Per dim k, with o the output coordinate, n = in_shape[k] and t = o - before[k] (`before`
//   is the leading padding: negative where a pad crops, the shift of a roll), the rule `modes[k]`:
//   MAP_CONSTANT   t; outside [0, n) the element is `fill` (the pad value's bits in the output's dtype)
//   MAP_REFLECT    t reflected at the edges without repeating them (-1 -> 1, n -> n - 2; torch keeps pads < n)
//   MAP_REPLICATE  clamp(t, 0, n - 1)
//   MAP_WRAP       t mod n (circular padding, roll, repeat)
//   MAP_FLIP       n - 1 - o
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include per_element.wgsl

const MAP_CONSTANT: u32 = 0u;
const MAP_REFLECT: u32 = 1u;
const MAP_REPLICATE: u32 = 2u;
const MAP_WRAP: u32 = 3u;
const MAP_FLIP: u32 = 4u;

struct Params {
  numel: u32,
  ndim: u32,
  x_offset: u32,
  fill: u32,
  out_shape: array<vec4<u32>, 2>,
  in_shape: array<vec4<u32>, 2>,
  before: array<vec4<i32>, 2>,
  modes: array<vec4<u32>, 2>,
  x_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<uniform> p: Params;

// The input coordinate for output coordinate o along a dim of n input elements, or -1 outside (constant pad).
fn source(o: u32, n: u32, before: i32, mode: u32) -> i32 {
  let t = i32(o) - before;
  let last = i32(n) - 1;
  switch mode {
    case MAP_REFLECT: { return last - abs(last - abs(t)); }
    case MAP_REPLICATE: { return clamp(t, 0, last); }
    case MAP_WRAP: { return ((t % i32(n)) + i32(n)) % i32(n); }
    case MAP_FLIP: { return last - i32(o); }
    default: { return select(-1, t, t >= 0 && t <= last); }
  }
}

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
  for (var d = min(p.ndim, 8u); d > 0u; d--) {  // Params carry 8 dims
    let k = d - 1u;
    let n = p.out_shape[k / 4u][k % 4u];
    let src = source(rest % n, p.in_shape[k / 4u][k % 4u], p.before[k / 4u][k % 4u], p.modes[k / 4u][k % 4u]);
    rest /= n;
    inside = inside && src >= 0;
    at += u32(max(src, 0)) * p.x_strides[k / 4u][k % 4u];
  }
  var v = p.fill;
  if (inside) {
    v = x[at];
  }
  out[i] = v;
}
