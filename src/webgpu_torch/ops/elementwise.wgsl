// elementwise.wgsl — out[i] = act(f(a[i], b[i])) for every element of a contiguous float32 output.
//
// Layout: `a` and `b` are strided views broadcast to the output's shape (stride 0 on broadcast dims), of up
//   to 8 dims, their element strides and offsets in Params. With CONTIGUOUS both are dense and shaped like the
//   output, so element i is read at offset + i. With B_SCALAR the second operand is Params.scalar instead of
//   `b`. Unary ops ignore the second operand (the lowering binds `a` in b's slot; it is never read).
// Geometry: one thread per output element, 256 per workgroup, over a grid folded to fit 65,535 workgroups per
//   dimension; threads past `numel` exit at once.
// The op is an override constant; its codes are the OP_* constants below (the lowering reads them from here).
// The activation `act` (ACTIVATION, from activation.wgsl) is how relu, sigmoid, gelu, clamp … run: as the
// epilogue of a copy, or fused into the arithmetic op that produces their input.

//! include activation.wgsl

const OP_COPY: u32 = 0u;
const OP_ADD: u32 = 1u;       // a + alpha * b
const OP_SUB: u32 = 2u;       // a - alpha * b
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
  alpha: f32,
  scalar: f32,
  act_lo: f32,
  act_hi: f32,
  shape: array<vec4<u32>, 2>,      // output shape, dims 0..ndim-1
  a_strides: array<vec4<u32>, 2>,
  b_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

fn apply(x: f32, y: f32) -> f32 {
  switch OP {
    case OP_ADD: { return x + p.alpha * y; }
    case OP_SUB: { return x - p.alpha * y; }
    case OP_RSUB: { return y - p.alpha * x; }
    case OP_MUL: { return x * y; }
    case OP_DIV: { return x / y; }
    case OP_NEG: { return -x; }
    case OP_ABS: { return abs(x); }
    case OP_RECIPROCAL: { return 1.0 / x; }
    case OP_EXP: { return exp(x); }
    case OP_LOG: { return log(x); }
    case OP_SQRT: { return sqrt(x); }
    case OP_RSQRT: { return inverseSqrt(x); }
    case OP_SIN: { return sin(x); }
    case OP_COS: { return cos(x); }
    default: { return x; }
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
  if (!CONTIGUOUS) {
    ia = p.a_offset;
    ib = p.b_offset;
    var rest = i;
    for (var d = p.ndim; d > 0u; d--) {
      let k = d - 1u;
      let n = p.shape[k / 4u][k % 4u];
      let c = rest % n;
      rest /= n;
      ia += c * p.a_strides[k / 4u][k % 4u];
      ib += c * p.b_strides[k / 4u][k % 4u];
    }
  }
  var y = p.scalar;
  if (!B_SCALAR) {
    y = b[ib];
  }
  out[i] = activate(apply(a[ia], y), ACTIVATION, p.act_lo, p.act_hi);
}
