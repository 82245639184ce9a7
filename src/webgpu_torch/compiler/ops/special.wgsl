// special.wgsl — out[i] = f(a[i], b[i]) for torch.special's functions that the elementwise kernel leaves out
// (Hurwitz ζ, ψ^(n) for n >= 2, the orthogonal polynomials, the Bessel functions J0, J1, Y0, Y1, the
// modified ones I0, I1, K0, K1 and their scaled forms, the spherical Bessel j0, ndtri, erfcx), nextafter and
// frexp, in
// float32, as torch's CPU kernels compute them (ATen/native/Math.h, derived from the Cephes Math Library): the
// same special cases, recurrences, closed forms and thresholds, so that NaN, ±inf and the limits on the order
// fall where torch's float32 results have them.
//
// Layout: `a` and `b` are strided views broadcast to the output's shape (stride 0 on broadcast dims), of up to 8
//   dims, their element strides and offsets in Params; with B_SCALAR the second operand is Params.scalar
//   instead (`b` is then bound to `a`'s buffer and not read). `out` is contiguous.
// Types: A and B are the operands' storage types (f32, i32, or u32 for bool), converted to f32 on load; Out
//   the result's (f32, or i32 for frexp's exponent, which f32 holds exactly).
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
const OP_I0: u32 = 16u;  // the modified Bessel functions of a: I0, I1, K0, K1, and exp(-|a|)·I, exp(a)·K
const OP_I0E: u32 = 17u;
const OP_I1: u32 = 18u;
const OP_I1E: u32 = 19u;
const OP_K0: u32 = 20u;
const OP_K0E: u32 = 21u;
const OP_K1: u32 = 22u;
const OP_K1E: u32 = 23u;
const OP_NDTRI: u32 = 24u;          // the inverse of the standard normal CDF
const OP_FREXP_MANTISSA: u32 = 25u;  // frexp's two results, one dispatch each
const OP_FREXP_EXPONENT: u32 = 26u;
const OP_ERFCX: u32 = 27u;          // exp(a²)·erfc(a)
const OP_BESSEL_J0: u32 = 28u;      // the Bessel functions of the first and second kind, orders 0 and 1
const OP_BESSEL_J1: u32 = 29u;
const OP_BESSEL_Y0: u32 = 30u;
const OP_BESSEL_Y1: u32 = 31u;

alias A = f32;
alias B = f32;
alias Out = f32;

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
@group(0) @binding(2) var<storage, read_write> out: array<Out>;
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

// Chebyshev series of the modified Bessel functions (Cephes, as torch's modified_bessel_* kernels carry them):
// I on [0, 8] (A) and (8, inf) (B), K on (0, 2] (A) and (2, inf) (B).
const I0_A = array<f32, 30>(
  -4.41534164647933937950e-18, 3.33079451882223809783e-17, -2.43127984654795469359e-16, 1.71539128555513303061e-15,
  -1.16853328779934516808e-14, 7.67618549860493561688e-14, -4.85644678311192946090e-13, 2.95505266312963983461e-12,
  -1.72682629144155570723e-11, 9.67580903537323691224e-11, -5.18979560163526290666e-10, 2.65982372468238665035e-09,
  -1.30002500998624804212e-08, 6.04699502254191894932e-08, -2.67079385394061173391e-07, 1.11738753912010371815e-06,
  -4.41673835845875056359e-06, 1.64484480707288970893e-05, -5.75419501008210370398e-05, 1.88502885095841655729e-04,
  -5.76375574538582365885e-04, 1.63947561694133579842e-03, -4.32430999505057594430e-03, 1.05464603945949983183e-02,
  -2.37374148058994688156e-02, 4.93052842396707084878e-02, -9.49010970480476444210e-02, 1.71620901522208775349e-01,
  -3.04682672343198398683e-01, 6.76795274409476084995e-01
);
const I0_B = array<f32, 25>(
  -7.23318048787475395456e-18, -4.83050448594418207126e-18, 4.46562142029675999901e-17, 3.46122286769746109310e-17,
  -2.82762398051658348494e-16, -3.42548561967721913462e-16, 1.77256013305652638360e-15, 3.81168066935262242075e-15,
  -9.55484669882830764870e-15, -4.15056934728722208663e-14, 1.54008621752140982691e-14, 3.85277838274214270114e-13,
  7.18012445138366623367e-13, -1.79417853150680611778e-12, -1.32158118404477131188e-11, -3.14991652796324136454e-11,
  1.18891471078464383424e-11, 4.94060238822496958910e-10, 3.39623202570838634515e-09, 2.26666899049817806459e-08,
  2.04891858946906374183e-07, 2.89137052083475648297e-06, 6.88975834691682398426e-05, 3.36911647825569408990e-03,
  8.04490411014108831608e-01
);
const I1_A = array<f32, 29>(
  2.77791411276104639959e-18, -2.11142121435816608115e-17, 1.55363195773620046921e-16, -1.10559694773538630805e-15,
  7.60068429473540693410e-15, -5.04218550472791168711e-14, 3.22379336594557470981e-13, -1.98397439776494371520e-12,
  1.17361862988909016308e-11, -6.66348972350202774223e-11, 3.62559028155211703701e-10, -1.88724975172282928790e-09,
  9.38153738649577178388e-09, -4.44505912879632808065e-08, 2.00329475355213526229e-07, -8.56872026469545474066e-07,
  3.47025130813767847674e-06, -1.32731636560394358279e-05, 4.78156510755005422638e-05, -1.61760815825896745588e-04,
  5.12285956168575772895e-04, -1.51357245063125314899e-03, 4.15642294431288815669e-03, -1.05640848946261981558e-02,
  2.47264490306265168283e-02, -5.29459812080949914269e-02, 1.02643658689847095384e-01, -1.76416518357834055153e-01,
  2.52587186443633654823e-01
);
const I1_B = array<f32, 25>(
  7.51729631084210481353e-18, 4.41434832307170791151e-18, -4.65030536848935832153e-17, -3.20952592199342395980e-17,
  2.96262899764595013876e-16, 3.30820231092092828324e-16, -1.88035477551078244854e-15, -3.81440307243700780478e-15,
  1.04202769841288027642e-14, 4.27244001671195135429e-14, -2.10154184277266431302e-14, -4.08355111109219731823e-13,
  -7.19855177624590851209e-13, 2.03562854414708950722e-12, 1.41258074366137813316e-11, 3.25260358301548823856e-11,
  -1.89749581235054123450e-11, -5.58974346219658380687e-10, -3.83538038596423702205e-09, -2.63146884688951950684e-08,
  -2.51223623787020892529e-07, -3.88256480887769039346e-06, -1.10588938762623716291e-04, -9.76109749136146840777e-03,
  7.78576235018280120474e-01
);
const K0_A = array<f32, 10>(
  1.37446543561352307156e-16, 4.25981614279661018399e-14, 1.03496952576338420167e-11, 1.90451637722020886025e-09,
  2.53479107902614945675e-07, 2.28621210311945178607e-05, 1.26461541144692592338e-03, 3.59799365153615016266e-02,
  3.44289899924628486886e-01, -5.35327393233902768720e-01
);
const K0_B = array<f32, 25>(
  5.30043377268626276149e-18, -1.64758043015242134646e-17, 5.21039150503902756861e-17, -1.67823109680541210385e-16,
  5.51205597852431940784e-16, -1.84859337734377901440e-15, 6.34007647740507060557e-15, -2.22751332699166985548e-14,
  8.03289077536357521100e-14, -2.98009692317273043925e-13, 1.14034058820847496303e-12, -4.51459788337394416547e-12,
  1.85594911495471785253e-11, -7.95748924447710747776e-11, 3.57739728140030116597e-10, -1.69753450938905987466e-09,
  8.57403401741422608519e-09, -4.66048989768794782956e-08, 2.76681363944501510342e-07, -1.83175552271911948767e-06,
  1.39498137188764993662e-05, -1.28495495816278026384e-04, 1.56988388573005337491e-03, -3.14481013119645005427e-02,
  2.44030308206595545468e+00
);
const K1_A = array<f32, 11>(
  -7.02386347938628759343e-18, -2.42744985051936593393e-15, -6.66690169419932900609e-13, -1.41148839263352776110e-10,
  -2.21338763073472585583e-08, -2.43340614156596823496e-06, -1.73028895751305206302e-04, -6.97572385963986435018e-03,
  -1.22611180822657148235e-01, -3.53155960776544875667e-01, 1.52530022733894777053e+00
);
const K1_B = array<f32, 25>(
  -5.75674448366501715755e-18, 1.79405087314755922667e-17, -5.68946255844285935196e-17, 1.83809354436663880070e-16,
  -6.05704724837331885336e-16, 2.03870316562433424052e-15, -7.01983709041831346144e-15, 2.47715442448130437068e-14,
  -8.97670518232499435011e-14, 3.34841966607842919884e-13, -1.28917396095102890680e-12, 5.13963967348173025100e-12,
  -2.12996783842756842877e-11, 9.21831518760500529508e-11, -4.19035475934189648750e-10, 2.01504975519703286596e-09,
  -1.03457624656780970260e-08, 5.74108412545004946722e-08, -3.50196060308781257119e-07, 2.40648494783721712015e-06,
  -1.93619797416608296024e-05, 1.95215518471351631108e-04, -2.85781685962277938680e-03, 1.03923736576817238437e-01,
  2.72062619048444266945e+00
);
// (1 + 2x)·erfcx(x) for x >= 0 as a Chebyshev series in q = (x - 3) / (x + 3), which maps [0, inf) onto
// [-1, 1) (Shepherd and Laframboise's change of variable, Math. Comp. 36 (1981)): degree 12, fitted at the
// Chebyshev nodes to torch's float64 erfcx; relative error 2.5e-9, 2.4e-7 evaluated in float32 (chbevl's
// order: highest degree first, the constant term doubled).
const ERFCX = array<f32, 13>(
  1.9002693531263096e-09, 7.5394667408798724e-08, -1.8075375499172305e-07, -2.007224288368331e-06,
  1.2841533071888822e-05, 1.7661719342103745e-05, -0.00063355317107503307, 0.0044534260614698387,
  -0.01897659670784347, 0.054366525557443056, -0.093775503422842105, 0.0053539045396157788, 2.3551251483931206
);

const SERIES_I0_A: u32 = 0u;
const SERIES_I0_B: u32 = 1u;
const SERIES_I1_A: u32 = 2u;
const SERIES_I1_B: u32 = 3u;
const SERIES_K0_A: u32 = 4u;
const SERIES_K0_B: u32 = 5u;
const SERIES_K1_A: u32 = 6u;
const SERIES_K1_B: u32 = 7u;
const SERIES_ERFCX: u32 = 8u;

// Coefficient i of a series, and its length.
fn series_at(series: u32, i: u32) -> f32 {
  switch series {
    case SERIES_I0_A: { return I0_A[i]; }
    case SERIES_I0_B: { return I0_B[i]; }
    case SERIES_I1_A: { return I1_A[i]; }
    case SERIES_I1_B: { return I1_B[i]; }
    case SERIES_K0_A: { return K0_A[i]; }
    case SERIES_K0_B: { return K0_B[i]; }
    case SERIES_K1_A: { return K1_A[i]; }
    case SERIES_K1_B: { return K1_B[i]; }
    default: { return ERFCX[i]; }
  }
}

fn series_length(series: u32) -> u32 {
  return array<u32, 9>(30u, 25u, 29u, 25u, 10u, 25u, 11u, 25u, 13u)[series];
}

// A series at y, by Clenshaw's recurrence (Cephes' chbevl).
fn chbevl(y: f32, series: u32) -> f32 {
  var b0 = series_at(series, 0u);
  var b1 = 0.0;
  var b2 = 0.0;
  for (var i = 1u; i < series_length(series); i++) {
    b2 = b1;
    b1 = b0;
    b0 = y * b1 - b2 + series_at(series, i);
  }
  return 0.5 * (b0 - b2);
}

// I0 or I1 of x, times exp(-|x|) when `scaled`, in torch's order of operations (so I0(±inf) is NaN, as
// exp(inf) · c / sqrt(inf) is in torch).
fn bessel_i(x: f32, order1: bool, scaled: bool) -> f32 {
  let a = abs(x);
  let e = select(exp(a), 1.0, scaled);
  var r: f32;
  if (a <= 8.0 && order1) {
    r = e * a * chbevl(a / 2.0 - 2.0, SERIES_I1_A);
  } else if (a <= 8.0) {
    r = e * chbevl(a / 2.0 - 2.0, SERIES_I0_A);
  } else {
    r = e * chbevl(32.0 / a - 2.0, select(SERIES_I0_B, SERIES_I1_B, order1)) / sqrt(a);
  }
  return select(r, -r, order1 && x < 0.0);
}

// K0 or K1 of x, times exp(x) when `scaled`: +inf at 0, NaN below.
fn bessel_k(x: f32, order1: bool, scaled: bool) -> f32 {
  if (x == 0.0) {
    return inf_f32();
  }
  if (x < 0.0) {
    return nan_f32();
  }
  if (x <= 2.0) {
    let y = x * x - 2.0;
    var r: f32;
    if (order1) {
      r = log_f32(0.5 * x) * bessel_i(x, true, false) + chbevl(y, SERIES_K1_A) / x;
    } else {
      r = chbevl(y, SERIES_K0_A) - log_f32(0.5 * x) * bessel_i(x, false, false);
    }
    return select(r, r * exp(x), scaled);
  }
  let r = chbevl(8.0 / x - 2.0, select(SERIES_K0_B, SERIES_K1_B, order1)) / sqrt(x);
  return select(exp(-x) * r, r, scaled);
}

// The Bessel functions J and Y of orders 0 and 1 (Cephes' j0.c and j1.c, as torch's bessel_* kernels carry
// them): rational functions of x² up to x = 5, Hankel's asymptotic form beyond, its P and Q rational in
// z = 25 / x² (the order's PP / PQ and QP / QQ; the coefficients of each, highest power first, padded with
// leading zeros to polevl's nine).
const BESSEL0_PP = array<f32, 9>(
  0.0, 0.0, 7.96936729297347051624e-04,
  8.28352392107440799803e-02, 1.23953371646414299388e+00, 5.44725003058768775090e+00,
  8.74716500199817011941e+00, 5.30324038235394892183e+00, 9.99999999999999997821e-01
);
const BESSEL0_PQ = array<f32, 9>(
  0.0, 0.0, 9.24408810558863637013e-04,
  8.56288474354474431428e-02, 1.25352743901058953537e+00, 5.47097740330417105182e+00,
  8.76190883237069594232e+00, 5.30605288235394617618e+00, 1.00000000000000000218e+00
);
const BESSEL0_QP = array<f32, 9>(
  0.0, -1.13663838898469149931e-02, -1.28252718670509318512e+00,
  -1.95539544257735972385e+01, -9.32060152123768231369e+01, -1.77681167980488050595e+02,
  -1.47077505154951170175e+02, -5.14105326766599330220e+01, -6.05014350600728481186e+00
);
const BESSEL0_QQ = array<f32, 9>(
  0.0, 0.0, 6.43178256118178023184e+01,
  8.56430025976980587198e+02, 3.88240183605401609683e+03, 7.24046774195652478189e+03,
  5.93072701187316984827e+03, 2.06209331660327847417e+03, 2.42005740240291393179e+02
);
const BESSEL1_PP = array<f32, 9>(
  0.0, 0.0, 7.62125616208173112003e-04,
  7.31397056940917570436e-02, 1.12719608129684925192e+00, 5.11207951146807644818e+00,
  8.42404590141772420927e+00, 5.21451598682361504063e+00, 1.00000000000000000254e+00
);
const BESSEL1_PQ = array<f32, 9>(
  0.0, 0.0, 5.71323128072548699714e-04,
  6.88455908754495404082e-02, 1.10514232634061696926e+00, 5.07386386128601488557e+00,
  8.39985554327604159757e+00, 5.20982848682361821619e+00, 9.99999999999999997461e-01
);
const BESSEL1_QP = array<f32, 9>(
  0.0, 5.10862594750176621635e-02, 4.98213872951233449420e+00,
  7.58238284132545283818e+01, 3.66779609360150777800e+02, 7.10856304998926107277e+02,
  5.97489612400613639965e+02, 2.11688757100572135698e+02, 2.52070205858023719784e+01
);
const BESSEL1_QQ = array<f32, 9>(
  0.0, 0.0, 7.42373277035675149943e+01,
  1.05644886038262816351e+03, 4.98641058337653607651e+03, 9.56231892404756170795e+03,
  7.99704160447350683650e+03, 2.82619278517639096600e+03, 3.36093607810698293419e+02
);
const J0_RP = array<f32, 9>(
  0.0, 0.0, 0.0,
  0.0, 0.0, -4.79443220978201773821e+09,
  1.95617491946556577543e+12, -2.49248344360967716204e+14, 9.70862251047306323952e+15
);
const J0_RQ = array<f32, 9>(
  0.0, 4.99563147152651017219e+02, 1.73785401676374683123e+05,
  4.84409658339962045305e+07, 1.11855537045356834862e+10, 2.11277520115489217587e+12,
  3.10518229857422583814e+14, 3.18121955943204943306e+16, 1.71086294081043136091e+18
);
const J1_RP = array<f32, 9>(
  0.0, 0.0, 0.0,
  0.0, 0.0, -8.99971225705559398224e+08,
  4.52228297998194034323e+11, -7.27494245221818276015e+13, 3.68295732863852883286e+15
);
const J1_RQ = array<f32, 9>(
  0.0, 6.20836478118054335476e+02, 2.56987256757748830383e+05,
  8.35146791431949253037e+07, 2.21511595479792499675e+10, 4.74914122079991414898e+12,
  7.84369607876235854894e+14, 8.95222336184627338078e+16, 5.32278620332680085395e+18
);
const Y0_YP = array<f32, 9>(
  0.0, 1.55924367855235737965e+04, -1.46639295903971606143e+07,
  5.43526477051876500413e+09, -9.82136065717911466409e+11, 8.75906394395366999549e+13,
  -3.46628303384729719441e+15, 4.42733268572569800351e+16, -1.84950800436986690637e+16
);
const Y0_YQ = array<f32, 9>(
  0.0, 0.0, 1.04128353664259848412e+03,
  6.26107330137134956842e+05, 2.68919633393814121987e+08, 8.64002487103935000337e+10,
  2.02979612750105546709e+13, 3.17157752842975028269e+15, 2.50596256172653059228e+17
);
const Y1_YP = array<f32, 9>(
  0.0, 0.0, 0.0,
  1.26320474790178026440e+09, -6.47355876379160291031e+11, 1.14509511541823727583e+14,
  -8.12770255501325109621e+15, 2.02439475713594898196e+17, -7.78877196265950026825e+17
);
const Y1_YQ = array<f32, 9>(
  0.0, 5.94301592346128195359e+02, 2.35564092943068577943e+05,
  7.34811944459721705660e+07, 1.87601316108706159478e+10, 3.88231277496238566008e+12,
  6.20557727146953693363e+14, 6.87141087355300489866e+16, 3.97270608116560655612e+18
);

// J (or with `second`, Y) of order 0 or 1 at x > 5: sqrt(2 / (pi x))·(P cos - 5/x Q sin) (Y: P sin + 5/x Q cos)
// of x - (2·order + 1)·pi/4, in torch's order of operations.
fn bessel_asymptotic(x: f32, order1: bool, second: bool) -> f32 {
  var pp = BESSEL0_PP;
  var pq = BESSEL0_PQ;
  var qp = BESSEL0_QP;
  var qq = BESSEL0_QQ;
  var z = 25.0 / (x * x);
  var phase = x - 0.785398163397448309615660845819875721;
  if (order1) {
    pp = BESSEL1_PP;
    pq = BESSEL1_PQ;
    qp = BESSEL1_QP;
    qq = BESSEL1_QQ;
    z = 5.0 / x * (5.0 / x);
    phase = x - 2.356194490192344928846982537459627163;
  }
  let p = polevl(z, pp) / polevl(z, pq);
  let q = polevl(z, qp) / polevl(z, qq);
  var r = p * cos(phase) - 5.0 / x * q * sin(phase);
  if (second) {
    r = p * sin(phase) + 5.0 / x * q * cos(phase);
  }
  return r * 0.797884560802865355879892119868763737 / sqrt(x);
}

// J0 and J1 (odd: J1(-x) = -J1(x)).
fn bessel_j(x: f32, order1: bool) -> f32 {
  let a = abs(x);
  var r: f32;
  if (a > 5.0 || is_nan(a)) {
    r = bessel_asymptotic(a, order1, false);
  } else if (order1) {
    let z = a * a;
    r = polevl(z, J1_RP) / polevl(z, J1_RQ) * a * (z - 1.46819706421238932572e+01) * (z - 4.92184563216946036703e+01);
  } else if (a < 0.00001) {
    r = 1.0 - a * a / 4.0;
  } else {
    let z = a * a;
    r = (z - 5.78318596294678452118e+00) * (z - 3.04712623436620863991e+01) * polevl(z, J0_RP) / polevl(z, J0_RQ);
  }
  return select(r, -r, order1 && x < 0.0);
}

// Y0 and Y1: -inf at 0, NaN below.
fn bessel_y(x: f32, order1: bool) -> f32 {
  if (x > 5.0 || is_nan(x)) {
    return bessel_asymptotic(x, order1, true);
  }
  if (x == 0.0) {
    return -inf_f32();
  }
  if (x < 0.0) {
    return nan_f32();
  }
  let z = x * x;
  if (order1) {
    return x * (polevl(z, Y1_YP) / polevl(z, Y1_YQ))
           + 0.636619772367581343075535053490057448 * (bessel_j(x, true) * log_f32(x) - 1.0 / x);
  }
  return polevl(z, Y0_YP) / polevl(z, Y0_YQ) + 0.636619772367581343075535053490057448 * log_f32(x) * bessel_j(x, false);
}

// erfcx(x) = exp(x²)·erfc(x): the series for x >= 0 (0 at +inf), 2·exp(x²) - erfcx(-x) below (torch's, +inf
// once exp(x²) overflows).
fn erfcx_f32(x: f32) -> f32 {
  if (is_nan(x)) {
    return x;
  }
  let a = abs(x);
  var r = 0.0;
  if (!is_inf(a)) {
    r = chbevl(2.0 * (a - 3.0) / (a + 3.0), SERIES_ERFCX) / (1.0 + 2.0 * a);
  }
  if (x < 0.0) {
    let e = exp(x * x);
    return select(2.0 * e - r, e, is_inf(e));
  }
  return r;
}

// A polynomial of degree 8 at x, coefficients from the highest power down (Cephes' polevl; a lower degree
// has leading zeros).
fn polevl(x: f32, c: array<f32, 9>) -> f32 {
  var r = 0.0;
  for (var i = 0u; i < 9u; i++) {
    r = r * x + c[i];
  }
  return r;
}

// Φ⁻¹(y): Cephes' rational approximations, in y - 1/2 around the middle (|y - 1/2| <= 1/2 - e^-2) and in
// 1 / sqrt(-2 ln y) in the tails (nearer 1, of 1 - y); ∓inf at 0 and 1, NaN outside [0, 1].
fn ndtri_f32(y0: f32) -> f32 {
  let P0 = array<f32, 9>(0.0, 0.0, 0.0, 0.0, -5.99633501014107895267e1, 9.80010754185999661536e1,
                         -5.66762857469070293439e1, 1.39312609387279679503e1, -1.23916583867381258016e0);
  let Q0 = array<f32, 9>(1.0, 1.95448858338141759834e0, 4.67627912898881538453e0, 8.63602421390890590575e1,
                         -2.25462687854119370527e2, 2.00260212380060660359e2, -8.20372256168333339912e1,
                         1.59056225126211695515e1, -1.18331621121330003142e0);
  let P1 = array<f32, 9>(4.05544892305962419923e0, 3.15251094599893866154e1, 5.71628192246421288162e1,
                         4.40805073893200834700e1, 1.46849561928858024014e1, 2.18663306850790267539e0,
                         -1.40256079171354495875e-1, -3.50424626827848203418e-2, -8.57456785154685413611e-4);
  let Q1 = array<f32, 9>(1.0, 1.57799883256466749731e1, 4.53907635128879210584e1, 4.13172038254672030440e1,
                         1.50425385692907503408e1, 2.50464946208309415979e0, -1.42182922854787788574e-1,
                         -3.80806407691578277194e-2, -9.33259480895457427372e-4);
  let P2 = array<f32, 9>(3.23774891776946035970e0, 6.91522889068984211695e0, 3.93881025292474443415e0,
                         1.33303460815807542389e0, 2.01485389549179081538e-1, 1.23716634817820021358e-2,
                         3.01581553508235416007e-4, 2.65806974686737550832e-6, 6.23974539184983293730e-9);
  let Q2 = array<f32, 9>(1.0, 6.02427039364742014255e0, 3.67983563856160859403e0, 1.37702099489081330271e0,
                         2.16236993594496635890e-1, 1.34204006088543189037e-2, 3.28014464682127739104e-4,
                         2.89247864745380683936e-6, 6.79019408009981274425e-9);
  let tail = 0.13533528323661269189;  // e^-2
  if (y0 == 0.0 || y0 == 1.0) {
    return select(-inf_f32(), inf_f32(), y0 == 1.0);
  }
  if (!(y0 > 0.0 && y0 < 1.0)) {
    return nan_f32();
  }
  let upper = y0 > 1.0 - tail;
  let y = select(y0, 1.0 - y0, upper);
  if (y > tail) {
    let m = y - 0.5;
    let m2 = m * m;
    return (m + m * (m2 * polevl(m2, P0) / polevl(m2, Q0))) * 2.50662827463100050242;  // sqrt(2 pi)
  }
  let x = sqrt(-2.0 * log_f32(y));
  let z = 1.0 / x;
  var x1: f32;
  if (x < 8.0) {
    x1 = z * polevl(z, P1) / polevl(z, Q1);
  } else {
    x1 = z * polevl(z, P2) / polevl(z, Q2);
  }
  let r = x - log_f32(x) / x - x1;
  return select(-r, r, upper);
}

// x = mantissa · 2^exponent with |mantissa| in [0.5, 1) (C's frexp, as torch): (x, 0) for 0, ±inf and NaN.
// On the bits, a subnormal scaled by 2^24 first (exactly): WGSL's frexp misreads subnormals on some devices.
fn frexp_part(x: f32, exponent: bool) -> f32 {
  if (x == 0.0 || is_nan(x) || is_inf(x)) {
    return select(x, 0.0, exponent);
  }
  let subnormal = abs(x) < 1.17549435e-38;  // 2^-126
  let bits = bitcast<u32>(select(x, x * 16777216.0, subnormal));
  if (exponent) {
    return f32(i32((bits >> 23u) & 0xffu) - select(126, 150, subnormal));
  }
  return bitcast<f32>((bits & 0x807fffffu) | 0x3f000000u);  // the exponent field of 0.5
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
    case OP_LEGENDRE_POLYNOMIAL_P: { return laguerre_legendre(x, polynomial_order(y), true); }
    case OP_I0: { return bessel_i(x, false, false); }
    case OP_I0E: { return bessel_i(x, false, true); }
    case OP_I1: { return bessel_i(x, true, false); }
    case OP_I1E: { return bessel_i(x, true, true); }
    case OP_K0: { return bessel_k(x, false, false); }
    case OP_K0E: { return bessel_k(x, false, true); }
    case OP_K1: { return bessel_k(x, true, false); }
    case OP_K1E: { return bessel_k(x, true, true); }
    case OP_NDTRI: { return ndtri_f32(x); }
    case OP_FREXP_MANTISSA: { return frexp_part(x, false); }
    case OP_FREXP_EXPONENT: { return frexp_part(x, true); }
    case OP_ERFCX: { return erfcx_f32(x); }
    case OP_BESSEL_J0: { return bessel_j(x, false); }
    case OP_BESSEL_J1: { return bessel_j(x, true); }
    case OP_BESSEL_Y0: { return bessel_y(x, false); }
    default: { return bessel_y(x, true); }  // OP_BESSEL_Y1
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
  out[i] = Out(apply(x, y));
}
