// conv_params.wgsl — what the convolution kernels share: their Params (conv.py `_params` fills them), the
// input position a tap reads (source_index) and what they add to a finished sum: bias, a fused residual,
// then the fused activation. Not a kernel: conv.wgsl and depthwise_nhwc.wgsl include it and declare the
// `bias` and `residual` bindings it reads.
//   bias[oc] = bias[bias_offset + oc*bias_stride]                      (read only when HAS_BIAS)
//   residual[b, oc, oh, ow] = residual[res_offset + dot((b, oc, oh, ow), res_strides)]   (HAS_RESIDUAL)

//! include activation.wgsl

override HAS_BIAS: bool = false;
override HAS_RESIDUAL: bool = false;
override ACTIVATION: u32 = ACT_NONE;
override TRANSPOSED: bool = false;

struct Params {
  numel: u32,        // output elements
  H: u32,
  W: u32,
  OC: u32,
  OH: u32,
  OW: u32,
  KH: u32,
  KW: u32,
  ICg: u32,          // input channels per group
  OCg: u32,          // output channels per group
  stride_h: u32,
  stride_w: u32,
  pad_h: u32,
  pad_w: u32,
  dil_h: u32,
  dil_w: u32,
  N: u32,            // im2col: batch·OH·OW
  K: u32,            // im2col: IC·KH·KW
  tiles_m: u32,
  tiles_n: u32,
  x_offset: u32,
  w_offset: u32,
  w_group_stride: u32,
  bias_offset: u32,
  bias_stride: u32,
  res_offset: u32,
  act_lo: f32,
  act_hi: f32,
  x_strides: vec4<u32>,   // (b, c, h, w)
  w_strides: vec4<u32>,   // (ocg, icg, kh, kw)
  res_strides: vec4<u32>, // (b, oc, oh, ow)
}

// The input position that output position `o` reads through tap `k` (conv.wgsl's index maps), or -1.
fn source_index(o: u32, k: u32, s: u32, pad: u32, d: u32, n: u32) -> i32 {
  if (TRANSPOSED) {
    let t = i32(o + pad) - i32(k * d);
    if (t < 0 || u32(t) % s != 0u || u32(t) / s >= n) {
      return -1;
    }
    return t / i32(s);
  }
  let i = i32(o * s + k * d) - i32(pad);
  if (i < 0 || u32(i) >= n) {
    return -1;
  }
  return i;
}

// The output at o = (b, oc, oh, ow) from its sum `acc`.
fn finish(o: vec4<u32>, acc: f32) -> f32 {
  var v = acc;
  if (HAS_BIAS) {
    v += bias[p.bias_offset + o.y * p.bias_stride];
  }
  if (HAS_RESIDUAL) {
    v += residual[p.res_offset + dot(o, p.res_strides)];
  }
  return activate(v, ACTIVATION, p.act_lo, p.act_hi);
}
