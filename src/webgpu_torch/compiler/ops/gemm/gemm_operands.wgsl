// gemm_operands.wgsl — what every tiled GEMM kernel that reads 16-byte vectors shares: its interface, the
// fetch of one vec4 of an A or B tile from memory, and the epilogue. Not a kernel: gemm_vec4_io.wgsl (the
// float32 kernels) and gemm_subgroup_matrix.wgsl (the matrix-unit kernels) include it, and each declares
// TILE_M, TILE_N and TILE_K. They compute batched C = act(alpha * (A @ B) + beta * bias + residual) for
// operands whose contiguous axis is a multiple of 4 long and 16-byte aligned (the lowering checks; gemm.wgsl
// takes everything else).
// Layouts (element strides/offsets in Params; A and B are bound as vec4 arrays):
//   A[z, m, k]: A_K_CONTIGUOUS — rows along k (row-major A); else columns along m (a transposed view).
//     A_IM2COL (with A_K_CONTIGUOUS, batch 1): the implicit im2col matrix of a convolution over a
//     channels-last image, never materialised; see fetch_im2col.
//   B[z, k, n]: B_N_CONTIGUOUS — rows along n (row-major B); else columns along k (Wᵀ of a linear weight),
//     which may be packed integer weights (PACKED_BITS != 0: packed.wgsl; the same for every z).
//   bias[z, m, n] and residual[z, m, n] read through arbitrary strides (0 = broadcast), only when HAS_BIAS /
//   HAS_RESIDUAL.
//   C contiguous [batch, M, N], stored by element (N need not be a multiple of 4; stores are a small part
//   of the traffic next to the K-long loop).
// A k-step's TILE_M x TILE_K tile of A is fetched as vec4s numbered e = 0, 1, ... along the operand's
// contiguous axis (a_element), so neighbouring threads fetch neighbouring vec4s; B's TILE_K x TILE_N tile
// likewise (b_element). Elements outside A or B read as 0, so partial tiles need no other care.

//! include activation.wgsl
//! include bounded.wgsl

override A_K_CONTIGUOUS: bool = true;
override A_IM2COL: bool = false;
override B_N_CONTIGUOUS: bool = true;
override ACTIVATION: u32 = ACT_NONE;

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> a: array<vec4<A_T>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<B_T>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<C_T>;
@group(0) @binding(4) var<storage, read> residual: array<R_T>;
@group(0) @binding(5) var<uniform> p: Params;

//! include gemm_b_vec4.wgsl
//! include packed.wgsl

// The K the main loop walks: p.K, never more than the longer operand holds elements (bounded.wgsl).
fn k_steps() -> u32 {
  return bounded(p.K, 4u * max(arrayLength(&a), arrayLength(&b)));
}

// (m, k) in its tile of the first element of vec4 number e of a k-step's A tile: with A_K_CONTIGUOUS, e walks
// the tile's rows m, TILE_K/4 vec4s each (the vec4 holds k .. k+3); otherwise its k-rows, TILE_M/4 vec4s each
// (the vec4 holds m .. m+3).
fn a_element(e: u32) -> vec2<u32> {
  if (A_K_CONTIGUOUS) {
    return vec2<u32>(e / (TILE_K / 4u), (e % (TILE_K / 4u)) * 4u);
  }
  return vec2<u32>((e % (TILE_M / 4u)) * 4u, e / (TILE_M / 4u));
}

// (k, n) of the first element of vec4 number e of a k-step's B tile: with B_N_CONTIGUOUS, e walks the k-rows,
// TILE_N/4 vec4s each (the vec4 holds n .. n+3); otherwise its columns n, TILE_K/4 vec4s each (k .. k+3).
fn b_element(e: u32) -> vec2<u32> {
  if (B_N_CONTIGUOUS) {
    return vec2<u32>(e / (TILE_N / 4u), (e % (TILE_N / 4u)) * 4u);
  }
  return vec2<u32>((e % (TILE_K / 4u)) * 4u, e / (TILE_K / 4u));
}

fn fetch_a(base: u32, m0: u32, k0: u32, e: u32) -> vec4<f32> {
  let mk = a_element(e);
  let m = m0 + mk.x;
  let k = k0 + mk.y;
  if (m >= p.M || k >= p.K) {
    return vec4<f32>(0.0);
  }
  if (A_IM2COL) {
    return fetch_im2col(m, k);
  }
  return vec4<f32>(a[(base + m * p.a_strides.y + k * p.a_strides.z) / 4u]);
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
  return vec4<f32>(a[at / 4u]);
}

fn fetch_b(base: u32, k0: u32, n0: u32, e: u32) -> vec4<f32> {
  let kn = b_element(e);
  let k = k0 + kn.x;
  let n = n0 + kn.y;
  if (k >= p.K || n >= p.N) {
    return vec4<f32>(0.0);
  }
  if (PACKED_BITS != 0u) {  // B = Wᵀ of packed weights (columns along k): decoded here, in registers
    return packed_vec4(p.packed, n, k);
  }
  return b_vec4(base + k * p.b_strides.y + n * p.b_strides.z);
}

// Stores one finished vec4 of outputs (C[z, m, n .. n+3]), applying activation `act` (ACTIVATION, or ACT_NONE
// when the kernel activates in a pass of its own: activate_stored).
fn finish(z: u32, m: u32, n: u32, v: vec4<f32>, act: u32) {
  if (m >= p.M) {
    return;
  }
  let row = (z * p.M + m) * p.N;
  for (var j = 0u; j < 4u; j++) {
    if (n + j < p.N) {
      c[row + n + j] = C_T(activate(epilogue_sum(z, m, n + j, v[j]), act, p.act_lo, p.act_hi));
    }
  }
}

// The activation a kernel's stores apply: ACTIVATION where it is a compare, a clamp or a multiply. The others
// (exp, erf, tanh) run as a pass over the stored outputs once the accumulators are dead (activate_stored,
// where ACTIVATION != stored_activation()): inlined into the stores, an erf-based GELU for 64 accumulators
// made the H200's driver keep them in local memory (a 128x128 tile ran 10x slower with GELU than without),
// and a pass for a cheap one re-reads every output (and made a CPU adapter's compiler take seconds).
fn stored_activation() -> u32 {
  let cheap = ACTIVATION == ACT_RELU || ACTIVATION == ACT_CLAMP || ACTIVATION == ACT_LEAKY_RELU;
  return select(ACT_NONE, ACTIVATION, cheap);
}

// Applies ACTIVATION to 4 outputs this invocation stored before (a read of its own writes: program order).
fn activate_stored(z: u32, m: u32, n: u32) {
  if (m >= p.M) {
    return;
  }
  let row = (z * p.M + m) * p.N;
  for (var j = 0u; j < 4u; j++) {
    if (n + j < p.N) {
      c[row + n + j] = C_T(activate(f32(c[row + n + j]), ACTIVATION, p.act_lo, p.act_hi));
    }
  }
}
