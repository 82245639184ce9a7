// grid_sample.wgsl — out[n, c, h, w] = input[n, c] sampled at the point grid[n, h, w] = (x, y) in [-1, 1]:
// grid_sampler_2d with bilinear, nearest or bicubic interpolation and zeros, border or reflection padding.
//
// Layout: input any strided view [N, C, H, W]; grid any strided view [N, OH, OW, 2]; out contiguous
//   [N, C, OH, OW]. Float32 throughout, following torch's CPU kernel step by step:
//   unnormalize   ALIGN_CORNERS: (g + 1) / 2 * (size - 1), the extreme grid values at the corner pixels'
//                 centres; otherwise ((g + 1) * size - 1) / 2, at the corner pixels' outer edges
//   PAD_BORDER    the coordinate clipped to [0, size - 1]
//   PAD_REFLECTION reflected about the extremes (corner centres, or edges without ALIGN_CORNERS), then clipped
//   PAD_ZEROS     left as is: taps outside the input read 0
//   MODE_BILINEAR the four pixels around the point, weighted by the opposite sub-rectangles
//   MODE_NEAREST  the pixel at the point rounded half to even (nearbyint)
//   MODE_BICUBIC  the 4x4 pixels around the unpadded point, Keys' weights with A = -0.75, each tap's
//                 coordinate padded on its own (torch's get_value_bounded)
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include per_element.wgsl

const MODE_BILINEAR: u32 = 0u;
const MODE_NEAREST: u32 = 1u;
const MODE_BICUBIC: u32 = 2u;
const PAD_ZEROS: u32 = 0u;
const PAD_BORDER: u32 = 1u;
const PAD_REFLECTION: u32 = 2u;

override MODE: u32 = MODE_BILINEAR;
override PADDING: u32 = PAD_ZEROS;
override ALIGN_CORNERS: bool = false;

const CUBIC_A: f32 = -0.75;

struct Params {
  numel: u32,
  C: u32,
  H: u32,
  W: u32,
  OH: u32,
  OW: u32,
  x_offset: u32,
  grid_offset: u32,
  x_strides: vec4<u32>,     // (n, c, h, w)
  grid_strides: vec4<u32>,  // (n, h, w, coordinate)
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> grid: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn unnormalize(g: f32, size: u32) -> f32 {
  if (ALIGN_CORNERS) {
    return (g + 1.0) / 2.0 * f32(size - 1u);
  }
  return ((g + 1.0) * f32(size) - 1.0) / 2.0;
}

// `v` reflected into [twice_low / 2, twice_high / 2] (torch's reflect_coordinates).
fn reflect(v: f32, twice_low: f32, twice_high: f32) -> f32 {
  if (twice_low == twice_high) {
    return 0.0;
  }
  let lo = twice_low / 2.0;
  let span = (twice_high - twice_low) / 2.0;
  let d = abs(v - lo);
  let extra = d - floor(d / span) * span;  // fmod of non-negative values
  let flips = u32(floor(d / span));
  return select(span - extra + lo, extra + lo, flips % 2u == 0u);
}

fn padded(v: f32, size: u32) -> f32 {
  let last = f32(size - 1u);
  switch PADDING {
    case PAD_BORDER: { return clamp(v, 0.0, last); }
    case PAD_REFLECTION: {
      var r: f32;
      if (ALIGN_CORNERS) {
        r = reflect(v, 0.0, 2.0 * last);
      } else {
        r = reflect(v, -1.0, 2.0 * f32(size) - 1.0);
      }
      return clamp(r, 0.0, last);
    }
    default: { return v; }
  }
}

// The input value at integer position (ix, iy) of the plane, 0 outside it.
fn tap(plane: u32, ix: i32, iy: i32) -> f32 {
  if (ix < 0 || iy < 0 || u32(ix) >= p.W || u32(iy) >= p.H) {
    return 0.0;
  }
  return x[plane + u32(iy) * p.x_strides.z + u32(ix) * p.x_strides.w];
}

fn bilinear(plane: u32, ix: f32, iy: f32) -> f32 {
  let x0 = floor(ix);
  let y0 = floor(iy);
  let fx = ix - x0;
  let fy = iy - y0;
  let i = vec2<i32>(i32(x0), i32(y0));
  return tap(plane, i.x, i.y) * (1.0 - fx) * (1.0 - fy) + tap(plane, i.x + 1, i.y) * fx * (1.0 - fy)
       + tap(plane, i.x, i.y + 1) * (1.0 - fx) * fy + tap(plane, i.x + 1, i.y + 1) * fx * fy;
}

fn cubic_weights(t: f32) -> vec4<f32> {
  let A = CUBIC_A;
  let near = vec2(t, 1.0 - t);
  let far = vec2(t + 1.0, 2.0 - t);
  let w_near = ((A + 2.0) * near - (A + 3.0)) * near * near + 1.0;
  let w_far = ((A * far - 5.0 * A) * far + 8.0 * A) * far - 4.0 * A;
  return vec4(w_far.x, w_near.x, w_near.y, w_far.y);
}

// A bicubic tap: its coordinate padded on its own, then read (0 outside for zeros padding).
fn cubic_tap(plane: u32, ix: f32, iy: f32) -> f32 {
  return tap(plane, i32(padded(ix, p.W)), i32(padded(iy, p.H)));
}

fn bicubic(plane: u32, ix: f32, iy: f32) -> f32 {
  let x0 = floor(ix);
  let y0 = floor(iy);
  let wx = cubic_weights(ix - x0);
  let wy = cubic_weights(iy - y0);
  var acc = 0.0;
  for (var j = 0u; j < 4u; j++) {
    let y = y0 - 1.0 + f32(j);
    let row = vec4(cubic_tap(plane, x0 - 1.0, y), cubic_tap(plane, x0, y), cubic_tap(plane, x0 + 1.0, y),
                   cubic_tap(plane, x0 + 2.0, y));
    acc += wy[j] * dot(row, wx);
  }
  return acc;
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let o = nchw(i, p.C, p.OH, p.OW);
  let at = p.grid_offset + o.x * p.grid_strides.x + o.z * p.grid_strides.y + o.w * p.grid_strides.z;
  let gx = unnormalize(grid[at], p.W);
  let gy = unnormalize(grid[at + p.grid_strides.w], p.H);
  let plane = p.x_offset + o.x * p.x_strides.x + o.y * p.x_strides.y;
  switch MODE {
    case MODE_NEAREST: {
      out[i] = tap(plane, i32(round(padded(gx, p.W))), i32(round(padded(gy, p.H))));
    }
    case MODE_BICUBIC: { out[i] = bicubic(plane, gx, gy); }
    default: { out[i] = bilinear(plane, padded(gx, p.W), padded(gy, p.H)); }
  }
}
