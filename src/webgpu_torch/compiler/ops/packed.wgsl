// packed.wgsl — decoding packed integer weights (docs/artifact.md, "Packed weights"; packing.py), shared by
// every kernel that reads them. Not a kernel: the including kernel binds the words as
// `b: array<vec4<B_T>>` (B_T = u32 where they are packed) and passes the packing its Params carry:
// (R: u32 words per row of codes, group, G: groups per row, the word where the group parameters start).
// PACKED_BITS (4 or 8) is substituted; it stays 0 in a kernel built for float weights, which then never
// calls these functions (they still compile for any B_T).

const PACKED_BITS: u32 = 0u;
override PACKED_ZERO_POINTS: bool = false;
const PACKED_PER_WORD: u32 = 32u / max(PACKED_BITS, 1u);  // codes per u32 word
const PACKED_MASK: u32 = (1u << PACKED_BITS) - 1u;
const PACKED_MIDPOINT: f32 = f32((1u << PACKED_BITS) / 2u);  // the zero point of a group that stores none

fn packed_u32(i: u32) -> u32 {
  return vec4<u32>(b[i / 4u])[i % 4u];
}

// The word holding the code of element (n, k).
fn packed_word(packing: vec4<u32>, n: u32, k: u32) -> u32 {
  return n * packing.x + k / PACKED_PER_WORD;
}

// The scale and zero point of element (n, k)'s group, as their bits (the zero point's is 0 when the groups
// store none).
fn packed_group(packing: vec4<u32>, n: u32, k: u32) -> vec2<u32> {
  if (PACKED_ZERO_POINTS) {
    let at = packing.w + 2u * (n * packing.z + k / packing.y);
    return vec2<u32>(packed_u32(at), packed_u32(at + 1u));
  }
  return vec2<u32>(packed_u32(packing.w + n * packing.z + k / packing.y), 0u);
}

// Elements k .. k+3 of a row (k % 4 == 0: one word and one group hold them) from `word`, the word holding
// them, and their group: (code − zero) · scale, the difference exact, so each value is rounded once.
fn packed_values(word: u32, k: u32, group: vec2<u32>) -> vec4<f32> {
  let shifts = (vec4<u32>(0u, 1u, 2u, 3u) + k % PACKED_PER_WORD) * PACKED_BITS;
  let codes = vec4<f32>((vec4<u32>(word) >> shifts) & vec4<u32>(PACKED_MASK));
  let zero = select(PACKED_MIDPOINT, bitcast<f32>(group.y), PACKED_ZERO_POINTS);
  return (codes - zero) * bitcast<f32>(group.x);
}

// Elements (n, k .. k+3), k % 4 == 0.
fn packed_vec4(packing: vec4<u32>, n: u32, k: u32) -> vec4<f32> {
  return packed_values(packed_u32(packed_word(packing, n, k)), k, packed_group(packing, n, k));
}
