// layer_norm.wgsl — out[r, :] = (x[r, :] - mean_r) * rstd_r * weight + bias over rows of N elements, with
// mean_r and rstd_r = 1 / sqrt(var_r + eps) written too (native_layer_norm's second and third outputs).
// With RMS (rms_norm), mean_r is 0: rstd_r = 1 / sqrt(mean(x²) + eps).
//
// Layout: x is a strided [rows, N] view (x_offset, row_stride, col_stride); weight and bias are [N] views
//   (read only with HAS_WEIGHT / HAS_BIAS); out is contiguous [rows, N]; mean and rstd contiguous [rows].
// Geometry: ROW threads (a power of two <= 256, about N / 4: the lowering picks it) share a row, a workgroup
//   of 256 threads handles 256 / ROW rows; the grid is folded to fit 65,535 workgroups per dimension. Two
//   passes over the row in f32: the sum and max |x|, then the variance of the deviations (biased, as torch's),
//   so a large common offset does not cancel. The deviations are divided by a power of two near max |x|
//   before squaring (exact; 1 for rows under 2), so a row of values near 1e30, whose squares overflow
//   float32, still normalises: finite wherever the row's sum is (|x| < 3.4e38 / N).

//! include bounded.wgsl
//! include row.wgsl
//! include ieee.wgsl

override ROW: u32 = 256u;
override HAS_WEIGHT: bool = true;
override HAS_BIAS: bool = true;
override RMS: bool = false;

const WORKGROUP: u32 = 256u;
const UNROLL: u32 = 1u;  // elements a thread loads at a time in the first pass (the lowering's: its share, to 8)

struct Params {
  rows: u32,
  n: u32,
  x_offset: u32,
  row_stride: u32,
  col_stride: u32,
  w_offset: u32,
  w_stride: u32,
  b_offset: u32,
  b_stride: u32,
  eps: f32,
}

// In, Out: how x and out are stored: f32, or f16 activations (precision="float16"); the row is computed in f32.
alias In = f32;
alias Out = f32;

@group(0) @binding(0) var<storage, read> x: array<In>;
@group(0) @binding(1) var<storage, read> weight: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> out: array<Out>;
@group(0) @binding(4) var<storage, read_write> mean_out: array<f32>;
@group(0) @binding(5) var<storage, read_write> rstd_out: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let r = (wid.x + wid.y * nwg.x) * (WORKGROUP / ROW) + li / ROW;
  let lane = li % ROW;
  let live = r < p.rows;
  let base = p.x_offset + select(0u, r, live) * p.row_stride;
  let n = bounded(p.n, arrayLength(&x));

  var s = 0.0;
  var big = 0.0;
  for (var c0 = lane; live && c0 < n; c0 += ROW * UNROLL) {
    // UNROLL loads in flight before any is added (the first pass reads the row from memory; the later ones
    // find it in cache), added in the order of c as one at a time would be.
    var v: array<f32, UNROLL>;
    for (var u = 0u; u < UNROLL; u++) {
      v[u] = f32(x[base + min(c0 + u * ROW, n - 1u) * p.col_stride]);
    }
    for (var u = 0u; u < UNROLL; u++) {
      if (c0 + u * ROW < n) {
        s += v[u];
        big = max(big, abs(v[u]));
      }
    }
  }
  let sum_max = row_sum_max(li, lane, s, big);
  let mean = select(sum_max.x / f32(p.n), 0.0, RMS);
  let inv = 1.0 / power_of_two_scale(sum_max.y);
  var d2 = 0.0;
  for (var c = lane; live && c < n; c += ROW) {
    let d = (f32(x[base + c * p.col_stride]) - mean) * inv;
    d2 += d * d;
  }
  // var = q / inv², so rstd = inv / sqrt(q + eps·inv²); eps·inv² may underflow where q is 0 (a constant row).
  let q = row_sum(li, lane, d2) / f32(p.n);
  let rstd = select(inv * inverseSqrt(q + p.eps * inv * inv), inverseSqrt(p.eps), q == 0.0);
  if (!live) {
    return;
  }
  for (var c = lane; c < n; c += ROW) {
    var v = (f32(x[base + c * p.col_stride]) - mean) * rstd;
    if (HAS_WEIGHT) {
      v *= weight[p.w_offset + c * p.w_stride];
    }
    if (HAS_BIAS) {
      v += bias[p.b_offset + c * p.b_stride];
    }
    out[r * p.n + c] = Out(v);
  }
  if (lane == 0u) {
    mean_out[r] = mean;
    rstd_out[r] = rstd;
  }
}
