// gemm_vec4_io.wgsl — what the two vec4 GEMM kernels share: their interface, tile loads and epilogue.
// Not a kernel: gemm_vec4.wgsl and gemm_vec4_regs.wgsl include it and differ only in how a thread holds
// its accumulators (see each). They compute batched C = act(alpha * (A @ B) + beta * bias + residual) in
// float32 for operands whose contiguous axis is a multiple of 4 long and 16-byte aligned (the lowering
// checks; gemm.wgsl takes everything else).
// Layouts (element strides/offsets in Params; A and B are bound as vec4 arrays):
//   A[z, m, k]: A_K_CONTIGUOUS — rows along k (row-major A); else columns along m (a transposed view).
//     A_IM2COL (with A_K_CONTIGUOUS, batch 1): the implicit im2col matrix of a convolution over a
//     channels-last image, never materialised; see fetch_im2col.
//   B[z, k, n]: B_N_CONTIGUOUS — rows along n (row-major B); else columns along k (Wᵀ of a linear weight).
//   bias[z, m, n] and residual[z, m, n] read through arbitrary strides (0 = broadcast), only when HAS_BIAS /
//   HAS_RESIDUAL.
//   C contiguous [batch, M, N], stored by element (N need not be a multiple of 4; stores are a small part
//   of the traffic next to the K-long loop).
// Workgroup memory: a_tile[k][m/4] and b_tile[k][n/4] as vec4, so a thread's operand fragments are
//   vec4 loads. Loads along the non-contiguous axis of a tile scatter one vec4 into 4 components.
//   With ROW_PAD = 1 a k-row holds one spare vec4 (A_ROW = TILE_M / 4 + 1), so the threads that scatter
//   the same m at different k write different banks; unpadded, a k-row is TILE_M words, a multiple of 32
//   banks, and they collide (2-way at TILE_K = 8, 4-way at 16). Fragment reads stay consecutive vec4s.
// Register tile: each of WG_M x WG_N threads owns GM x GN blocks of 4 x 4 outputs; block (g, h) covers rows
//   (g*WG_M + ty)*4 .. +3 and columns (h*WG_N + tx)*4 .. +3 of the workgroup's TILE_M x TILE_N tile, so a
//   warp's fragment reads are consecutive vec4s (or broadcasts).
// Pipelining: each kernel fetches the next k-step's tiles into registers while it multiplies the current
// one, then stages them into workgroup memory (fetch_a/fetch_b, store_a/store_b below). Each kernel declares
// a_tile and b_tile itself, as one stage (A_STAGE, B_STAGE vec4s) or two (double-buffered): see each.
// Geometry: blocks numbered n-fastest, then m, then z, over a folded grid; workgroups past the end exit.
//   (Grouped orders that go down several tile-rows before stepping along n, for L2 reuse, measured no faster
//   on an H200 at 2048³-8192²×2048 and slower at 9216×1024×256.)

//! include activation.wgsl

const TILE_M: u32 = 128u;
const TILE_N: u32 = 128u;
const TILE_K: u32 = 8u;
const WG_M: u32 = 16u;
const WG_N: u32 = 16u;
const GM: u32 = TILE_M / (4u * WG_M);  // 4 x 4 blocks per thread along m
const GN: u32 = TILE_N / (4u * WG_N);  // … along n
const THREADS: u32 = WG_M * WG_N;
const A_LOADS: u32 = TILE_M * TILE_K / (4u * THREADS);  // vec4 loads per thread per k-step
const B_LOADS: u32 = TILE_N * TILE_K / (4u * THREADS);
const ROW_PAD: u32 = 0u;
const A_ROW: u32 = TILE_M / 4u + ROW_PAD;  // vec4s per k-row of a_tile
const B_ROW: u32 = TILE_N / 4u + ROW_PAD;
const A_STAGE: u32 = TILE_K * A_ROW;  // vec4s of one stage of a_tile (stage s starts at s * A_STAGE)
const B_STAGE: u32 = TILE_K * B_ROW;

override A_K_CONTIGUOUS: bool = true;
override A_IM2COL: bool = false;
override B_N_CONTIGUOUS: bool = true;
override ACTIVATION: u32 = ACT_NONE;

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> a: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<B_T>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<storage, read> residual: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

// Vec4 number e of a k-step's A tile: with A_K_CONTIGUOUS, e walks the tile's rows m, TILE_K/4 vec4s each;
// otherwise its k-rows, TILE_M/4 vec4s each (so e is already the a_tile index). Likewise for B.
fn fetch_a(base: u32, m0: u32, k0: u32, e: u32) -> vec4<f32> {
  var m: u32;
  var k: u32;
  if (A_K_CONTIGUOUS) {
    m = e / (TILE_K / 4u);
    k = (e % (TILE_K / 4u)) * 4u;
  } else {
    k = e / (TILE_M / 4u);
    m = (e % (TILE_M / 4u)) * 4u;
  }
  if (m0 + m >= p.M || k0 + k >= p.K) {
    return vec4<f32>(0.0);
  }
  if (A_IM2COL) {
    return fetch_im2col(m0 + m, k0 + k);
  }
  return a[(base + (m0 + m) * p.a_strides.y + (k0 + k) * p.a_strides.z) / 4u];
}

// A[m, k] of the implicit im2col matrix: row m is output pixel (b, oh, ow), numbered ow-fastest over
// batch·OH·OW; column k is channel c of tap (kh, kw), c fastest: k = (kh * KW + kw) * C + c. It reads
// image[b, oh * stride - pad + kh * dil, ow * stride - pad + kw * dil, c], and 0 outside the image (padding).
// C % 4 == 0 and the channels are contiguous (the lowering checks), so 4 consecutive k are one vec4 of a tap.
fn fetch_im2col(m: u32, k: u32) -> vec4<f32> {
  let b = m / p.im_ohw;
  let pixel = m % p.im_ohw;
  let tap = k / p.im_c;
  let ih = i32((pixel / p.im_ow) * p.im_stride_h + (tap / p.im_kw) * p.im_dil_h) - i32(p.im_pad_h);
  let iw = i32((pixel % p.im_ow) * p.im_stride_w + (tap % p.im_kw) * p.im_dil_w) - i32(p.im_pad_w);
  if (ih < 0 || iw < 0 || u32(ih) >= p.im_h || u32(iw) >= p.im_w) {
    return vec4<f32>(0.0);
  }
  let at = p.a_offset + b * p.a_strides.x + u32(ih) * p.a_strides.y + u32(iw) * p.a_strides.z + k % p.im_c;
  return a[at / 4u];
}

// Stores vec4 number e of a k-step's A tile (as fetched) into stage `s` of a_tile.
fn store_a(s: u32, e: u32, v: vec4<f32>) {
  if (A_K_CONTIGUOUS) {
    let m = e / (TILE_K / 4u);
    let k = (e % (TILE_K / 4u)) * 4u;
    for (var j = 0u; j < 4u; j++) {
      a_tile[s * A_STAGE + (k + j) * A_ROW + m / 4u][m % 4u] = v[j];
    }
  } else {
    a_tile[s * A_STAGE + e / (TILE_M / 4u) * A_ROW + e % (TILE_M / 4u)] = v;  // e = k * (TILE_M / 4) + m / 4
  }
}

fn fetch_b(base: u32, k0: u32, n0: u32, e: u32) -> vec4<f32> {
  var k: u32;
  var n: u32;
  if (B_N_CONTIGUOUS) {
    k = e / (TILE_N / 4u);
    n = (e % (TILE_N / 4u)) * 4u;
  } else {
    n = e / (TILE_K / 4u);
    k = (e % (TILE_K / 4u)) * 4u;
  }
  if (k0 + k >= p.K || n0 + n >= p.N) {
    return vec4<f32>(0.0);
  }
  return vec4<f32>(b[(base + (k0 + k) * p.b_strides.y + (n0 + n) * p.b_strides.z) / 4u]);
}

fn store_b(s: u32, e: u32, v: vec4<f32>) {
  if (B_N_CONTIGUOUS) {
    b_tile[s * B_STAGE + e / (TILE_N / 4u) * B_ROW + e % (TILE_N / 4u)] = v;  // e = k * (TILE_N / 4) + n / 4
  } else {
    let n = e / (TILE_K / 4u);
    let k = (e % (TILE_K / 4u)) * 4u;
    for (var j = 0u; j < 4u; j++) {
      b_tile[s * B_STAGE + (k + j) * B_ROW + n / 4u][n % 4u] = v[j];
    }
  }
}

// Stores one finished vec4 of outputs, applying activation `act` (ACTIVATION, or ACT_NONE when the kernel
// activates in a pass of its own: activate_stored).
fn finish(z: u32, m: u32, n: u32, v: vec4<f32>, act: u32) {
  if (m >= p.M) {
    return;
  }
  let row = (z * p.M + m) * p.N;
  for (var j = 0u; j < 4u; j++) {
    if (n + j < p.N) {
      c[row + n + j] = activate(epilogue_sum(z, m, n + j, v[j]), act, p.act_lo, p.act_hi);
    }
  }
}

// Applies ACTIVATION to 4 outputs this invocation stored before (a read of its own writes: program order).
fn activate_stored(z: u32, m: u32, n: u32) {
  if (m >= p.M) {
    return;
  }
  let row = (z * p.M + m) * p.N;
  for (var j = 0u; j < 4u; j++) {
    if (n + j < p.N) {
      c[row + n + j] = activate(c[row + n + j], ACTIVATION, p.act_lo, p.act_hi);
    }
  }
}
