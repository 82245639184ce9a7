// depthwise_nhwc.wgsl — a depthwise 2-d convolution (groups == C == OC) over a channels-last image, four
// channels per thread: out[b, oh, ow, c..c+3] = act(sum over taps of x[b, ih, iw, c..c+3] * w[kh, kw, c..c+3]
// + bias + residual), float32. DaViT's and Swin's position convs take their token-major input so; conv.wgsl's
// `direct` kernel (one thread per output, weights by element) serves every other depthwise conv.
//
// Layouts (element strides and offsets in Params):
//   x[b, c, h, w] = x[x_offset + dot((b, c, h, w), x_strides)] with x_strides.y == 1, C % 4 == 0 and every
//     other stride and the offset multiples of 4, so each thread reads its 4 channels as one vec4.
//   w: [KH, KW, C] from w_offset (a multiple of 4), channels contiguous (the lowering permutes the
//     [C, 1, KH, KW] weight).
//   bias and residual: conv_params.wgsl. out: contiguous [batch, OH, OW, C].
// Index map: conv.wgsl's plain one (source_index); positions outside the input are padding and read 0.
// Geometry: one thread per 4 of the numel outputs, numbered channel-fastest over [batch, OH, OW, C/4]
//   (per_element.wgsl). C is Params' OC.

//! include bounded.wgsl
//! include conv_params.wgsl
//! include per_element.wgsl

@group(0) @binding(0) var<storage, read> x: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> w: array<vec4<f32>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel / 4u) {
    return;
  }
  let c = i % (p.OC / 4u) * 4u;
  let pixel = i / (p.OC / 4u);
  let o = vec4(pixel / (p.OH * p.OW), c, pixel / p.OW % p.OH, pixel % p.OW);  // (b, c, oh, ow)
  let x_base = p.x_offset + o.x * p.x_strides.x + c;
  // The taps walk w together: KH * KW never exceeds its length in elements (bounded.wgsl).
  let taps_w = bounded(p.KW, 4u * arrayLength(&w));
  let taps_h = bounded_within(p.KH, taps_w, 4u * arrayLength(&w));
  var acc = vec4<f32>(0.0);
  for (var kh = 0u; kh < taps_h; kh++) {
    let ih = source_index(o.z, kh, p.stride_h, p.pad_h, p.dil_h, p.H);
    if (ih < 0) {
      continue;
    }
    for (var kw = 0u; kw < taps_w; kw++) {
      let iw = source_index(o.w, kw, p.stride_w, p.pad_w, p.dil_w, p.W);
      if (iw < 0) {
        continue;
      }
      let xv = x[(x_base + u32(ih) * p.x_strides.z + u32(iw) * p.x_strides.w) / 4u];
      acc = fma(xv, w[(p.w_offset + (kh * p.KW + kw) * p.OC + c) / 4u], acc);
    }
  }
  for (var j = 0u; j < 4u; j++) {
    out[pixel * p.OC + c + j] = finish(o + vec4(0u, j, 0u, 0u), acc[j]);
  }
}
