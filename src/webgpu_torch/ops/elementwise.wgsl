// elementwise.wgsl — out[i] = act(f(a[i], b[i], c[i])) for every element of a strided output view.
//
// Layout: `a`, `b` and `c` are strided views broadcast to the output's shape (stride 0 on broadcast dims), of
//   up to 8 dims, their element strides and offsets in Params; `out` is a strided view too (a slice of a
//   concatenation, usually dense). With CONTIGUOUS every view is dense and shaped like the output, so element
//   i is read and written at offset + i. With B_SCALAR the second operand is Params.scalar instead of `b`;
//   `c` is read by `where` alone. Operands an op does not read are bound to `a`'s buffer.
// Types: A, B, C are the operands' storage types and Out the output's (f32, i32, or u32 for bool), set by
//   alias substitution. Every operand is converted to the compute type T on load (the op's promoted dtype:
//   the result's for arithmetic, the inputs' for comparisons) and the result to Out on store, so one source
//   serves float, integer and boolean arithmetic, comparisons, `where` and casts. Float-only functions take
//   f32(x); the lowering only pairs them with T = f32.
// Geometry: one thread per output element, 256 per workgroup, over a grid folded to fit 65,535 workgroups per
//   dimension; threads past `numel` exit at once.
// The op is an override constant; its codes are the OP_* constants below (the lowering reads them from here).
// The activation `act` (ACTIVATION, from activation.wgsl; float only) is how relu, sigmoid, gelu, clamp … run:
// as the epilogue of a copy, or fused into the arithmetic op that produces their input.

//! include activation.wgsl

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
const OP_NE: u32 = 17u;
const OP_LT: u32 = 18u;
const OP_LE: u32 = 19u;
const OP_GT: u32 = 20u;
const OP_GE: u32 = 21u;
const OP_AND: u32 = 22u;       // logical: operands are truth values (nonzero)
const OP_OR: u32 = 23u;
const OP_NOT: u32 = 24u;
const OP_WHERE: u32 = 25u;     // a ? b : c
const OP_MAXIMUM: u32 = 26u;
const OP_MINIMUM: u32 = 27u;
const OP_ARANGE: u32 = 28u;    // scalar + alpha * i (i: the flat output index); reads no operand

alias A = f32;
alias B = f32;
alias C = f32;
alias T = f32;
alias Out = f32;

override OP: u32 = OP_COPY;
override B_SCALAR: bool = false;
override CONTIGUOUS: bool = false;
override ACTIVATION: u32 = ACT_NONE;

const WORKGROUP: u32 = 256u;

struct Params {
  numel: u32,
  ndim: u32,
  a_offset: u32,
  b_offset: u32,
  c_offset: u32,
  out_offset: u32,
  alpha: f32,
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
  // NaN and inf as runtime values (WGSL rejects them in constant expressions).
  var nan_bits = 0x7fc00000u;
  var inf_bits = 0x7f800000u;
  let integral = y == floor(y);
  if (x < 0.0 && !integral) {
    return bitcast<f32>(nan_bits);  // as torch gives
  }
  var r = pow(abs(x), y);
  if (x == 0.0) {
    r = select(bitcast<f32>(inf_bits), 0.0, y > 0.0);  // 0 ** y: 0 for y > 0, +inf for y < 0
  }
  let odd = integral && abs(y) < 16777216.0 && (i32(y) & 1) == 1;
  return select(r, -r, x < 0.0 && odd);
}

fn apply(x: T, y: T, z: T) -> Out {
  switch OP {
    case OP_ADD: { return Out(x + T(p.alpha) * y); }
    case OP_SUB: { return Out(x - T(p.alpha) * y); }
    case OP_RSUB: { return Out(y - T(p.alpha) * x); }
    case OP_MUL: { return Out(x * y); }
    case OP_DIV: { return Out(x / y); }
    case OP_NEG: { return Out(T(0) - x); }
    case OP_ABS: { return Out(abs(x)); }
    case OP_MAXIMUM: { return Out(max(x, y)); }
    case OP_MINIMUM: { return Out(min(x, y)); }
    case OP_RECIPROCAL: { return Out(1.0 / f32(x)); }
    case OP_EXP: { return Out(exp(f32(x))); }
    case OP_LOG: { return Out(log(f32(x))); }
    case OP_SQRT: { return Out(sqrt(f32(x))); }
    case OP_RSQRT: { return Out(inverseSqrt(f32(x))); }
    case OP_SIN: { return Out(sin(f32(x))); }
    case OP_COS: { return Out(cos(f32(x))); }
    case OP_POW: { return Out(pow_f32(f32(x), f32(y))); }
    case OP_EQ: { return Out(x == y); }
    case OP_NE: { return Out(x != y); }
    case OP_LT: { return Out(x < y); }
    case OP_LE: { return Out(x <= y); }
    case OP_GT: { return Out(x > y); }
    case OP_GE: { return Out(x >= y); }
    case OP_AND: { return Out(x != T(0) && y != T(0)); }
    case OP_OR: { return Out(x != T(0) || y != T(0)); }
    case OP_NOT: { return Out(x == T(0)); }
    case OP_WHERE: { return Out(select(z, y, x != T(0))); }
    default: { return Out(x); }
  }
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
    for (var d = p.ndim; d > 0u; d--) {
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
  if (OP == OP_WHERE) {
    z = T(c[ic]);
  }
  var r: Out;
  if (OP == OP_ARANGE) {
    r = Out(T(p.scalar) + T(p.alpha) * T(i));
  } else {
    r = apply(T(a[ia]), y, z);
  }
  if (ACTIVATION != ACT_NONE) {
    r = Out(activate(f32(r), ACTIVATION, p.act_lo, p.act_hi));
  }
  out[io] = r;
}
