// elementwise.wgsl — out[i] = act(f(a[i], b[i], c[i])) for every element of a strided output view.
//
// Layout: `a`, `b` and `c` are strided views broadcast to the output's shape (stride 0 on broadcast dims), of
//   up to 8 dims, their element strides and offsets in Params; `out` is a strided view too (a slice of a
//   concatenation, usually dense). With CONTIGUOUS every view is dense and shaped like the output, so element
//   i is read and written at offset + i. With B_SCALAR the second operand is Params.scalar instead of `b`;
//   `c` is read by `where` and `clamp` alone. Operands an op does not read are bound to `a`'s buffer.
// Types: A, B, C are the operands' storage types and Out the output's (f32, i32, or u32 for bool), set by
//   alias substitution. Every operand is converted to the compute type T on load (the op's promoted dtype:
//   the result's for arithmetic, the inputs' for comparisons) and the result to Out on store, so one source
//   serves float, integer and boolean arithmetic, comparisons, `where` and casts. Float-only functions take
//   f32(x) and integer-only ones i32(x), so the source compiles for every T; the lowering pairs each op only
//   with the types torch allows it. Ops whose integer and float forms differ (floor division, remainder)
//   branch on FLOAT_T.
// NaN: torch's semantics, not the GPU's: maximum, minimum and clamp return NaN when an operand is NaN, fmax
//   and fmin the other operand; isnan / isinf / signbit / copysign work on bits (ieee.wgsl); domain errors of
//   the float functions give NaN (math.wgsl).
// Geometry: one thread per output element, 256 per workgroup, over a grid folded to fit 65,535 workgroups per
//   dimension; threads past `numel` exit at once.
// The op is an override constant; its codes are the OP_* constants below (the lowering reads them from here).
// The activation `act` (ACTIVATION, from activation.wgsl; float only) is how relu, sigmoid, gelu, clamp … run:
// as the epilogue of a copy, or fused into the arithmetic op that produces their input.

//! include activation.wgsl
//! include math.wgsl

const OP_COPY: u32 = 0u;       // also every cast: Out(a)
const OP_ADD: u32 = 1u;        // a + alpha * b
const OP_SUB: u32 = 2u;        // a - alpha * b
const OP_MUL: u32 = 3u;
const OP_DIV: u32 = 4u;
const OP_RSUB: u32 = 5u;       // b - alpha * a
const OP_NEG: u32 = 6u;
const OP_ABS: u32 = 7u;
const OP_RECIPROCAL: u32 = 8u;
const OP_EXP: u32 = 9u;
const OP_LOG: u32 = 10u;
const OP_SQRT: u32 = 11u;
const OP_RSQRT: u32 = 12u;
const OP_SIN: u32 = 13u;
const OP_COS: u32 = 14u;
const OP_POW: u32 = 15u;       // a ** b
const OP_EQ: u32 = 16u;        // comparisons produce bool (Out = u32)
const OP_NE: u32 = 17u;        // true where either is NaN
const OP_LT: u32 = 18u;
const OP_LE: u32 = 19u;
const OP_GT: u32 = 20u;
const OP_GE: u32 = 21u;
const OP_AND: u32 = 22u;       // logical: operands are truth values (nonzero; NaN is true)
const OP_OR: u32 = 23u;
const OP_NOT: u32 = 24u;
const OP_WHERE: u32 = 25u;     // a ? b : c
const OP_MAXIMUM: u32 = 26u;
const OP_MINIMUM: u32 = 27u;
const OP_ARANGE: u32 = 28u;    // scalar + alpha * i (i: the flat output index); reads no operand
const OP_XOR: u32 = 29u;       // logical
const OP_BITAND: u32 = 30u;    // bitwise, on integers and bools
const OP_BITOR: u32 = 31u;
const OP_BITXOR: u32 = 32u;
const OP_BITNOT: u32 = 33u;
const OP_CLAMP: u32 = 34u;     // min(max(a, b), c)
const OP_REMAINDER: u32 = 35u; // a - floor(a / b) * b: the sign of b
const OP_FMOD: u32 = 36u;      // a - trunc(a / b) * b: the sign of a
const OP_DIV_FLOOR: u32 = 37u;
const OP_DIV_TRUNC: u32 = 38u;
const OP_ATAN2: u32 = 39u;     // atan2(a, b)
const OP_SIGN: u32 = 40u;
const OP_ISNAN: u32 = 41u;
const OP_ISINF: u32 = 42u;
const OP_CEIL: u32 = 43u;
const OP_FLOOR: u32 = 44u;
const OP_TRUNC: u32 = 45u;
const OP_ROUND: u32 = 46u;     // round(a * alpha) / alpha, half to even (round.decimals: alpha = 10^decimals)
const OP_ROUND_TENS: u32 = 47u;  // round(a / alpha) * alpha (round.decimals with decimals < 0: alpha = 10^-decimals)
const OP_ELU: u32 = 48u;       // scalar * (a > 0 ? a : alpha * expm1(beta * a))
const OP_EXPM1: u32 = 49u;
const OP_LOG1P: u32 = 50u;
const OP_LOG2: u32 = 51u;
const OP_LOG10: u32 = 52u;
const OP_ERF: u32 = 53u;
const OP_ERFINV: u32 = 54u;
const OP_TAN: u32 = 55u;
const OP_ASIN: u32 = 56u;
const OP_ACOS: u32 = 57u;
const OP_ATAN: u32 = 58u;
const OP_SINH: u32 = 59u;
const OP_COSH: u32 = 60u;
const OP_ASINH: u32 = 61u;
const OP_ACOSH: u32 = 62u;
const OP_ATANH: u32 = 63u;
const OP_ROUND_F16: u32 = 64u;   // a rounded to float16 (to nearest even; kept as f32): a cast to float16
const OP_ROUND_BF16: u32 = 65u;  // a rounded to bfloat16 likewise: a cast to bfloat16
const OP_EXP2: u32 = 66u;
const OP_FMAX: u32 = 67u;      // the larger, ignoring a NaN (NaN only where both are)
const OP_FMIN: u32 = 68u;
const OP_COPYSIGN: u32 = 69u;  // |a| with the sign bit of b (-0.0 and -NaN count as negative)
const OP_HYPOT: u32 = 70u;     // sqrt(a² + b²) without overflow; inf when either is ±inf, even against NaN
const OP_SIGNBIT: u32 = 71u;   // the sign bit of a (bool out)
const OP_ERFC: u32 = 72u;
const OP_LGAMMA: u32 = 73u;    // ln |Γ(a)|
const OP_DIGAMMA: u32 = 74u;
const OP_ANGLE: u32 = 75u;     // of a real number: pi below 0, else 0 (NaN kept)
const OP_TRIGAMMA: u32 = 76u;  // ψ'(a): polygamma(1, a)
const OP_ROPE: u32 = 77u;      // a * b + rotate_half(a) * c along the innermost dim, alpha = half its size
const OP_GATED: u32 = 78u;     // gate(a) * b: gate the activation GATE, alpha and beta its lo and hi

alias A = f32;
alias B = f32;
alias C = f32;
alias T = f32;
alias Out = f32;

const FLOAT_T = T(1) / T(2) != T(0);  // whether T is f32 (an integer quotient truncates to 0)

override OP: u32 = OP_COPY;
override B_SCALAR: bool = false;
override CONTIGUOUS: bool = false;
override ACTIVATION: u32 = ACT_NONE;
override GATE: u32 = ACT_NONE;  // OP_GATED's activation of its first operand

const WORKGROUP: u32 = 256u;

struct Params {
  numel: u32,
  ndim: u32,
  a_offset: u32,
  b_offset: u32,
  c_offset: u32,
  out_offset: u32,
  alpha: f32,
  beta: f32,
  scalar: f32,
  act_lo: f32,
  act_hi: f32,
  shape: array<vec4<u32>, 2>,      // output shape, dims 0..ndim-1
  a_strides: array<vec4<u32>, 2>,
  b_strides: array<vec4<u32>, 2>,
  c_strides: array<vec4<u32>, 2>,
  out_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> a: array<A>;
@group(0) @binding(1) var<storage, read> b: array<B>;
@group(0) @binding(2) var<storage, read> c: array<C>;
@group(0) @binding(3) var<storage, read_write> out: array<Out>;
@group(0) @binding(4) var<uniform> p: Params;

// f(x) of a function defined for x >= 0 (sqrt, rsqrt): NaN below, which WGSL leaves indeterminate.
fn below_zero_nan(fx: f32, x: f32) -> f32 {
  return select(fx, nan_f32(), x < 0.0);
}

// x ** y for integers, by squaring; a negative exponent leaves 0 but for x = ±1 (the integer part of 1 / x^-y).
fn pow_int(x: i32, y: i32) -> i32 {
  if (y < 0) {
    return select(select(0, 1, x == 1), select(1, -1, (y & 1) == 1), x == -1);
  }
  var r = 1;
  var base = x;
  for (var e = y; e > 0; e >>= 1u) {
    if ((e & 1) == 1) {
      r *= base;
    }
    base *= base;
  }
  return r;
}

fn has_nan(x: T, y: T) -> bool {
  return is_nan(f32(x)) || is_nan(f32(y));
}

// A value as a condition: nonzero, NaN included (an ordered x != 0 is false for NaN on some backends).
fn truth(x: T) -> bool {
  return x != T(0) || is_nan(f32(x));
}

// torch.maximum / minimum: NaN if either is (x + y is then NaN).
fn maximum(x: T, y: T) -> T {
  return select(max(x, y), x + y, has_nan(x, y));
}

fn minimum(x: T, y: T) -> T {
  return select(min(x, y), x + y, has_nan(x, y));
}

// Integer fmod and remainder: WGSL's % truncates toward zero (the sign of x), as C's; remainder moves a
// nonzero result to the sign of y. Floats go through fmod_f32 (math.wgsl).
fn fmod_t(x: T, y: T) -> T {
  return select(x % y, T(fmod_f32(f32(x), f32(y))), FLOAT_T);
}

fn remainder_t(x: T, y: T) -> T {
  let r = fmod_t(x, y);
  return select(r, r + y, r != T(0) && (r < T(0)) != (y < T(0)));
}

fn floor_div_t(x: T, y: T) -> T {
  if (FLOAT_T) {
    return T(floor_div_f32(f32(x), f32(y)));
  }
  let q = x / y;
  return select(q, q - T(1), x % y != T(0) && (x < T(0)) != (y < T(0)));
}

fn div_trunc_t(x: T, y: T) -> T {
  return select(x / y, T(trunc(f32(x) / f32(y))), FLOAT_T);
}

fn apply(x: T, y: T, z: T) -> Out {
  switch OP {
    case OP_ADD: { return Out(x + T(p.alpha) * y); }
    case OP_SUB: { return Out(x - T(p.alpha) * y); }
    case OP_RSUB: { return Out(y - T(p.alpha) * x); }
    case OP_MUL: { return Out(x * y); }
    case OP_GATED: { return Out(activate(f32(x), GATE, p.alpha, p.beta) * f32(y)); }
    case OP_DIV: { return Out(x / y); }
    case OP_NEG: { return Out(T(0) - x); }
    case OP_ABS: { return Out(abs(x)); }
    case OP_MAXIMUM: { return Out(maximum(x, y)); }
    case OP_MINIMUM: { return Out(minimum(x, y)); }
    case OP_FMAX: { return Out(select(select(max(x, y), x, is_nan(f32(y))), y, is_nan(f32(x)))); }
    case OP_FMIN: { return Out(select(select(min(x, y), x, is_nan(f32(y))), y, is_nan(f32(x)))); }
    case OP_CLAMP: { return Out(minimum(maximum(x, y), z)); }
    case OP_SIGN: { return Out(T(x > T(0)) - T(x < T(0))); }  // 0 for NaN, as torch
    case OP_REMAINDER: { return Out(remainder_t(x, y)); }
    case OP_FMOD: { return Out(fmod_t(x, y)); }
    case OP_DIV_FLOOR: { return Out(floor_div_t(x, y)); }
    case OP_DIV_TRUNC: { return Out(div_trunc_t(x, y)); }
    case OP_RECIPROCAL: { return Out(1.0 / f32(x)); }
    case OP_EXP: { return Out(exp(f32(x))); }
    case OP_EXPM1: { return Out(expm1_f32(f32(x))); }
    case OP_LOG: { return Out(log_f32(f32(x))); }
    case OP_LOG1P: { return Out(log1p_f32(f32(x))); }
    case OP_LOG2: { return Out(log_f32(f32(x)) * 1.4426950408889634); }  // 1 / ln 2
    case OP_LOG10: { return Out(log_f32(f32(x)) * 0.4342944819032518); }  // 1 / ln 10
    case OP_SQRT: { return Out(below_zero_nan(sqrt(f32(x)), f32(x))); }
    case OP_RSQRT: { return Out(below_zero_nan(inverseSqrt(f32(x)), f32(x))); }
    case OP_SIN: { return Out(sin(f32(x))); }
    case OP_COS: { return Out(cos(f32(x))); }
    case OP_TAN: { return Out(tan(f32(x))); }
    case OP_ASIN: { return Out(asin_f32(f32(x))); }
    case OP_ACOS: { return Out(acos_f32(f32(x))); }
    case OP_ATAN: { return Out(atan_f32(f32(x))); }
    case OP_ATAN2: { return Out(atan2_f32(f32(x), f32(y))); }
    case OP_EXP2: { return Out(exp2(f32(x))); }
    case OP_ERFC: { return Out(erfc_f32(f32(x))); }
    case OP_LGAMMA: { return Out(lgamma_f32(f32(x))); }
    case OP_DIGAMMA: { return Out(digamma_f32(f32(x))); }
    case OP_TRIGAMMA: { return Out(trigamma_f32(f32(x))); }
    case OP_ANGLE: { return Out(select(select(0.0, 3.141592653589793, f32(x) < 0.0), f32(x), is_nan(f32(x)))); }
    case OP_COPYSIGN: {
      return Out(bitcast<f32>((bitcast<u32>(f32(x)) & 0x7fffffffu) | (bitcast<u32>(f32(y)) & 0x80000000u)));
    }
    case OP_HYPOT: { return Out(hypot_f32(f32(x), f32(y))); }
    case OP_SINH: { return Out(sinh_f32(f32(x))); }
    case OP_COSH: { return Out(cosh_f32(f32(x))); }
    case OP_ASINH: { return Out(asinh_f32(f32(x))); }
    case OP_ACOSH: { return Out(acosh_f32(f32(x))); }
    case OP_ATANH: { return Out(atanh_f32(f32(x))); }
    case OP_ERF: { return Out(erf_accurate(f32(x))); }
    case OP_ERFINV: { return Out(erfinv_f32(f32(x))); }
    case OP_CEIL: { return Out(ceil(f32(x))); }
    case OP_FLOOR: { return Out(floor(f32(x))); }
    case OP_TRUNC: { return Out(trunc(f32(x))); }
    case OP_ROUND: { return Out(round(f32(x) * p.alpha) / p.alpha); }
    case OP_ROUND_TENS: { return Out(round(f32(x) / p.alpha) * p.alpha); }
    case OP_ROUND_F16: { return Out(round_to_f16(f32(x))); }
    case OP_ROUND_BF16: { return Out(round_to_bf16(f32(x))); }
    case OP_ELU: {
      let v = f32(x);
      return Out(p.scalar * select(p.alpha * expm1_f32(p.beta * v), v, v > 0.0));
    }
    case OP_POW: { return select(Out(pow_int(i32(x), i32(y))), Out(pow_f32(f32(x), f32(y))), FLOAT_T); }
    case OP_ISNAN: { return Out(is_nan(f32(x))); }
    case OP_ISINF: { return Out(is_inf(f32(x))); }
    case OP_SIGNBIT: { return Out(select(x < T(0), sign_bit(f32(x)), FLOAT_T)); }
    case OP_EQ: { return Out(x == y); }
    case OP_NE: { return Out(x != y || has_nan(x, y)); }
    case OP_LT: { return Out(x < y); }
    case OP_LE: { return Out(x <= y); }
    case OP_GT: { return Out(x > y); }
    case OP_GE: { return Out(x >= y); }
    case OP_AND: { return Out(truth(x) && truth(y)); }
    case OP_OR: { return Out(truth(x) || truth(y)); }
    case OP_XOR: { return Out(truth(x) != truth(y)); }
    case OP_NOT: { return Out(!truth(x)); }
    case OP_BITAND: { return Out(i32(x) & i32(y)); }
    case OP_BITOR: { return Out(i32(x) | i32(y)); }
    case OP_BITXOR: { return Out(i32(x) ^ i32(y)); }
    case OP_BITNOT: { return Out(~i32(x)); }
    case OP_WHERE: { return Out(select(z, y, truth(x))); }
    default: { return Out(x); }
  }
}

// transformers' rotate_half(a) at output element i, whose `a` element is at ia: cat(-a2, a1) over the
// innermost dim of size 2h (h = alpha), the output's innermost too, so i % 2h is the position along it.
fn rotated_half(ia: u32, i: u32) -> T {
  let h = u32(p.alpha);
  let last = max(p.ndim, 1u) - 1u;
  let step = h * p.a_strides[last / 4u][last % 4u];
  if (i % (2u * h) < h) {
    return T(-f32(a[ia + step]));  // through f32: the source compiles for every T (rope is float only)
  }
  return T(a[ia - step]);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let i = gid.x + gid.y * nwg.x * WORKGROUP;
  if (i >= p.numel) {
    return;
  }
  var ia = p.a_offset + i;
  var ib = p.b_offset + i;
  var ic = p.c_offset + i;
  var io = p.out_offset + i;
  if (!CONTIGUOUS) {
    ia = p.a_offset;
    ib = p.b_offset;
    ic = p.c_offset;
    io = p.out_offset;
    var rest = i;
    for (var d = min(p.ndim, 8u); d > 0u; d--) {  // Params carry 8 dims
      let k = d - 1u;
      let n = p.shape[k / 4u][k % 4u];
      let e = rest % n;
      rest /= n;
      ia += e * p.a_strides[k / 4u][k % 4u];
      ib += e * p.b_strides[k / 4u][k % 4u];
      ic += e * p.c_strides[k / 4u][k % 4u];
      io += e * p.out_strides[k / 4u][k % 4u];
    }
  }
  var y = T(p.scalar);
  if (!B_SCALAR) {
    y = T(b[ib]);
  }
  var z = T(0);
  if (OP == OP_WHERE || OP == OP_CLAMP || OP == OP_ROPE) {
    z = T(c[ic]);
  }
  var r: Out;
  if (OP == OP_ARANGE) {
    r = Out(T(p.scalar) + T(p.alpha) * T(i));
  } else if (OP == OP_ROPE) {
    r = Out(T(a[ia]) * y + rotated_half(ia, i) * z);
  } else {
    r = apply(T(a[ia]), y, z);
  }
  if (ACTIVATION != ACT_NONE) {
    r = Out(activate(f32(r), ACTIVATION, p.act_lo, p.act_hi));
  }
  out[io] = r;
}
