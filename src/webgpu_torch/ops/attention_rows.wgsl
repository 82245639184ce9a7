// attention_rows.wgsl — reading attention's operands, shared by attention.wgsl and attention_split.wgsl. Not a
// kernel: kernels include it, and declare the `p` (Params: skv, m_offset, m_strides) and `mask` it reads.

// Rows of q, k and v are read 4 elements at a time, d .. d + 3 of a row of n at `base` with element stride
// `stride`: their indices, clamped in bounds, and which of them are in the row (the rest read as zero).
fn at4(base: u32, stride: u32, d: u32, n: u32) -> vec4<u32> {
  return base + min(vec4<u32>(d) + vec4<u32>(0u, 1u, 2u, 3u), vec4<u32>(n - 1u)) * stride;
}

fn in4(d: u32, n: u32) -> vec4<bool> {
  return vec4<u32>(d) + vec4<u32>(0u, 1u, 2u, 3u) < vec4<u32>(n);
}

// MASK_KIND 3: how many keys row i of head (b, h) sees, in [0, Skv]: one past its last visible key
// mask[b, h, i], clamped, so no value makes a loop run past the keys there are.
fn live_keys(b: u32, h: u32, i: u32) -> u32 {
  let last = i32(mask[p.m_offset + b * p.m_strides.x + h * p.m_strides.y + i * p.m_strides.z]);
  return u32(clamp(last + 1, 0, i32(p.skv)));
}
