// batch_norm.wgsl — inference batch norm: out[b, c, s] = (x[b, c, s] - mean[c]) / sqrt(var[c] + eps) * weight[c] +
// bias[c], in float32.
//
// Layout: x and out contiguous [batch, C, inner] (inner: the spatial dims, flattened); mean, var, weight and
//   bias contiguous [C]. Without HAS_WEIGHT the weight is 1, without HAS_BIAS the bias is 0 (neither is read).
// Geometry: one thread per element (per_element.wgsl); threads past `numel` exit at once.
// Where the conv before it and all its parameters are constants, the BN never gets here: conv_folding.py
// folds it into the conv's weights at compile time.

//! include per_element.wgsl

override HAS_WEIGHT: bool = false;
override HAS_BIAS: bool = false;

struct Params {
  numel: u32,
  C: u32,
  inner: u32,
  eps: f32,
}

@group(0) @binding(0) var<storage, read> x: array<f32>;
@group(0) @binding(1) var<storage, read> mean: array<f32>;
@group(0) @binding(2) var<storage, read> variance: array<f32>;
@group(0) @binding(3) var<storage, read> weight: array<f32>;
@group(0) @binding(4) var<storage, read> bias: array<f32>;
@group(0) @binding(5) var<storage, read_write> out: array<f32>;
@group(0) @binding(6) var<uniform> p: Params;

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let c = (i / p.inner) % p.C;
  var scale = inverseSqrt(variance[c] + p.eps);
  if (HAS_WEIGHT) {
    scale *= weight[c];
  }
  var v = (x[i] - mean[c]) * scale;
  if (HAS_BIAS) {
    v += bias[c];
  }
  out[i] = v;
}
