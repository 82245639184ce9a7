// resample.wgsl — resampling of an N-C-spatial tensor (2-d spatial dims are 3-d ones of depth 1), each output
// element computed from a window of its own channel's input: pooling (max, with torch's flat indices if asked;
// average; adaptive average) and upsampling (nearest, bilinear, bicubic).
//
// Layout: x any strided view [B, C, D, H, W] (offset and strides in Params); out contiguous [B, C, OD, OH, OW];
//   `indices` (WITH_INDICES) contiguous like out: the argmax's flat position d * H * W + h * W + w in its
//   plane, as torch's max_pool*_with_indices gives it (int64 travels as int32). Per spatial axis a, for
//   output position o (kernel k, stride s, leading padding p, dilation l, input size n, output size O; O comes
//   from Params, so ceil_mode needs nothing of its own):
//   OP_MAX       taps i = o*s - p + j*l for j < k, those inside [0, n); the first largest tap wins, and a NaN
//                wins over any number (torch's rule; the later NaN of two); -inf when every tap is -inf
//   OP_AVG       i in [o*s - p, min(o*s - p + k, n + p)) clipped to [0, n); the divisor is `divisor` when
//                nonzero (divisor_override), else the window's size before clipping (COUNT_PAD) or after;
//                integer sums divide truncating toward zero, as torch's integer pools do
//   OP_ADAPTIVE  i in [floor(o*n/O), ceil((o+1)*n/O)), divided by the window's size
//   OP_ADAPTIVE_MAX  the largest of the same window, as OP_MAX picks it
//   OP_NEAREST   i = min(floor(o * scale), n - 1)
//   OP_BILINEAR  src = o * scale (ALIGN_CORNERS) or max((o + 0.5) * scale - 0.5, 0), blending inputs
//                i0 = floor(src) and min(i0 + 1, n - 1) by the fraction src - i0
//   OP_BICUBIC   src = o * scale (ALIGN_CORNERS) or (o + 0.5) * scale - 0.5 (unclamped), the four inputs
//                floor(src) - 1 .. floor(src) + 2 clamped to [0, n), weighted by Keys' cubic convolution with
//                A = -0.75 (torch's upsample_bicubic2d)
//   `scale` is torch's, computed on the host as torch computes it, so the arithmetic here is torch's own
//   float32 arithmetic and nearest picks torch's pixels exactly. Upsampling runs over H and W only.
// Types: T by alias: f32, or i32 for the integer max and average pools torch allows (every other op is float).
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include bounded.wgsl
//! include per_element.wgsl

const OP_MAX: u32 = 0u;
const OP_AVG: u32 = 1u;
const OP_ADAPTIVE: u32 = 2u;
const OP_NEAREST: u32 = 3u;
const OP_BILINEAR: u32 = 4u;
const OP_BICUBIC: u32 = 5u;
const OP_ADAPTIVE_MAX: u32 = 6u;

alias T = f32;

override OP: u32 = OP_MAX;
override COUNT_PAD: bool = true;
override ALIGN_CORNERS: bool = false;
override WITH_INDICES: bool = false;

const CUBIC_A: f32 = -0.75;

struct Params {
  numel: u32,
  C: u32,
  divisor: u32,
  x_offset: u32,
  in_size: vec4<u32>,   // (D, H, W, unused)
  out_size: vec4<u32>,  // (OD, OH, OW, unused)
  kernel: vec4<u32>,
  stride: vec4<u32>,
  pad: vec4<u32>,
  dil: vec4<u32>,
  scale: vec4<f32>,
  x_strides: array<vec4<u32>, 2>,  // (b, c, d, h, w)
}

@group(0) @binding(0) var<storage, read> x: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<storage, read_write> indices: array<i32>;
@group(0) @binding(3) var<uniform> p: Params;

// The offset of input position `at` (d, h, w) of the plane starting at `plane`.
fn offset(plane: u32, at: vec3<u32>) -> u32 {
  return plane + at.x * p.x_strides[0].z + at.y * p.x_strides[0].w + at.z * p.x_strides[1].x;
}

fn atf(plane: u32, h: u32, w: u32) -> f32 {
  return f32(x[offset(plane, vec3(0u, h, w))]);
}

fn is_nan(v: T) -> bool {
  return v != v;
}

// The first window tap along axis a (negative inside the leading padding).
fn tap_start(o: u32, a: u32) -> i32 {
  return i32(o * p.stride[a]) - i32(p.pad[a]);
}

fn inside(i: i32, a: u32) -> bool {
  return i >= 0 && u32(i) < p.in_size[a];
}

struct Best {
  value: T,
  index: u32,
}

// The taps of a max window along one axis: first, first + step, ... (taps of them; some may lie outside).
struct Window {
  first: i32,
  taps: u32,
  step: u32,
}

fn max_taps(o: u32, a: u32) -> Window {
  if (OP == OP_ADAPTIVE_MAX) {
    let s = span(o, a);
    return Window(i32(s.lo), s.hi - s.lo, 1u);
  }
  return Window(tap_start(o, a), p.kernel[a], p.dil[a]);
}

const NO_TAP: u32 = 0xffffffffu;

// The taps [lo, hi) of window w along axis a that fall inside the input (the others are skipped anyway).
fn inside_taps(w: Window, a: u32) -> vec2<u32> {
  let step = i32(max(w.step, 1u));
  let n = i32(p.in_size[a]);
  var lo = 0u;
  if (w.first < 0) {
    lo = u32((step - 1 - w.first) / step);
  }
  var hi = 0u;
  if (w.first < n) {
    hi = min(u32((n - 1 - w.first) / step) + 1u, w.taps);
  }
  return vec2(lo, max(lo, hi));
}

// The first tap is taken whatever its value, so a window of -inf gives -inf and its first tap's index.
fn max_window(plane: u32, o: vec3<u32>) -> Best {
  var best = Best(T(0), NO_TAP);
  let wd = max_taps(o.x, 0u);
  let wh = max_taps(o.y, 1u);
  let ww = max_taps(o.z, 2u);
  // The taps inside the input, in three loops that walk x together: their product never exceeds its length
  // (bounded.wgsl).
  let td = inside_taps(wd, 0u);
  let th = inside_taps(wh, 1u);
  let tw = inside_taps(ww, 2u);
  let nw = bounded(tw.y - tw.x, arrayLength(&x));
  let nh = bounded_within(th.y - th.x, nw, arrayLength(&x));
  let nd = bounded_within(td.y - td.x, nh * nw, arrayLength(&x));
  for (var j = td.x; j < td.x + nd; j++) {
    let id = wd.first + i32(j * wd.step);
    if (!inside(id, 0u)) { continue; }
    for (var k = th.x; k < th.x + nh; k++) {
      let ih = wh.first + i32(k * wh.step);
      if (!inside(ih, 1u)) { continue; }
      for (var l = tw.x; l < tw.x + nw; l++) {
        let iw = ww.first + i32(l * ww.step);
        if (!inside(iw, 2u)) { continue; }
        let at = vec3(u32(id), u32(ih), u32(iw));
        let v = x[offset(plane, at)];
        if (best.index == NO_TAP || v > best.value || is_nan(v)) {
          best = Best(v, (at.x * p.in_size.y + at.y) * p.in_size.z + at.z);
        }
      }
    }
  }
  return best;
}

// An averaging window along one axis: inputs [lo, hi), and its size before clipping to the input.
struct Span {
  lo: u32,
  hi: u32,
  padded: u32,
}

fn span(o: u32, a: u32) -> Span {
  let n = p.in_size[a];
  if (OP == OP_ADAPTIVE || OP == OP_ADAPTIVE_MAX) {
    let O = p.out_size[a];
    let lo = o * n / O;
    let hi = ((o + 1u) * n + O - 1u) / O;
    return Span(lo, hi, hi - lo);
  }
  let start = tap_start(o, a);
  let end = min(start + i32(p.kernel[a]), i32(n + p.pad[a]));
  return Span(u32(max(start, 0)), u32(clamp(end, 0, i32(n))), u32(end - start));
}

fn extent(s: Span) -> u32 {
  return select(0u, s.hi - s.lo, s.hi > s.lo);
}

fn mean_window(plane: u32, o: vec3<u32>) -> T {
  let sd = span(o.x, 0u);
  let sh = span(o.y, 1u);
  let sw = span(o.z, 2u);
  // The three loops walk x together: their product never exceeds its length (bounded.wgsl).
  let nw = bounded(extent(sw), arrayLength(&x));
  let nh = bounded_within(extent(sh), nw, arrayLength(&x));
  let nd = bounded_within(extent(sd), nh * nw, arrayLength(&x));
  var acc = T(0);
  for (var j = 0u; j < nd; j++) {
    for (var k = 0u; k < nh; k++) {
      for (var l = 0u; l < nw; l++) {
        acc += x[offset(plane, vec3(sd.lo + j, sh.lo + k, sw.lo + l))];
      }
    }
  }
  var count = (sd.hi - sd.lo) * (sh.hi - sh.lo) * (sw.hi - sw.lo);
  if (p.divisor != 0u) {
    count = p.divisor;
  } else if (OP == OP_AVG && COUNT_PAD) {
    count = sd.padded * sh.padded * sw.padded;
  }
  return acc / T(count);
}

// The source coordinate of output position o along axis a, as torch's area_pixel_compute_source_index.
fn source(o: u32, a: u32) -> f32 {
  if (ALIGN_CORNERS) {
    return f32(o) * p.scale[a];
  }
  let src = (f32(o) + 0.5) * p.scale[a] - 0.5;
  return select(max(src, 0.0), src, OP == OP_BICUBIC);
}

// Bilinear taps along one axis: inputs i0 and i1, and the weight of i1.
struct Taps {
  i0: u32,
  i1: u32,
  frac: f32,
}

fn taps(o: u32, a: u32) -> Taps {
  let src = source(o, a);
  let i0 = min(u32(src), p.in_size[a] - 1u);
  return Taps(i0, min(i0 + 1u, p.in_size[a] - 1u), src - f32(i0));
}

fn bilinear(plane: u32, oh: u32, ow: u32) -> f32 {
  let th = taps(oh, 1u);
  let tw = taps(ow, 2u);
  let top = mix(atf(plane, th.i0, tw.i0), atf(plane, th.i0, tw.i1), tw.frac);
  let bottom = mix(atf(plane, th.i1, tw.i0), atf(plane, th.i1, tw.i1), tw.frac);
  return mix(top, bottom, th.frac);
}

// Keys' cubic convolution weights of the four taps floor(src) - 1 .. floor(src) + 2 at fraction t.
fn cubic_weights(t: f32) -> vec4<f32> {
  let A = CUBIC_A;
  let near = vec2(t, 1.0 - t);  // |distance| <= 1
  let far = vec2(t + 1.0, 2.0 - t);  // 1 < |distance| < 2
  let w_near = ((A + 2.0) * near - (A + 3.0)) * near * near + 1.0;
  let w_far = ((A * far - 5.0 * A) * far + 8.0 * A) * far - 4.0 * A;
  return vec4(w_far.x, w_near.x, w_near.y, w_far.y);
}

// The input coordinate floor(src) - 1 + j clamped to the axis.
fn clamped(base: f32, j: u32, a: u32) -> u32 {
  return u32(clamp(i32(base) - 1 + i32(j), 0, i32(p.in_size[a]) - 1));
}

fn bicubic(plane: u32, oh: u32, ow: u32) -> f32 {
  let sh = source(oh, 1u);
  let sw = source(ow, 2u);
  let bh = floor(sh);
  let bw = floor(sw);
  let wh = cubic_weights(sh - bh);
  let ww = cubic_weights(sw - bw);
  var acc = 0.0;
  for (var j = 0u; j < 4u; j++) {
    let h = clamped(bh, j, 1u);
    let row = vec4(atf(plane, h, clamped(bw, 0u, 2u)), atf(plane, h, clamped(bw, 1u, 2u)),
                   atf(plane, h, clamped(bw, 2u, 2u)), atf(plane, h, clamped(bw, 3u, 2u)));
    acc += wh[j] * dot(row, ww);
  }
  return acc;
}

fn nearest(plane: u32, oh: u32, ow: u32) -> T {
  let ih = min(u32(floor(f32(oh) * p.scale.y)), p.in_size.y - 1u);
  let iw = min(u32(floor(f32(ow) * p.scale.z)), p.in_size.z - 1u);
  return x[offset(plane, vec3(0u, ih, iw))];
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let OD = p.out_size.x;
  let OH = p.out_size.y;
  let OW = p.out_size.z;
  let o = vec3(i / (OW * OH) % OD, i / OW % OH, i % OW);
  let b_c = i / (OW * OH * OD);
  let plane = p.x_offset + (b_c / p.C) * p.x_strides[0].x + (b_c % p.C) * p.x_strides[0].y;
  switch OP {
    case OP_MAX, OP_ADAPTIVE_MAX: {
      let best = max_window(plane, o);
      out[i] = best.value;
      if (WITH_INDICES) {
        indices[i] = i32(best.index);
      }
    }
    case OP_NEAREST: { out[i] = nearest(plane, o.y, o.z); }
    case OP_BILINEAR: { out[i] = T(bilinear(plane, o.y, o.z)); }
    case OP_BICUBIC: { out[i] = T(bicubic(plane, o.y, o.z)); }
    default: { out[i] = mean_window(plane, o); }
  }
}
