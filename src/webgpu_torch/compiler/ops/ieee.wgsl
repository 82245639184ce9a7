// ieee.wgsl — NaN and infinity, tested and made through their bit patterns. Not a kernel: kernels include it
// (`//! include ieee.wgsl`; activation.wgsl does, so every kernel with an epilogue has it).
//
// WGSL lets an implementation assume that no float is NaN or infinite, so `x != x` may fold to false and
// max(x, NaN) may return x. Torch's semantics need NaN to propagate through max, clamp, relu and the
// reductions, so kernels test for it here, on the bits, which no compiler can assume away. WGSL also rejects
// NaN and infinity as constant expressions, so they are made from runtime values.

fn is_nan(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) > 0x7f800000u;
}

fn is_inf(x: f32) -> bool {
  return (bitcast<u32>(x) & 0x7fffffffu) == 0x7f800000u;
}

// Whether the sign bit is set: true for -0.0 as well as for negative numbers.
fn sign_bit(x: f32) -> bool {
  return (bitcast<u32>(x) >> 31u) == 1u;
}

fn nan_f32() -> f32 {
  var bits = 0x7fc00000u;
  return bitcast<f32>(bits);
}

fn inf_f32() -> f32 {
  var bits = 0x7f800000u;
  return bitcast<f32>(bits);
}

// max and min that return NaN when either operand is NaN (torch.maximum, clamp, amax), where WGSL's may not.
fn max_nan(a: f32, b: f32) -> f32 {
  return select(max(a, b), a + b, is_nan(a) || is_nan(b));
}

fn min_nan(a: f32, b: f32) -> f32 {
  return select(min(a, b), a + b, is_nan(a) || is_nan(b));
}

// 2^e for e in [0, 126] at max |x|'s exponent (`big`): x / 2^e < 2 for every x of a row, whose squares then
// cannot overflow; 1 where big < 2 (ordinary rows are not rescaled at all) and 2^126 for inf or NaN. Scaling
// by a power of two is exact.
fn power_of_two_scale(big: f32) -> f32 {
  let e = clamp(i32((bitcast<u32>(big) >> 23u) & 0xffu) - 127, 0, 126);
  return bitcast<f32>(u32(127 + e) << 23u);
}

// x rounded to the nearest float16 (ties to even), kept as f32: from 65520 up ±inf, NaN kept, float16's
// subnormals (a quantum of 2^-24) below 2^-14, ±0 from 2^-25 down. On the bits: compilers may fold
// f32(f16(x)) into x, and WGSL leaves the rounding of a conversion (and pack2x16float's range) open.
fn round_to_f16(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  let e = (bits >> 23u) & 0xffu;  // biased exponent
  if (e == 0xffu) {
    return x;
  }
  var magnitude = 0.0;
  if (e >= 102u) {  // |x| >= 2^-25; anything smaller rounds to 0
    let m = (bits & 0x7fffffu) | 0x800000u;
    let drop = select(13u, 126u - e, e < 113u);  // fraction bits float16 cannot hold (13, more below 2^-14)
    let half = 1u << (drop - 1u);
    let rest = m & ((half << 1u) - 1u);
    var q = m >> drop;
    if (rest > half || (rest == half && (q & 1u) == 1u)) {
      q += 1u;
    }
    // q units in float16's last place, 2^(max(e, 113) - 137): q <= 2^11, so the product is exact.
    magnitude = f32(q) * bitcast<f32>((max(e, 113u) - 10u) << 23u);
    magnitude = select(magnitude, inf_f32(), magnitude > 65504.0);
  }
  return select(magnitude, -magnitude, sign_bit(x));
}

// x rounded to the nearest bfloat16 (ties to even), kept as f32: beyond bfloat16's largest finite value
// ±inf, NaN kept.
fn round_to_bf16(x: f32) -> f32 {
  let bits = bitcast<u32>(x);
  if (is_nan(x)) {
    return x;
  }
  return bitcast<f32>((bits + 0x7fffu + ((bits >> 16u) & 1u)) & 0xffff0000u);
}
