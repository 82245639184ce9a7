// resample.wgsl — 2-d resampling of an NCHW tensor in float32, each output pixel computed from a window of
// its own channel's input: pooling (max, average, adaptive average) and upsampling (nearest, bilinear).
//
// Layout: x any strided view [B, C, H, W] (offset and strides in Params); out contiguous [B, C, OH, OW].
// Windows, per spatial dim, for output position o (kernel k, stride s, leading padding p, dilation d, input
//   size n, output size O; O comes from Params, so ceil_mode needs nothing of its own):
//   OP_MAX       taps i = o*s - p + j*d for j < k, those inside [0, n): padding never wins (it is -inf);
//   OP_AVG       i in [o*s - p, min(o*s - p + k, n + p)) clipped to [0, n); the divisor is `divisor` when
//                nonzero (divisor_override), else the window's length before clipping (COUNT_PAD) or after;
//   OP_ADAPTIVE  i in [floor(o*n/O), ceil((o+1)*n/O)), divided by the window's length;
//   OP_NEAREST   i = min(floor(o * scale), n - 1);
//   OP_BILINEAR  src = o * scale (ALIGN_CORNERS) or max((o + 0.5) * scale - 0.5, 0), blending inputs
//                i0 = floor(src) and min(i0 + 1, n - 1) by the fraction src - i0.
//   `scale` is torch's, computed on the host as torch computes it, so the arithmetic here is torch's own
//   float32 arithmetic and nearest picks torch's pixels exactly.
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include per_element.wgsl

const OP_MAX: u32 = 0u;
const OP_AVG: u32 = 1u;
const OP_ADAPTIVE: u32 = 2u;
const OP_NEAREST: u32 = 3u;
const OP_BILINEAR: u32 = 4u;

override OP: u32 = OP_MAX;
override COUNT_PAD: bool = true;
override ALIGN_CORNERS: bool = false;

const LOWEST: f32 = -3.4028234e38;  // the lowest finite f32 (WGSL has no infinity literal)

struct Params {
  numel: u32,
  C: u32,
  H: u32,
  W: u32,
  OH: u32,
  OW: u32,
  KH: u32,
  KW: u32,
  stride_h: u32,
  stride_w: u32,
  pad_h: u32,
  pad_w: u32,
  dil_h: u32,
  dil_w: u32,
  divisor: u32,
  x_offset: u32,
  scale_h: f32,
  scale_w: f32,
  x_strides: vec4<u32>,  // (b, c, h, w)
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read_write> out: array<f32>;
@group(0) @binding(2) var<uniform> p: Params;

fn at(plane: u32, h: u32, w: u32) -> f32 {
  return x[plane + h * p.x_strides.z + w * p.x_strides.w];
}

fn max_window(plane: u32, oh: u32, ow: u32) -> f32 {
  var best = LOWEST;
  for (var j = 0u; j < p.KH; j++) {
    let ih = i32(oh * p.stride_h + j * p.dil_h) - i32(p.pad_h);
    if (ih < 0 || u32(ih) >= p.H) {
      continue;
    }
    for (var l = 0u; l < p.KW; l++) {
      let iw = i32(ow * p.stride_w + l * p.dil_w) - i32(p.pad_w);
      if (iw >= 0 && u32(iw) < p.W) {
        best = max(best, at(plane, u32(ih), u32(iw)));
      }
    }
  }
  return best;
}

// An averaging window along one dim: inputs [lo, hi), and its length before clipping to the input.
struct Span {
  lo: u32,
  hi: u32,
  padded: u32,
}

fn span(o: u32, n: u32, O: u32, k: u32, s: u32, pad: u32) -> Span {
  if (OP == OP_ADAPTIVE) {
    let lo = o * n / O;
    let hi = ((o + 1u) * n + O - 1u) / O;
    return Span(lo, hi, hi - lo);
  }
  let start = i32(o * s) - i32(pad);
  let end = min(start + i32(k), i32(n + pad));
  return Span(u32(max(start, 0)), u32(clamp(end, 0, i32(n))), u32(end - start));
}

fn mean_window(plane: u32, oh: u32, ow: u32) -> f32 {
  let sh = span(oh, p.H, p.OH, p.KH, p.stride_h, p.pad_h);
  let sw = span(ow, p.W, p.OW, p.KW, p.stride_w, p.pad_w);
  var acc = 0.0;
  for (var ih = sh.lo; ih < sh.hi; ih++) {
    for (var iw = sw.lo; iw < sw.hi; iw++) {
      acc += at(plane, ih, iw);
    }
  }
  var count = (sh.hi - sh.lo) * (sw.hi - sw.lo);
  if (p.divisor != 0u) {
    count = p.divisor;
  } else if (OP == OP_AVG && COUNT_PAD) {
    count = sh.padded * sw.padded;
  }
  return acc / f32(count);
}

// Bilinear taps along one dim: inputs i0 and i1, and the weight of i1.
struct Taps {
  i0: u32,
  i1: u32,
  frac: f32,
}

fn taps(o: u32, n: u32, scale: f32) -> Taps {
  var src = f32(o) * scale;
  if (!ALIGN_CORNERS) {
    src = max((f32(o) + 0.5) * scale - 0.5, 0.0);
  }
  let i0 = min(u32(src), n - 1u);
  return Taps(i0, min(i0 + 1u, n - 1u), src - f32(i0));
}

fn bilinear(plane: u32, oh: u32, ow: u32) -> f32 {
  let th = taps(oh, p.H, p.scale_h);
  let tw = taps(ow, p.W, p.scale_w);
  let top = mix(at(plane, th.i0, tw.i0), at(plane, th.i0, tw.i1), tw.frac);
  let bottom = mix(at(plane, th.i1, tw.i0), at(plane, th.i1, tw.i1), tw.frac);
  return mix(top, bottom, th.frac);
}

fn nearest(plane: u32, oh: u32, ow: u32) -> f32 {
  let ih = min(u32(floor(f32(oh) * p.scale_h)), p.H - 1u);
  let iw = min(u32(floor(f32(ow) * p.scale_w)), p.W - 1u);
  return at(plane, ih, iw);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let o = nchw(i, p.C, p.OH, p.OW);
  let plane = p.x_offset + o.x * p.x_strides.x + o.y * p.x_strides.y;
  switch OP {
    case OP_MAX: { out[i] = max_window(plane, o.z, o.w); }
    case OP_NEAREST: { out[i] = nearest(plane, o.z, o.w); }
    case OP_BILINEAR: { out[i] = bilinear(plane, o.z, o.w); }
    default: { out[i] = mean_window(plane, o.z, o.w); }
  }
}
