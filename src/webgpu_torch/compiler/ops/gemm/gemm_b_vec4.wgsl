// gemm_b_vec4.wgsl — B's elements i .. i+3 (i a multiple of 4) as f32, for the kernels that bind B as
// array<vec4<B_T>> (gemm_params.wgsl's B_T): one vec4 of f32 or f16, or with B_BF16 half of a vec4 of u32
// words (eight bfloat16s), each widened exactly. Not a kernel: gemm_operands.wgsl and gemv.wgsl include it
// after gemm_params.wgsl and declare `b`.

fn b_vec4(i: u32) -> vec4<f32> {
  if (B_BF16) {
    let words = vec4<u32>(b[i / 8u]);  // B_T is u32: the words themselves
    let pair = select(words.xy, words.zw, (i & 4u) != 0u);
    let high = vec4<u32>(pair.x << 16u, pair.x & 0xffff0000u, pair.y << 16u, pair.y & 0xffff0000u);
    return bitcast<vec4<f32>>(high);
  }
  return vec4<f32>(b[i / 4u]);
}
