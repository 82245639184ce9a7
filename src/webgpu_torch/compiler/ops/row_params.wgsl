// row_params.wgsl — the uniform struct of the kernels that work along one dim of a strided view, row by
// row (softmax.wgsl, scan.wgsl); ops/row.py: row_params() fills it. Not a kernel: they include it.
//
// The dims other than the working dim enumerate `rows` (kept_ndim of them, up to 8, with their strides);
// the working dim has `n` elements at element `stride`; `inner` is the element count of the dims after it,
// so the contiguous output holds row o's element r at (o / inner * n + r) * inner + o % inner.

struct Params {
  rows: u32,
  n: u32,
  inner: u32,
  offset: u32,
  stride: u32,
  kept_ndim: u32,
  kept_shape: array<vec4<u32>, 2>,
  kept_strides: array<vec4<u32>, 2>,
}
