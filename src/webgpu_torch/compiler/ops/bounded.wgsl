// bounded.wgsl — loop trip counts that no Params value can stretch. Not a kernel: kernels include it
// (`//! include bounded.wgsl`).
//
// A loop whose trip count comes from Params (K, a row's length, a window, a count of slices) runs at most as
// many steps as the buffer it walks holds elements, so whatever a damaged or hostile file says, a dispatch
// runs no longer than its data implies (and a counter stepping past 2^32 cannot wrap around):
//   let steps = bounded(p.K, arrayLength(&a));   // then: for (var k = 0u; k < steps; k++)
// (WGSL cannot pass a storage array to a function, so the caller takes arrayLength; count vec4 arrays in
// elements, 4u * arrayLength.) Loops nested over one buffer bound their product: the inner count first, then
// bounded_within(outer, inner, len). For a valid program the bound never binds: the compiler never lets a
// loop walk an operand broadcast along it (Builder.walkable copies such an operand), so the operand holds at
// least as many elements as the loop has steps. Cost: one min per thread, outside the loop.

fn bounded(n: u32, len: u32) -> u32 {
  return min(n, len);
}

// The outer count of two nested loops over one buffer of `len` elements, the inner one `inner` steps long.
fn bounded_within(n: u32, inner: u32, len: u32) -> u32 {
  return min(n, len / max(inner, 1u));
}
