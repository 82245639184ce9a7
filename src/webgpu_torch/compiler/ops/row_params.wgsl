// row_params.wgsl — the uniform struct of the kernels that work along one dim of a strided view, row by
// row (softmax.wgsl, scan.wgsl); ops/row.py: row_params() fills it. Not a kernel: they include it (after
// bounded.wgsl and strided.wgsl), binding their input as `x`.
//
// The dims other than the working dim enumerate `rows` (kept_ndim of them, up to 8, with their strides);
// the working dim has `n` elements at element `stride`; `inner` is the element count of the dims after it,
// so the contiguous output holds row o's element r at (o / inner * n + r) * inner + o % inner. A split row
// (softmax.wgsl, scan.wgsl) is `slices` slices of `slice_len` elements (1 and n: whole).

struct Params {
  rows: u32,
  n: u32,
  inner: u32,
  offset: u32,
  stride: u32,
  kept_ndim: u32,
  kept_shape: array<vec4<u32>, 2>,
  kept_strides: array<vec4<u32>, 2>,
  slices: u32,
  slice_len: u32,
}

// Slice `segment` (row o's slice s: o * p.slices + s) of the rows.
struct RowSlice {
  live: bool,
  o: u32,      // the row
  base: u32,   // the row's first element in x
  first: u32,  // the slice's elements along the row: [first, last), empty past the last row
  last: u32,
}

fn row_slice(segment: u32) -> RowSlice {
  let live = segment < p.rows * p.slices;
  let o = select(0u, segment / p.slices, live);
  let first = (segment % p.slices) * p.slice_len;
  let last = select(first, min(first + p.slice_len, bounded(p.n, arrayLength(&x))), live);
  return RowSlice(live, o, p.offset + strided_offset(o, p.kept_ndim, p.kept_shape, p.kept_strides), first, last);
}
