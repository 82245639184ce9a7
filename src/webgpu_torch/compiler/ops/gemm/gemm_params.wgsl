// gemm_params.wgsl — the uniform struct of the GEMM family's kernels and the arithmetic of their epilogue
// (included by each; declared once).
//
// A[z, m, k] = a[a_offset + z*a_strides.x + m*a_strides.y + k*a_strides.z], B[z, k, n], bias[z, m, n] and
// residual[z, m, n] likewise (element strides; 0 broadcasts); C is contiguous [batch, M, N]. Workgroups cover
// tiles_m x tiles_n output blocks per z (gemv.wgsl: tiles_m = 1, tiles_n column blocks).
// act_lo / act_hi are the clamp bounds of the fused activation (activation.wgsl).
// Split-K (the vec4 and subgroup-matrix kernels only; 1 and K elsewhere): `splits` slices of K, `k_part`
// long (a multiple of TILE_K), each a block of its own; slice s writes its partial product to
// C[s * batch + z], and carries neither bias, residual nor activation (gemm_split_sum.wgsl sums the slices,
// then applies them).
// Implicit im2col (gemm_operands.wgsl's A_IM2COL only; 0 elsewhere): A is read from a channels-last image
// of im_h x im_w pixels and im_c channels with element strides a_strides (b, h, w, -), for a conv of
// im_kw-wide taps, output rows im_ow wide and im_ohw pixels per image.

// B_T: the element type of B as stored: f32; f16 for constant weights kept in half precision (compile option
// weights="float16", a float16 model's weights); with B_BF16, u32 words holding two bfloat16 weights each (a
// bfloat16 model's), the lower half first; or u32 for packed integer weights (packed.wgsl, which the kernels
// that decode them include: B is then Wᵀ of a packed W [N, K], element (k, n) = W[n, k]). Every kernel widens
// what it reads to f32 (bfloat16 exactly, by shifting its bits into the high half of an f32: no optional
// feature); products accumulate in f32.
alias B_T = f32;
const B_BF16: bool = false;
// A_T, C_T, R_T: how A, C and the residual are stored: f32, or f16 activations (precision="float16",
// half_storage.py; then A and B may both be f16). Loads widen to f32, C is rounded as it is stored. A split K's
// slices (and so its C) stay f32.
alias A_T = f32;
alias C_T = f32;
alias R_T = f32;

struct Params {
  M: u32,
  N: u32,
  K: u32,
  batch: u32,
  tiles_m: u32,
  tiles_n: u32,
  splits: u32,
  k_part: u32,
  alpha: f32,
  beta: f32,
  act_lo: f32,
  act_hi: f32,
  a_offset: u32,
  b_offset: u32,
  bias_offset: u32,
  res_offset: u32,
  im_h: u32,
  im_w: u32,
  im_c: u32,
  im_kw: u32,
  im_ow: u32,
  im_ohw: u32,
  im_stride_h: u32,
  im_stride_w: u32,
  im_pad_h: u32,
  im_pad_w: u32,
  im_dil_h: u32,
  im_dil_w: u32,
  a_strides: vec4<u32>,     // (z, m, k, -)
  b_strides: vec4<u32>,     // (z, k, n, -)
  bias_strides: vec4<u32>,  // (z, m, n, -)
  res_strides: vec4<u32>,   // (z, m, n, -)
  packed: vec4<u32>,        // B's packed layout (packed.wgsl) when B holds packed integer weights
}

override HAS_BIAS: bool = false;
override HAS_RESIDUAL: bool = false;

// Output (z, m, n) before its activation: alpha * acc + beta * bias + residual. Each kernel binds `bias` and
// `residual` (a placeholder where absent; read only under HAS_BIAS / HAS_RESIDUAL).
fn epilogue_sum(z: u32, m: u32, n: u32, acc: f32) -> f32 {
  var v = p.alpha * acc;
  if (HAS_BIAS) {
    v += p.beta * bias[p.bias_offset + z * p.bias_strides.x + m * p.bias_strides.y + n * p.bias_strides.z];
  }
  if (HAS_RESIDUAL) {
    v += f32(residual[p.res_offset + z * p.res_strides.x + m * p.res_strides.y + n * p.res_strides.z]);
  }
  return v;
}
