// special.wgsl — out[i] = f(a[i], b[i]) for torch.special's functions that the elementwise kernel leaves out
// (Hurwitz ζ, ψ^(n) for n >= 2, the orthogonal polynomials, the spherical Bessel j0) and nextafter, in
// float32, as torch's CPU kernels compute them (ATen/native/Math.h, derived from the Cephes Math Library): the
// same special cases, recurrences, closed forms and thresholds, so that NaN, ±inf and the limits on the order
// fall where torch's float32 results have them.
//
// Layout: `a` and `b` are strided views broadcast to the output's shape (stride 0 on broadcast dims), of up to 8
//   dims, their element strides and offsets in Params; with B_SCALAR the second operand is Params.scalar
//   instead (`b` is then bound to `a`'s buffer and not read). `out` is contiguous.
// Types: A and B are the operands' storage types (f32, i32, or u32 for bool), converted to f32 on load.
// Geometry: one thread per output element (per_element.wgsl).
// A kernel of its own, not entry points of elementwise.wgsl: every function a pipeline's switch reaches is
//   compiled into it, and the elementwise kernel, which every model builds many times, should not carry these.
//
// The orthogonal polynomials run their three-term recurrence n times, as torch's do (an order of a billion is a
// long dispatch, as it is a long loop in torch); the recurrences stop at the first NaN, which a value beyond
// ±1 reaches within 2^18 steps of the Chebyshev kinds once it has overflowed.

//! include activation.wgsl
//! include math.wgsl
//! include per_element.wgsl
//! include strided.wgsl

const OP_ZETA: u32 = 0u;       // ζ(a, b), Hurwitz
const OP_POLYGAMMA: u32 = 1u;  // ψ^(b)(a) for b >= 2
const OP_NEXTAFTER: u32 = 2u;
const OP_SPHERICAL_BESSEL_J0: u32 = 3u;
const OP_CHEBYSHEV_POLYNOMIAL_T: u32 = 4u;  // the polynomials of a, of order b
const OP_CHEBYSHEV_POLYNOMIAL_U: u32 = 5u;
const OP_CHEBYSHEV_POLYNOMIAL_V: u32 = 6u;
const OP_CHEBYSHEV_POLYNOMIAL_W: u32 = 7u;
const OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_T: u32 = 8u;  // of 2a - 1
const OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_U: u32 = 9u;
const OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_V: u32 = 10u;
const OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_W: u32 = 11u;
const OP_HERMITE_POLYNOMIAL_H: u32 = 12u;
const OP_HERMITE_POLYNOMIAL_HE: u32 = 13u;
const OP_LAGUERRE_POLYNOMIAL_L: u32 = 14u;
const OP_LEGENDRE_POLYNOMIAL_P: u32 = 15u;

alias A = f32;
alias B = f32;

override OP: u32 = OP_ZETA;
override B_SCALAR: bool = false;

struct Params {
  numel: u32,
  ndim: u32,
  a_offset: u32,
  b_offset: u32,
  scalar: f32,
  shape: array<vec4<u32>, 2>,  // output shape, dims 0..ndim-1
  a_strides: array<vec4<u32>, 2>,
  b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> a: array<A>;
@group(0) @binding(1) var<storage, read> b: array<B>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// An order n given as a float, as torch converts it: truncated toward zero; NaN and ±inf count as -1 (whose
// polynomial is 0); beyond the i32 range it saturates.
fn polynomial_order(n: f32) -> i32 {
  return select(i32(n), -1, is_nan(n) || is_inf(n));
}

const RECUR_CHEBYSHEV: u32 = 0u;
const RECUR_HERMITE_H: u32 = 1u;
const RECUR_HERMITE_HE: u32 = 2u;
const RECUR_LAGUERRE: u32 = 3u;
const RECUR_LEGENDRE: u32 = 4u;

// P_n(x) of a family of orthogonal polynomials, n >= 1, from P_0 = 1 and P_1 = p1 by its three-term recurrence
// P_{k+1} = (a_k·P_k - b_k·P_{k-1}) / c_k (each product as torch's kernel forms it), stopping at the first NaN
// (which then stays: the result is the same).
fn recurrence(family: u32, x: f32, p1: f32, n: u32) -> f32 {
  var p = 1.0;
  var q = p1;
  for (var k = 1u; k < n && !is_nan(q); k++) {
    let j = f32(k);
    var a = x + x;
    var b = 1.0;
    var c = 1.0;
    switch family {
      case RECUR_HERMITE_H: { b = j + j; }
      case RECUR_HERMITE_HE: { a = x; b = j; }
      case RECUR_LAGUERRE: { a = j + j + (1.0 - x); b = j; c = j + 1.0; }
      case RECUR_LEGENDRE: { a = (j + j + 1.0) * x; b = j; c = j + 1.0; }
      default: {}
    }
    let r = (a * q - b * p) / c;
    p = q;
    q = r;
  }
  return q;
}

const CHEBYSHEV_T: u32 = 0u;
const CHEBYSHEV_U: u32 = 1u;
const CHEBYSHEV_V: u32 = 2u;
const CHEBYSHEV_W: u32 = 3u;

// The Chebyshev polynomial of `kind` and order n at y (the shifted ones at y = 2x - 1): ±1 in closed form,
// inside (-1, 1) for n above `closed_above` from the angle acos(y), else the recurrence r = 2y·q - p.
fn chebyshev(kind: u32, y: f32, n: i32, closed_above: i32) -> f32 {
  if (n < 0) {
    return 0.0;
  }
  let even = n % 2 == 0;
  let m = f32(n);
  if (abs(y) == 1.0) {
    switch kind {
      case CHEBYSHEV_T: { return select(-1.0, 1.0, y > 0.0 || even); }
      case CHEBYSHEV_U: { return select(-(m + 1.0), m + 1.0, y > 0.0 || even); }
      case CHEBYSHEV_V: { return select(select(-(2.0 * m + 1.0), 2.0 * m + 1.0, even), 1.0, y > 0.0); }
      default: { return select(select(-1.0, 1.0, even), 2.0 * m + 1.0, y > 0.0); }
    }
  }
  if (n > closed_above && abs(y) < 1.0) {
    let theta = acos_f32(y);
    switch kind {
      case CHEBYSHEV_T: { return cos(m * theta); }
      case CHEBYSHEV_U: {
        if (sin(theta) != 0.0) {
          return sin((m + 1.0) * theta) / sin(theta);
        }
        return (m + 1.0) * cos((m + 1.0) * theta) / y;
      }
      case CHEBYSHEV_V: {
        if (sin(theta / 2.0) != 1.0) {
          return cos((m + 0.5) * theta) / cos(theta / 2.0);
        }
        return select(-(2.0 * m + 1.0), 2.0 * m + 1.0, even);
      }
      default: {
        if (cos(theta / 2.0) != 1.0) {
          return sin((m + 0.5) * theta) / sin(theta / 2.0);
        }
        return select(select(-1.0, 1.0, even), 2.0 * m + 1.0, y > 0.0);
      }
    }
  }
  if (n == 0) {
    return 1.0;
  }
  return recurrence(RECUR_CHEBYSHEV, y, array<f32, 4>(y, y + y, y + y - 1.0, y + y + 1.0)[kind], u32(n));
}

// The physicists' (H) or probabilists' (He) Hermite polynomial: NaN beyond order 128, where torch's float32
// kernel stops.
fn hermite(x: f32, n: i32, physicists: bool) -> f32 {
  if (n < 0) {
    return 0.0;
  }
  if (n == 0) {
    return 1.0;
  }
  if (n > 128) {
    return nan_f32();
  }
  return recurrence(select(RECUR_HERMITE_HE, RECUR_HERMITE_H, physicists), x, select(x, x + x, physicists), u32(n));
}

// The Laguerre polynomial L_n(x), or with `legendre` the Legendre P_n(x).
fn laguerre_legendre(x: f32, n: i32, legendre: bool) -> f32 {
  if (n < 0) {
    return 0.0;
  }
  if (legendre && abs(x) == 1.0) {
    return select(-1.0, 1.0, x > 0.0 || n % 2 == 0);
  }
  if ((!legendre && x == 0.0) || n == 0) {
    return 1.0;
  }
  return recurrence(select(RECUR_LAGUERRE, RECUR_LEGENDRE, legendre), x, select(1.0 - x, x, legendre), u32(n));
}

// The Hurwitz zeta function ζ(x, q) = Σ_k (q + k)^-x: the sum directly until q + k passes 9 (at least 9
// terms), then the Euler–Maclaurin tail (Bernoulli numbers in ZETA_A; each term's product of (x + j) / w
// grown one factor at a time, so it neither overflows nor underflows in float32). +inf at x = 1 and at the
// poles q = 0, -1, …; NaN for x < 1, and for q < 0 with x not an integer. A q below -2^20 (2^20 direct
// terms, a loop torch would run as long) gives NaN.
fn zeta_f32(x: f32, q: f32) -> f32 {
  let ZETA_A = array<f32, 12>(12.0, -720.0, 30240.0, -1209600.0, 47900160.0, -1.8924375803183791606e9,
                              7.47242496e10, -2.950130727918164224e12, 1.1646782814350067249e14,
                              -4.5979787224074726105e15, 1.8152105401943546773e17, -7.1661652561756670113e18);
  let eps = 5.9604645e-8;  // 2^-24
  if (x == 1.0) {
    return inf_f32();
  }
  if (x < 1.0 || q < -1048576.0) {
    return nan_f32();
  }
  if (q <= 0.0) {
    if (q == floor(q)) {
      return inf_f32();
    }
    if (x != floor(x)) {
      return nan_f32();
    }
  }
  var s = pow_f32(q, -x);
  var a = q;
  var b = 0.0;
  for (var i = 0u; (i < 9u || a <= 9.0) && i < 1048600u; i++) {
    a += 1.0;
    b = pow_f32(a, -x);
    s += b;
    if (abs(b) < eps * abs(s)) {
      return s;
    }
  }
  let w = a;
  s += b * w / (x - 1.0) - 0.5 * b;
  var c = b;  // b · (x)(x+1)…(x+2i) / w^(2i+1), built up factor by factor
  var k = 0.0;
  for (var i = 0u; i < 12u; i++) {
    c *= (x + k) / w;
    let t = c / ZETA_A[i];
    s += t;
    if (abs(t / s) < eps) {
      break;
    }
    c *= (x + k + 1.0) / w;
    k += 2.0;
  }
  return s;
}

// ψ^(n)(x) for n >= 2 (orders 0 and 1 are digamma and trigamma): (-1)^(n+1) n! ζ(n + 1, x), n! multiplied out
// (it overflows past n = 34, as the result does).
fn polygamma_f32(n: u32, x: f32) -> f32 {
  var factorial = 1.0;
  for (var k = 2u; k <= min(n, 40u); k++) {
    factorial *= f32(k);
  }
  return select(-1.0, 1.0, n % 2u == 1u) * factorial * zeta_f32(f32(n) + 1.0, x);
}

// The next float32 after x toward y (y itself when equal; NaN if either is), on the bits; from ±0 the smallest
// subnormal with y's sign.
fn nextafter_f32(x: f32, y: f32) -> f32 {
  if (is_nan(x) || is_nan(y)) {
    return x + y;
  }
  if (x == y) {
    return y;
  }
  if (x == 0.0) {
    return bitcast<f32>(select(1u, 0x80000001u, y < 0.0));
  }
  let bits = bitcast<u32>(x);
  return bitcast<f32>(select(bits - 1u, bits + 1u, (y > x) == (x > 0.0)));  // away from zero, or toward it
}

// sin(x) / x: its Taylor series below |x| = 0.5 (to x^12), 0 at ±inf.
fn spherical_bessel_j0_f32(x: f32) -> f32 {
  if (is_inf(x)) {
    return 0.0;
  }
  if (abs(x) < 0.5) {
    let z = x * x;
    return 1.0 + z * (-1.0 / 6.0 + z * (1.0 / 120.0 + z * (-1.0 / 5040.0 + z * (1.0 / 362880.0
           + z * (-1.0 / 39916800.0 + z * (1.0 / 6227020800.0))))));
  }
  return sin(x) / x;
}

fn apply(x: f32, y: f32) -> f32 {
  switch OP {
    case OP_ZETA: { return zeta_f32(x, y); }
    case OP_POLYGAMMA: { return polygamma_f32(u32(y), x); }
    case OP_NEXTAFTER: { return nextafter_f32(x, y); }
    case OP_SPHERICAL_BESSEL_J0: { return spherical_bessel_j0_f32(x); }
    // torch's thresholds above which a Chebyshev polynomial inside (-1, 1) takes its closed form
    case OP_CHEBYSHEV_POLYNOMIAL_T: { return chebyshev(CHEBYSHEV_T, x, polynomial_order(y), 6); }
    case OP_CHEBYSHEV_POLYNOMIAL_U: { return chebyshev(CHEBYSHEV_U, x, polynomial_order(y), 8); }
    case OP_CHEBYSHEV_POLYNOMIAL_V: { return chebyshev(CHEBYSHEV_V, x, polynomial_order(y), 8); }
    case OP_CHEBYSHEV_POLYNOMIAL_W: { return chebyshev(CHEBYSHEV_W, x, polynomial_order(y), 8); }
    case OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_T: { return chebyshev(CHEBYSHEV_T, x + x - 1.0, polynomial_order(y), 6); }
    case OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_U: { return chebyshev(CHEBYSHEV_U, x + x - 1.0, polynomial_order(y), 6); }
    case OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_V: { return chebyshev(CHEBYSHEV_V, x + x - 1.0, polynomial_order(y), 6); }
    case OP_SHIFTED_CHEBYSHEV_POLYNOMIAL_W: { return chebyshev(CHEBYSHEV_W, x + x - 1.0, polynomial_order(y), 4); }
    case OP_HERMITE_POLYNOMIAL_H: { return hermite(x, polynomial_order(y), true); }
    case OP_HERMITE_POLYNOMIAL_HE: { return hermite(x, polynomial_order(y), false); }
    case OP_LAGUERRE_POLYNOMIAL_L: { return laguerre_legendre(x, polynomial_order(y), false); }
    default: { return laguerre_legendre(x, polynomial_order(y), true); }  // OP_LEGENDRE_POLYNOMIAL_P
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let x = f32(a[p.a_offset + strided_offset(i, p.ndim, p.shape, p.a_strides)]);
  var y = p.scalar;
  if (!B_SCALAR) {
    y = f32(b[p.b_offset + strided_offset(i, p.ndim, p.shape, p.b_strides)]);
  }
  out[i] = apply(x, y);
}
