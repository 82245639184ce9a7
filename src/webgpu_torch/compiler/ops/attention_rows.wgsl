// attention_rows.wgsl — reading attention's operands, shared by attention.wgsl and attention_split.wgsl. Not a
// kernel: kernels include it, and declare the `p` (Params: skv and the k, v and mask offsets and strides),
// `mask` and the SAFE override it reads.

// Rows of q, k and v are read 4 elements at a time, d .. d + 3 of a row of n at `base` with element stride
// `stride`: their indices, clamped in bounds, and which of them are in the row (the rest read as zero).
fn at4(base: u32, stride: u32, d: u32, n: u32) -> vec4<u32> {
  return base + min(vec4<u32>(d) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(n - 1u)) * stride;
}

fn in4(d: u32, n: u32) -> vec4<bool> {
  return vec4<u32>(d) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n);
}

// Where head (b, g)'s keys and values start, and query row i's mask row.
fn key_base(b: u32, g: u32) -> u32 {
  return p.k_offset + b * p.k_strides.x + g * p.k_strides.y;
}

fn value_base(b: u32, g: u32) -> u32 {
  return p.v_offset + b * p.v_strides.x + g * p.v_strides.y;
}

fn mask_base(b: u32, h: u32, i: u32) -> u32 {
  return p.m_offset + b * p.m_strides.x + h * p.m_strides.y + i * p.m_strides.z;
}

// 1 / a row's sum of weights; a row whose every key is masked (sum 0) gives NaN as torch does, or 0 if SAFE.
fn row_inverse(sum: f32) -> f32 {
  var nan_bits = 0x7fc00000u;  // a runtime value: WGSL rejects NaN in constant expressions
  return select(1.0 / sum, select(bitcast<f32>(nan_bits), 0.0, SAFE), sum == 0.0);
}

// MASK_KIND 3: how many keys row i of head (b, h) sees, in [0, Skv]: one past its last visible key
// mask[b, h, i], clamped, so no value makes a loop run past the keys there are.
fn live_keys(b: u32, h: u32, i: u32) -> u32 {
  let last = i32(mask[mask_base(b, h, i)]);
  return u32(clamp(last + 1, 0, i32(p.skv)));
}
