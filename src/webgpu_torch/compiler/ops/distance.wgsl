// distance.wgsl — p-norm distances between rows. cdist: out[b, i, j] = ‖x1[b, i, :] − x2[b, j, :]‖_p over
// [batch, P, R]; under PAIRS (pdist): out[k] = ‖x1[i, :] − x2[j, :]‖_p over the N·(N−1)/2 pairs i < j in
// row-major order ((0, 1), (0, 2) … (0, N−1), (1, 2) …), x2 then being x1 bound a second time.
//
// Layout: x1 and x2 are strided views; their batch dims (broadcast to the output's, stride 0 where
//   broadcast) are packed in `batch_shape`/`*_batch_strides`, their row and column strides in `*_strides`.
//   out is contiguous. NORM picks the norm: p = 0 counts the differing columns, p = inf takes the largest
//   |difference|, 1 and 2 are their own cases, any other p uses `p` (the float) as (Σ |d|^p)^(1/p).
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include bounded.wgsl
//! include per_element.wgsl
//! include strided.wgsl

const NORM_ZERO: u32 = 0u;
const NORM_ONE: u32 = 1u;
const NORM_TWO: u32 = 2u;
const NORM_INF: u32 = 3u;
const NORM_P: u32 = 4u;

override NORM: u32 = NORM_TWO;
override PAIRS: bool = false;

struct Params {
  numel: u32,
  rows: u32,  // pdist: N; cdist: P
  cols: u32,  // cdist: R
  dim: u32,  // M, the length of each row
  p: f32,
  batch_ndim: u32,
  x1_offset: u32,
  x2_offset: u32,
  x1_strides: vec2<u32>,  // (row, column)
  x2_strides: vec2<u32>,
  batch_shape: array<vec4<u32>, 2>,
  x1_batch_strides: array<vec4<u32>, 2>,
  x2_batch_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x1: array<f32>;
@group(0) @binding(1) var<storage, read> x2: array<f32>;
@group(0) @binding(2) var<storage, read_write> out: array<f32>;
@group(0) @binding(3) var<uniform> p: Params;

// Where pair k's row i starts, of N rows: pairs (i', ·) for i' < i come first, N − 1 − i' of them each.
fn pair_start(i: u32, rows: u32) -> u32 {
  return i * (2u * rows - i - 1u) / 2u;
}

// Pair k as (i, j): a float estimate of i (the root of pair_start(i) = k), then corrected exactly (each
// correction loop runs at most `rows` times, and rows never exceed x1's length: bounded.wgsl).
fn pair(k: u32) -> vec2<u32> {
  let rows = bounded(p.rows, arrayLength(&x1));
  let n = f32(rows) - 0.5;
  var i = u32(max(0.0, floor(n - sqrt(max(0.0, n * n - 2.0 * f32(k))))));
  i = min(i, max(rows, 2u) - 2u);
  while (i > 0u && pair_start(i, rows) > k) {
    i--;
  }
  while (i + 2u < rows && pair_start(i + 1u, rows) <= k) {
    i++;
  }
  return vec2(i, i + 1u + k - pair_start(i, rows));
}

fn norm_term(d: f32) -> f32 {
  let a = abs(d);
  switch NORM {
    case NORM_ZERO: { return select(0.0, 1.0, d != 0.0); }
    case NORM_ONE, NORM_INF: { return a; }
    case NORM_TWO: { return d * d; }
    default: { return select(0.0, pow(a, p.p), a > 0.0); }
  }
}

fn norm_of(acc: f32) -> f32 {
  switch NORM {
    case NORM_TWO: { return sqrt(acc); }
    case NORM_P: { return select(0.0, pow(acc, 1.0 / p.p), acc > 0.0); }
    default: { return acc; }
  }
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let e = element_index(wid, nwg, li);
  if (e >= p.numel) {
    return;
  }
  var a: u32;
  var b: u32;
  if (PAIRS) {
    let ij = pair(e);
    a = p.x1_offset + ij.x * p.x1_strides.x;
    b = p.x2_offset + ij.y * p.x2_strides.x;
  } else {
    let batch = e / (p.rows * p.cols);
    a = p.x1_offset + strided_offset(batch, p.batch_ndim, p.batch_shape, p.x1_batch_strides)
        + (e / p.cols) % p.rows * p.x1_strides.x;
    b = p.x2_offset + strided_offset(batch, p.batch_ndim, p.batch_shape, p.x2_batch_strides)
        + e % p.cols * p.x2_strides.x;
  }
  var acc = 0.0;
  let dim = bounded(p.dim, max(arrayLength(&x1), arrayLength(&x2)));
  for (var c = 0u; c < dim; c++) {
    let t = norm_term(x1[a + c * p.x1_strides.y] - x2[b + c * p.x2_strides.y]);
    if (NORM == NORM_INF) {
      acc = max(acc, t);
    } else {
      acc += t;
    }
  }
  out[e] = norm_of(acc);
}
