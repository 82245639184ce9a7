// math.wgsl — float32 functions WGSL lacks, or has with too little accuracy or an undefined edge, written to
// torch's results: within a few ulps, NaN outside their domain (WGSL leaves that indeterminate), and the
// values at ±0, ±1 and ±inf that torch gives. Not a kernel: elementwise.wgsl, special.wgsl and scan.wgsl
// include it (after activation.wgsl, whose erf_f32 and ieee.wgsl helpers it uses).
//
// Where WGSL's builtin is exact enough it is used as is (exp, sin, cos, tan, floor, round...).
// Rejected: exp(x) - 1 and log(1 + x) near 0, which lose all relative accuracy there; WGSL's log near 1
// (accurate only to 2^-21 absolute on [0.5, 2]) and its atan family (4096 ulp allowed; 2e-5 relative seen on
// lavapipe); asin(x) as WGSL defines it, atan2(x, sqrt(1 - x*x)), whose 1 - x*x cancels near ±1; the
// textbook log forms of asinh and acosh, whose x*x overflows beyond 1.8e19.

const LN2: f32 = 0.6931471805599453;
const PI: f32 = 3.141592653589793;

// exp(x) - 1: Taylor terms to x^9 (error < 3e-10 relative) where |x| < 0.5, exp(x) - 1 beyond.
fn expm1_f32(x: f32) -> f32 {
  if (abs(x) < 0.5) {
    var p = 1.0 + x * (1.0 / 9.0);
    p = 1.0 + x * (1.0 / 8.0) * p;
    p = 1.0 + x * (1.0 / 7.0) * p;
    p = 1.0 + x * (1.0 / 6.0) * p;
    p = 1.0 + x * (1.0 / 5.0) * p;
    p = 1.0 + x * (1.0 / 4.0) * p;
    p = 1.0 + x * (1.0 / 3.0) * p;
    p = 1.0 + x * 0.5 * p;
    return x * p;
  }
  return exp(x) - 1.0;
}

// log(1 + t) for t in [-0.5, 1]: 2·atanh(s) with s = t / (2 + t), |s| <= 1/3, as odd powers of s to s^19
// (error < 3e-10 relative). WGSL's log is accurate only to 2^-21 absolute on [0.5, 2], which is all of log(x)
// near x = 1.
fn log1p_series(t: f32) -> f32 {
  let s = t / (2.0 + t);
  let s2 = s * s;
  var p = 1.0 / 19.0;
  p = 1.0 / 17.0 + s2 * p;
  p = 1.0 / 15.0 + s2 * p;
  p = 1.0 / 13.0 + s2 * p;
  p = 1.0 / 11.0 + s2 * p;
  p = 1.0 / 9.0 + s2 * p;
  p = 1.0 / 7.0 + s2 * p;
  p = 1.0 / 5.0 + s2 * p;
  p = 1.0 / 3.0 + s2 * p;
  return 2.0 * s * (1.0 + s2 * p);
}

// log(x): the series on [0.5, 2] (where x - 1 is exact), WGSL's log (3 ulp) elsewhere; -inf at 0, NaN below.
fn log_f32(x: f32) -> f32 {
  if (x >= 0.5 && x <= 2.0) {
    return log1p_series(x - 1.0);
  }
  return select(select(log(x), -inf_f32(), x == 0.0), nan_f32(), x < 0.0);
}

// log(1 + x): the series for x in [-0.5, 1], log(1 + x) beyond (where 1 + x is exact below -0.5 and rounds by
// under 1e-7 of the result above 1).
fn log1p_f32(x: f32) -> f32 {
  if (x >= -0.5 && x <= 1.0) {
    return log1p_series(x);
  }
  return log_f32(1.0 + x);
}

// erf: the Taylor series to x^13 near 0 (A&S 7.1.26, erf_f32, is accurate only absolutely, 1.5e-7, which is
// most of erf(x) for tiny x), erf_f32 from |x| = 0.5 on.
fn erf_accurate(x: f32) -> f32 {
  if (abs(x) < 0.5) {
    let x2 = x * x;
    let series = 1.0 - x2 * (1.0 / 3.0 - x2 * (1.0 / 10.0 - x2 * (1.0 / 42.0 - x2 * (1.0 / 216.0
                 - x2 * (1.0 / 1320.0 - x2 * (1.0 / 9360.0))))));
    return 1.1283791670955126 * x * series;  // 2/sqrt(pi)
  }
  return erf_f32(x);
}

// erfinv by Giles' single-precision approximation ("Approximating the erfinv function", GPU Computing Gems
// Jade, 2011): with w = -log((1 - x)(1 + x)), a polynomial in w - 2.5 for w < 5 (|x| < 0.9966) and in
// sqrt(w) - 3 beyond, times x. (1 - x) is exact for |x| >= 0.5, so the tail keeps its accuracy up to the
// float32 neighbours of ±1. erfinv(±1) = ±inf; NaN beyond.
fn erfinv_f32(x: f32) -> f32 {
  let a = abs(x);
  if (a >= 1.0) {
    return select(select(inf_f32(), -inf_f32(), x < 0.0), nan_f32(), a > 1.0);
  }
  var w = -log_f32((1.0 - a) * (1.0 + a));
  var p: f32;
  if (w < 5.0) {
    w -= 2.5;
    p = 2.81022636e-08;
    p = 3.43273939e-07 + p * w;
    p = -3.5233877e-06 + p * w;
    p = -4.39150654e-06 + p * w;
    p = 0.00021858087 + p * w;
    p = -0.00125372503 + p * w;
    p = -0.00417768164 + p * w;
    p = 0.246640727 + p * w;
    p = 1.50140941 + p * w;
  } else {
    w = sqrt(w) - 3.0;
    p = -0.000200214257;
    p = 0.000100950558 + p * w;
    p = 0.00134934322 + p * w;
    p = -0.00367342844 + p * w;
    p = 0.00573950773 + p * w;
    p = -0.0076224613 + p * w;
    p = 0.00943887047 + p * w;
    p = 1.00167406 + p * w;
    p = 2.83297682 + p * w;
  }
  return p * x;
}

// atan(x): |x| > 1 folds to pi/2 - atan(1/x), then z > tan(pi/8) to pi/4 + atan((z - 1)/(z + 1)), leaving
// |z| <= 0.4142 for the odd Taylor series to z^19 (error < 3e-9). WGSL's atan, atan2, asin and acos are
// allowed 4096 ulp, and some backends come near it.
fn atan_f32(x: f32) -> f32 {
  let a = abs(x);
  let inverted = a > 1.0;
  var z = select(a, 1.0 / a, inverted);
  let shifted = z > 0.41421356;
  z = select(z, (z - 1.0) / (z + 1.0), shifted);
  let z2 = z * z;
  var p = -1.0 / 19.0;
  p = 1.0 / 17.0 + z2 * p;
  p = -1.0 / 15.0 + z2 * p;
  p = 1.0 / 13.0 + z2 * p;
  p = -1.0 / 11.0 + z2 * p;
  p = 1.0 / 9.0 + z2 * p;
  p = -1.0 / 7.0 + z2 * p;
  p = 1.0 / 5.0 + z2 * p;
  p = -1.0 / 3.0 + z2 * p;
  var r = z * (1.0 + z2 * p) + select(0.0, 0.25 * PI, shifted);
  r = select(r, 0.5 * PI - r, inverted);
  return select(r, -r, x < 0.0);
}

// atan2(y, x) with torch's values at the edges: ±0 or ±pi where y = ±0 (by the sign of x, -0 included), ±pi/2
// where x = 0, the diagonals where both are infinite.
fn atan2_f32(y: f32, x: f32) -> f32 {
  if (is_nan(x) || is_nan(y)) {
    return x + y;
  }
  let x_negative = x < 0.0 || sign_bit(x);
  var r: f32;
  if (y == 0.0) {
    r = select(0.0, PI, x_negative);
  } else if (x == 0.0) {
    r = 0.5 * PI;
  } else if (is_inf(x) && is_inf(y)) {
    r = select(0.25 * PI, 0.75 * PI, x_negative);
  } else {
    r = atan_f32(abs(y / x));
    r = select(r, PI - r, x_negative);
  }
  return select(r, -r, sign_bit(y));
}

// asin and acos through atan2 with sqrt((1 - x)(1 + x)), which keeps its accuracy near ±1.
fn asin_f32(x: f32) -> f32 {
  return select(atan2_f32(x, sqrt((1.0 - x) * (1.0 + x))), nan_f32(), abs(x) > 1.0);
}

fn acos_f32(x: f32) -> f32 {
  return select(atan2_f32(sqrt((1.0 - x) * (1.0 + x)), x), nan_f32(), abs(x) > 1.0);
}

// sinh and cosh from h = e^|x| / 2 (exp(|x| - ln 2) where e^|x| itself would overflow, so cosh(89) stays
// finite as in torch); sinh near 0 from expm1, where e^x - e^-x cancels.
fn sinh_f32(x: f32) -> f32 {
  let a = abs(x);
  var r: f32;
  if (a < 1.0) {
    let u = expm1_f32(a);
    r = 0.5 * (u + u / (u + 1.0));
  } else {
    let h = select(0.5 * exp(a), exp(a - LN2), a > 88.0);
    r = h - 0.25 / h;
  }
  return select(r, -r, x < 0.0);
}

fn cosh_f32(x: f32) -> f32 {
  let a = abs(x);
  let h = select(0.5 * exp(a), exp(a - LN2), a > 88.0);
  return h + 0.25 / h;
}

// asinh(|x|) = log1p(|x| + x² / (1 + sqrt(1 + x²))), and log(|x|) + ln 2 once x² + 1 rounds to x² (|x| > 2^12).
fn asinh_f32(x: f32) -> f32 {
  let a = abs(x);
  var r: f32;
  if (a > 4096.0) {
    r = log_f32(a) + LN2;
  } else {
    r = log1p_f32(a + a * a / (1.0 + sqrt(1.0 + a * a)));
  }
  return select(r, -r, x < 0.0);
}

// acosh(x) = log1p(t + sqrt(2t + t²)) with t = x - 1 (exact near 1), log(x) + ln 2 beyond 2^12; NaN below 1.
fn acosh_f32(x: f32) -> f32 {
  if (x > 4096.0) {
    return log_f32(x) + LN2;
  }
  let t = x - 1.0;
  return select(log1p_f32(t + sqrt(2.0 * t + t * t)), nan_f32(), x < 1.0);
}

// atanh(x) = log1p(2|x| / (1 - |x|)) / 2: ±inf at ±1, NaN beyond.
fn atanh_f32(x: f32) -> f32 {
  let a = abs(x);
  let r = 0.5 * log1p_f32(2.0 * a / (1.0 - a));
  return select(select(r, -r, x < 0.0), nan_f32(), a > 1.0);
}

// x ** y as torch computes it for float32: WGSL's pow is undefined for x < 0 and for x = 0 with y <= 0, so the
// magnitude comes from |x| and the sign from an odd integer exponent; x ** 0 = 1 and squares are exact.
fn pow_f32(x: f32, y: f32) -> f32 {
  if (y == 0.0) {
    return 1.0;
  }
  if (y == 2.0) {
    return x * x;
  }
  if (y == 0.5) {
    return sqrt(x);
  }
  let integral = y == floor(y);
  if (x < 0.0 && !integral) {
    return nan_f32();  // as torch gives
  }
  var r = pow(abs(x), y);
  if (x == 0.0) {
    r = select(inf_f32(), 0.0, y > 0.0);  // 0 ** y: 0 for y > 0, +inf for y < 0
  }
  let odd = integral && abs(y) < 16777216.0 && (i32(y) & 1) == 1;
  return select(r, -r, x < 0.0 && odd);
}

// fmod: x - trunc(x / y)·y with the sign of x, |result| < |y| (a quotient that rounded across an integer is
// corrected); NaN for y = 0, as C's fmod.
fn fmod_f32(x: f32, y: f32) -> f32 {
  var r = x - trunc(x / y) * y;
  let ay = abs(y);
  if (r != 0.0 && (r < 0.0) != (x < 0.0)) {
    r += select(ay, -ay, x < 0.0);
  }
  if (abs(r) >= ay) {
    r -= select(ay, -ay, x < 0.0);
  }
  return select(r, nan_f32(), y == 0.0);
}

// Floor division as torch computes it for floats: from fmod, so that the quotient of exact multiples is exact,
// rounded to the nearest integer below; x / y (±inf or NaN) for y = 0.
fn floor_div_f32(x: f32, y: f32) -> f32 {
  if (y == 0.0) {
    return x / y;
  }
  var m = fmod_f32(x, y);
  var d = (x - m) / y;
  if (m != 0.0 && (y < 0.0) != (m < 0.0)) {
    d -= 1.0;
  }
  if (d == 0.0) {
    return select(0.0, -0.0, (x < 0.0) != (y < 0.0));
  }
  var f = floor(d);
  if (d - f > 0.5) {
    f += 1.0;
  }
  return f;
}

// sqrt(x² + y²), scaled by a power of two near the larger magnitude so the squares neither overflow nor
// underflow; ±inf wins over NaN (C's hypot, as torch).
fn hypot_f32(x: f32, y: f32) -> f32 {
  let a = abs(x);
  let b = abs(y);
  if (is_inf(a) || is_inf(b)) {
    return inf_f32();
  }
  if (is_nan(a) || is_nan(b)) {
    return nan_f32();
  }
  let s = power_of_two_scale(max(a, b));
  let u = a / s;
  let v = b / s;
  return sqrt(u * u + v * v) * s;
}

// erfc(x) = 1 - erf(x), its tail computed directly (not as a difference) for |x| >= 0.5.
fn erfc_f32(x: f32) -> f32 {
  if (abs(x) < 0.5) {
    return 1.0 - erf_accurate(x);
  }
  let tail = erfc_of_abs(abs(x));
  return select(2.0 - tail, tail, x > 0.0);
}

// x - round(x) in [-0.5, 0.5] (exact): sin(πx) and tan(πx) from it keep their accuracy for large |x| (period
// 1, up to sign for sin).
fn frac_round(x: f32) -> f32 {
  return x - round(x);
}

// sin(πf) and cos(πf) for |f| <= 0.5 by their Taylor series in z = (πf)² (truncation below 1e-9): relative
// accuracy near f = 0, where the poles of the gamma functions' reflection formulas sit (WGSL's sin promises
// only an absolute 2^-11).
fn sinpi_small(f: f32) -> f32 {
  let t = 3.141592653589793 * f;
  let z = t * t;
  return t * (1.0 - z / 6.0 * (1.0 - z / 20.0 * (1.0 - z / 42.0 * (1.0 - z / 72.0 * (1.0 - z / 110.0
         * (1.0 - z / 156.0 * (1.0 - z / 210.0)))))));
}

fn cospi_small(f: f32) -> f32 {
  let t = 3.141592653589793 * f;
  let z = t * t;
  return 1.0 - z / 2.0 * (1.0 - z / 12.0 * (1.0 - z / 30.0 * (1.0 - z / 56.0 * (1.0 - z / 90.0
         * (1.0 - z / 132.0 * (1.0 - z / 182.0))))));
}

// ln |Γ(x)|: Lanczos' approximation (g = 7, 9 terms) for x >= 0.5 and the reflection formula below;
// +inf at the poles (0, -1, -2, …) and at ±inf, NaN for NaN.
fn lgamma_f32(x: f32) -> f32 {
  if (is_nan(x) || is_inf(x)) {
    return abs(x);
  }
  if (x >= 0.5) {
    return lgamma_lanczos(x);
  }
  if (x == floor(x)) {
    return inf_f32();
  }
  return 1.1447298858494002 - log(abs(sinpi_small(frac_round(x)))) - lgamma_lanczos(1.0 - x);  // ln pi
}

fn lgamma_lanczos(x: f32) -> f32 {
  let c = array<f32, 8>(676.5203681218851, -1259.1392167224028, 771.32342877765313, -176.61502916214059,
                        12.507343278686905, -0.13857109526572012, 9.9843695780195716e-6, 1.5056327351493116e-7);
  let z = x - 1.0;
  var a = 0.99999999999980993;
  for (var i = 0u; i < 8u; i++) {
    a += c[i] / (z + f32(i + 1u));
  }
  let t = z + 7.5;
  return 0.9189385332046727 + (z + 0.5) * log(t) - t + log(a);  // ln sqrt(2 pi)
}

// ψ(x) = Γ'(x) / Γ(x): the reflection formula below 0.5, the recurrence ψ(y) = ψ(y + 1) - 1/y up to y >= 6,
// then the asymptotic series. ∓inf at ±0, NaN at the negative integers and -inf, +inf at +inf (torch's).
fn digamma_f32(x: f32) -> f32 {
  if (is_nan(x) || x == inf_f32()) {
    return x;
  }
  if (x == 0.0) {
    return select(-inf_f32(), inf_f32(), sign_bit(x));
  }
  if (x < 0.0 && x == floor(x)) {
    return nan_f32();
  }
  var y = x;
  var r = 0.0;
  if (x < 0.5) {
    y = 1.0 - x;
    let f = frac_round(x);
    r = -3.141592653589793 * cospi_small(f) / sinpi_small(f);
  }
  for (var i = 0u; i < 6u && y < 6.0; i++) {
    r -= 1.0 / y;
    y += 1.0;
  }
  let w = 1.0 / (y * y);
  return r + log(y) - 0.5 / y - w * (1.0 / 12.0 - w * (1.0 / 120.0 - w * (1.0 / 252.0 - w * (1.0 / 240.0))));
}

// ψ'(x) = Σ 1 / (x + k)²: the reflection formula π² / sin²(πx) - ψ'(1 - x) below 0.5, the recurrence
// ψ'(y) = ψ'(y + 1) + 1/y² up to y >= 6, then the asymptotic series. +inf at the poles (0, -1, …), 0 at
// +inf, NaN at -inf (torch's).
fn trigamma_f32(x: f32) -> f32 {
  if (x == inf_f32()) {
    return 0.0;
  }
  if (is_nan(x) || is_inf(x)) {
    return nan_f32();
  }
  if (x <= 0.0 && x == floor(x)) {
    return inf_f32();
  }
  var y = x;
  var sign = 1.0;
  var r = 0.0;
  if (x < 0.5) {
    y = 1.0 - x;
    sign = -1.0;
    let s = sinpi_small(frac_round(x));
    r = 9.869604401089358 / (s * s);  // π²
  }
  var sum = 0.0;
  for (var i = 0u; i < 6u && y < 6.0; i++) {
    sum += 1.0 / (y * y);
    y += 1.0;
  }
  let w = 1.0 / (y * y);
  let tail = 1.0 / y + 0.5 * w + w / y * (1.0 / 6.0 - w * (1.0 / 30.0 - w * (1.0 / 42.0 - w / 30.0)));
  return r + sign * (sum + tail);
}
