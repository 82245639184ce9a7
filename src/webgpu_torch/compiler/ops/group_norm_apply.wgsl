// group_norm_apply.wgsl — normalisation after its statistics pass (group_norm.wgsl): `finish` merges each
// row's chunk statistics into mean[r] and rstd[r] = 1 / sqrt(M2 / row_len + eps) (the op's second and third
// outputs; the biased variance, as torch's); `main` writes out[n, c, s] = (x[n, c, s] - mean[r]) * rstd[r] *
// weight[c] + bias[c] with r = n * row_n + c / Cg: for group norm row_n = groups and Cg its channels per
// group, for batch statistics row_n = 0 and Cg = 1 (row r is channel r).
//
// Layout: partial is contiguous [rows, chunks, 2] (mean, M2) per chunk of chunk_len elements (the last
//   shorter, those past the row's end empty and skipped); mean and rstd contiguous [rows]; x a strided
//   [N, C, HW] view (x_offset; strides sn, sc, ss); out contiguous [N, C, HW]; weight and bias contiguous
//   [C], read only with HAS_WEIGHT / HAS_BIAS.
// Geometry: `finish` one thread per row, `main` one thread per output element (per_element.wgsl); threads
//   past the end exit at once. Chunks merge one by one by Chan et al.'s update, which never subtracts two
//   large sums.

//! include bounded.wgsl
//! include per_element.wgsl

override HAS_WEIGHT: bool = false;
override HAS_BIAS: bool = false;

struct Params {
  numel: u32,
  rows: u32,
  chunks: u32,
  chunk_len: u32,
  row_len: u32,
  C: u32,
  HW: u32,
  row_n: u32,
  Cg: u32,
  x_offset: u32,
  sn: u32,
  sc: u32,
  ss: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> partial: array<f32>;
@group(0) @binding(1) var<storage, read> x: array<f32>;
@group(0) @binding(2) var<storage, read> weight: array<f32>;
@group(0) @binding(3) var<storage, read> bias: array<f32>;
@group(0) @binding(4) var<storage, read_write> mean: array<f32>;
@group(0) @binding(5) var<storage, read_write> rstd: array<f32>;
@group(0) @binding(6) var<storage, read_write> out: array<f32>;
@group(0) @binding(7) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn finish(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
          @builtin(local_invocation_index) li: u32) {
  let r = element_index(wid, nwg, li);
  if (r >= p.rows) {
    return;
  }
  var count = 0.0;
  var m = 0.0;
  var m2 = 0.0;
  let chunks = bounded(p.chunks, arrayLength(&partial));
  for (var k = 0u; k < chunks; k++) {
    let n_k = f32(min(p.chunk_len, p.row_len - min(p.row_len, k * p.chunk_len)));
    if (n_k == 0.0) {
      break;  // the chunks past a dynamic row's end
    }
    let mean_k = partial[2u * (r * p.chunks + k)];
    let total = count + n_k;
    let delta = mean_k - m;
    m += delta * (n_k / total);
    m2 += partial[2u * (r * p.chunks + k) + 1u] + delta * delta * (count * n_k / total);
    count = total;
  }
  mean[r] = m;
  rstd[r] = inverseSqrt(m2 / f32(p.row_len) + p.eps);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let n = i / (p.C * p.HW);
  let c = (i / p.HW) % p.C;
  let r = n * p.row_n + c / p.Cg;
  var v = (x[p.x_offset + n * p.sn + c * p.sc + (i % p.HW) * p.ss] - mean[r]) * rstd[r];
  if (HAS_WEIGHT) {
    v *= weight[c];
  }
  if (HAS_BIAS) {
    v += bias[c];
  }
  out[i] = v;
}
