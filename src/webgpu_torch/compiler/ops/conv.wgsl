// conv.wgsl — 2-d convolution out = act(conv(x, w) + bias + residual) in float32 (a conv1d is one of
// height 1), as two entry points:
//   im2col  groups == 1, not transposed: the implicit-im2col GEMM out[m, n] = sum_k A[m, k] * B[k, n] with
//           M = OC, N = batch·OH·OW, K = IC·KH·KW, A the weight as an [OC, K] matrix and B the im2col matrix
//           of the input, sampled on the fly by the tile loader (never materialised), on the main loop of
//           tiled_matmul.wgsl;
//   direct  any groups, plain or TRANSPOSED: one thread per output element, summing its receptive field
//           straight from x and w (no reuse between threads). VEC4 (IC/groups % 4 == 0) sums the channels
//           four at a time into a vec4 accumulator. CHANNELS_LAST (for an input whose channels are its
//           contiguous axis) numbers the outputs channel-fastest and stores them [batch, OH, OW, OC], so
//           neighbouring threads read neighbouring input words.
//
// Layouts (element strides and offsets in Params):
//   x[b, c, h, w]  = x[x_offset + b*x_strides.x + c*x_strides.y + h*x_strides.z + w*x_strides.w]  (any view)
//   weight, for group g, channel-in-group pair (ocg, icg) and tap (kh, kw):
//     w[w_offset + g*w_group_stride + ocg*w_strides.x + icg*w_strides.y + kh*w_strides.z + kw*w_strides.w]
//     which serves [OC, IC/g, KH, KW] (plain) and [IC, OC/g, KH, KW] (transposed) weights alike; im2col's
//     A[m, k] = w[w_offset + m*w_strides.x + k] needs (ic, kh, kw) to be one contiguous run (the lowering
//     guarantees it).
//   bias[oc]       = bias[bias_offset + oc*bias_stride]   (read only when HAS_BIAS)
//   residual[b, oc, oh, ow] through res_offset and res_strides, like x   (read only when HAS_RESIDUAL)
//   out: contiguous [batch, OC, OH, OW]; direct with CHANNELS_LAST: contiguous [batch, OH, OW, OC].
// Index maps, per spatial dim (stride s, leading padding p, dilation d, input size n):
//   plain       output o reads input i = o*s - p + k*d through tap k;
//   transposed  input i writes output o = i*s - p + k*d, so o gathers i = (o + p - k*d) / s where that divides.
//   An i outside [0, n) is padding and reads 0. Only the leading padding is a parameter: the output size
//   comes from Params, so any trailing padding (asymmetric, from a folded constant_pad_nd) needs nothing.
// Geometry: im2col numbers TILE_M x TILE_N blocks n-fastest; direct runs one thread per output element
//   (per_element.wgsl). Both fold the grid to fit 65,535 workgroups per dimension and exit at once past the
//   end (uniformly, before any barrier).
// Params, bias, residual and the fused activation: conv_params.wgsl.

//! include bounded.wgsl
//! include conv_params.wgsl
//! include tiled_matmul.wgsl
//! include per_element.wgsl

override VEC4: bool = false;
override CHANNELS_LAST: bool = false;

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> w: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

// -- im2col: tiled_matmul.wgsl's loaders and epilogue ----------------------------------------------------------

fn load_a_tile(z: u32, m0: u32, k0: u32, li: u32) {
  // k-fastest, so consecutive threads read consecutive weight words.
  for (var e = li; e < TILE_M * TILE_K; e += THREADS) {
    let m = e / TILE_K;
    let k = e % TILE_K;
    var v = 0.0;
    if (m0 + m < p.OC && k0 + k < p.K) {
      v = w[p.w_offset + (m0 + m) * p.w_strides.x + k0 + k];
    }
    a_tile[k * TILE_M + m] = v;
  }
}

// Each thread loads a fixed column n (THREADS is a multiple of TILE_N) at rows k, k + K_STEP, ...: the
// column's input position is decoded once per call, and the row's (c, kh, kw) is stepped, not divided.
const K_STEP: u32 = THREADS / TILE_N;
const_assert THREADS % TILE_N == 0u;

fn load_b_tile(z: u32, k0: u32, n0: u32, li: u32) {
  let n = n0 + li % TILE_N;  // n-fastest: neighbouring threads read neighbouring input words at stride 1
  let ow = n % p.OW;
  let oh = (n / p.OW) % p.OH;
  let base = p.x_offset + n / (p.OW * p.OH) * p.x_strides.x;
  let ih0 = i32(oh * p.stride_h) - i32(p.pad_h);
  let iw0 = i32(ow * p.stride_w) - i32(p.pad_w);
  let KW = max(p.KW, 1u);  // the stepping below then ends within K_STEP turns
  var k = k0 + li / TILE_N;
  var kw = k % KW;
  var kh = k / KW % p.KH;
  var c = k / (KW * p.KH);
  for (var e = li; e < TILE_N * TILE_K; e += THREADS) {
    let ih = ih0 + i32(kh * p.dil_h);
    let iw = iw0 + i32(kw * p.dil_w);
    var v = 0.0;
    if (n < p.N && k < p.K && ih >= 0 && u32(ih) < p.H && iw >= 0 && u32(iw) < p.W) {
      v = x[base + c * p.x_strides.y + u32(ih) * p.x_strides.z + u32(iw) * p.x_strides.w];
    }
    b_tile[e] = v;  // b_tile[k * TILE_N + n], e's own decomposition
    k += K_STEP;
    kw += K_STEP;
    while (kw >= KW) {
      kw -= KW;
      kh += 1u;
      if (kh == p.KH) {
        kh = 0u;
        c += 1u;
      }
    }
  }
}

fn store_c(z: u32, m: u32, n: u32, acc: f32) {
  let plane = p.OH * p.OW;
  let pixel = n % plane;
  let o = vec4(n / plane, m, pixel / p.OW, pixel % p.OW);
  out[(o.x * p.OC + m) * plane + pixel] = finish(o, acc);
}

@compute @workgroup_size(WG_N, WG_M)
fn im2col(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.tiles_m * p.tiles_n) {
    return;
  }
  let K = bounded(p.K, max(arrayLength(&w), arrayLength(&x)));
  tiled_matmul(0u, block / p.tiles_n * TILE_M, block % p.tiles_n * TILE_N, p.OC, p.N, K, lid, li);
}

// -- direct --------------------------------------------------------------------------------------------------

// sum over icg < channels of x[xo + icg*x_strides.y] * w[wo + icg*w_strides.y]
fn channel_sum(xo: u32, wo: u32, channels: u32) -> f32 {
  let xs = p.x_strides.y;
  let ws = p.w_strides.y;
  if (VEC4) {
    var acc = vec4(0.0);
    for (var c = 0u; c < channels; c += 4u) {
      let xv = vec4(x[xo + c * xs], x[xo + (c + 1u) * xs], x[xo + (c + 2u) * xs], x[xo + (c + 3u) * xs]);
      let wv = vec4(w[wo + c * ws], w[wo + (c + 1u) * ws], w[wo + (c + 2u) * ws], w[wo + (c + 3u) * ws]);
      acc = fma(xv, wv, acc);
    }
    return acc.x + acc.y + acc.z + acc.w;
  }
  var acc = 0.0;
  for (var c = 0u; c < channels; c++) {
    acc = fma(x[xo + c * xs], w[wo + c * ws], acc);
  }
  return acc;
}

@compute @workgroup_size(WORKGROUP)
fn direct(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  var o: vec4<u32>;  // (b, oc, oh, ow); output i in its memory order
  if (CHANNELS_LAST) {
    o = nhwc(i, p.OC, p.OH, p.OW);
  } else {
    o = nchw(i, p.OC, p.OH, p.OW);
  }
  let g = o.y / p.OCg;
  let x_base = p.x_offset + o.x * p.x_strides.x + g * p.ICg * p.x_strides.y;
  let w_base = p.w_offset + g * p.w_group_stride + (o.y % p.OCg) * p.w_strides.x;
  // The taps and channels walk w together: their product never exceeds its length (bounded.wgsl).
  let taps_w = bounded(p.KW, arrayLength(&w));
  let taps_h = bounded_within(p.KH, taps_w, arrayLength(&w));
  let channels = bounded_within(p.ICg, taps_h * taps_w, arrayLength(&w));
  var acc = 0.0;
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
      acc += channel_sum(x_base + u32(ih) * p.x_strides.z + u32(iw) * p.x_strides.w,
                         w_base + kh * p.w_strides.z + kw * p.w_strides.w, channels);
    }
  }
  out[i] = finish(o, acc);
}
