// strided.wgsl — element offsets in strided views. Not a kernel: kernels include it (`//! include
// strided.wgsl`).
//
// strided_offset(i, ndim, shape, strides): the offset, in elements from the view's own offset, of element i
// (counted row-major over `shape`) of a view of up to 8 dims whose shape and strides are packed four to a
// vec4 (dims 0..ndim-1), as Params carries them; an ndim past 8 counts as 8.

fn strided_offset(i: u32, ndim: u32, shape: array<vec4<u32>, 2>, strides: array<vec4<u32>, 2>) -> u32 {
  var rest = i;
  var at = 0u;
  for (var d = min(ndim, 8u); d > 0u; d--) {
    let k = d - 1u;
    let n = shape[k / 4u][k % 4u];
    at += (rest % n) * strides[k / 4u][k % 4u];
    rest /= n;
  }
  return at;
}
