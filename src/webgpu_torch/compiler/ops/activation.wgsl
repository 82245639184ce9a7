// activation.wgsl — the pointwise activations a kernel's epilogue can apply. Not a kernel: kernels include it
// (`//! include activation.wgsl`), so every family computes an activation with the same code.
//
// activate(x, act, lo, hi): act is one of the ACT_* codes below; lo and hi are ACT_CLAMP's bounds, and lo is
// ACT_LEAKY_RELU's negative slope. NaN propagates through every one of them, as in torch (relu, clamp and
// tanh test for it: WGSL's max, clamp and tanh need not return it).
// The Python side reads the codes from this file (ops/epilogue.py), so they are declared once.

//! include ieee.wgsl

const ACT_NONE: u32 = 0u;
const ACT_RELU: u32 = 1u;
const ACT_CLAMP: u32 = 2u;       // clamp(x, lo, hi): clamp, hardtanh, ReLU6
const ACT_SIGMOID: u32 = 3u;
const ACT_TANH: u32 = 4u;
const ACT_GELU: u32 = 5u;        // x·Φ(x) with erf
const ACT_GELU_TANH: u32 = 6u;   // the tanh approximation
const ACT_LEAKY_RELU: u32 = 7u;  // x < 0 ? lo·x : x
const ACT_SILU: u32 = 8u;        // x·sigmoid(x): Llama's MLP gate

// erf by Abramowitz & Stegun 7.1.26: |error| < 1.5e-7 over all x, below float32's resolution of erf near ±1.
fn erf_f32(x: f32) -> f32 {
  return sign(x) * (1.0 - erfc_of_abs(abs(x)));
}

// erfc(a) for a >= 0, the part of erf that Abramowitz & Stegun 7.1.26 approximates (absolute error 1.5e-7).
fn erfc_of_abs(a: f32) -> f32 {
  let t = 1.0 / (1.0 + 0.3275911 * a);
  let poly = t * (0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429))));
  return poly * exp(-a * a);
}

// tanh clamped to ±10 first (some drivers evaluate it through exp and return NaN for large |x|; tanh(±10)
// rounds to ±1), NaN kept.
fn tanh_f32(x: f32) -> f32 {
  return select(tanh(clamp(x, -10.0, 10.0)), x, is_nan(x));
}

fn activate(x: f32, act: u32, lo: f32, hi: f32) -> f32 {
  switch act {
    case ACT_RELU: { return select(max(x, 0.0), x, is_nan(x)); }
    case ACT_CLAMP: { return select(clamp(x, lo, hi), x, is_nan(x)); }
    // exp(-x) overflows to +inf for x < -88, and 1 / (1 + inf) = 0 is the right limit.
    case ACT_SIGMOID: { return 1.0 / (1.0 + exp(-x)); }
    case ACT_TANH: { return tanh_f32(x); }
    case ACT_GELU: { return 0.5 * x * (1.0 + erf_f32(x * 0.7071067811865476)); }
    case ACT_GELU_TANH: {
      let u = 0.7978845608028654 * (x + 0.044715 * x * x * x);
      return 0.5 * x * (1.0 + tanh(clamp(u, -10.0, 10.0)));
    }
    case ACT_LEAKY_RELU: { return select(x, lo * x, x < 0.0); }
    // x / (1 + e^-x): -inf gives NaN as torch's -inf·0 does; below -88 the quotient is a signed zero.
    case ACT_SILU: { return x / (1.0 + exp(-x)); }
    default: { return x; }
  }
}
