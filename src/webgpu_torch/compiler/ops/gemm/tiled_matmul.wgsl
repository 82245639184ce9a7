// tiled_matmul.wgsl — the main loop of a tiled float32 matrix product C[z] = A[z] @ B[z] (M x K by K x N),
// shared by the GEMM kernel (gemm.wgsl) and the implicit-im2col convolution (conv.wgsl). Not a kernel: a
// kernel includes it (`//! include tiled_matmul.wgsl`), numbers its blocks, and supplies what differs:
//
//   fn load_a_tile(z: u32, m0: u32, k0: u32, li: u32)  a_tile[k * TILE_M + m] = A[z, m0 + m, k0 + k]
//   fn load_b_tile(z: u32, k0: u32, n0: u32, li: u32)  b_tile[k * TILE_N + n] = B[z, k0 + k, n0 + n]
//   fn store_c(z: u32, m: u32, n: u32, v: f32)          the epilogue of one finished element (m < M, n < N)
//
// The loaders fill the whole tile (m < TILE_M, n < TILE_N, k < TILE_K) cooperatively, thread `li` of THREADS
// taking elements li, li + THREADS, ...; elements outside the matrix are stored as 0, so the loop below needs
// no bounds of its own and any M, N, K works.
//
// Tiling: a workgroup computes one TILE_M x TILE_N block of C, stepping K by TILE_K through workgroup memory
//   (a_tile is [k][m], b_tile is [k][n], so the inner product reads rows of both). Each of the WG_M x WG_N
//   threads (workgroup_size(WG_N, WG_M)) accumulates a THREAD_M x THREAD_N register tile whose rows are
//   lid.y + i*WG_M and columns lid.x + j*WG_N: interleaved rather than blocked, so neighbouring threads read
//   neighbouring workgroup-memory words and store neighbouring words of C.
// The tile sizes are specialised by const substitution (a register tile's length must be a WGSL constant).

const TILE_M: u32 = 32u;
const TILE_N: u32 = 32u;
const TILE_K: u32 = 32u;
const THREAD_M: u32 = 4u;
const THREAD_N: u32 = 4u;
const WG_M: u32 = TILE_M / THREAD_M;
const WG_N: u32 = TILE_N / THREAD_N;
const THREADS: u32 = WG_M * WG_N;

var<workgroup> a_tile: array<f32, TILE_K * TILE_M>;
var<workgroup> b_tile: array<f32, TILE_K * TILE_N>;

// The block of C at (m0, n0) of batch z, handed to store_c. It holds barriers: every thread of the workgroup
// must call it, under uniform control flow.
fn tiled_matmul(z: u32, m0: u32, n0: u32, M: u32, N: u32, K: u32, lid: vec3u, li: u32) {
  var acc: array<f32, THREAD_M * THREAD_N>;
  for (var k0 = 0u; k0 < K; k0 += TILE_K) {
    load_a_tile(z, m0, k0, li);
    load_b_tile(z, k0, n0, li);
    workgroupBarrier();
    for (var k = 0u; k < TILE_K; k++) {
      var av: array<f32, THREAD_M>;
      var bv: array<f32, THREAD_N>;
      for (var i = 0u; i < THREAD_M; i++) {
        av[i] = a_tile[k * TILE_M + lid.y + i * WG_M];
      }
      for (var j = 0u; j < THREAD_N; j++) {
        bv[j] = b_tile[k * TILE_N + lid.x + j * WG_N];
      }
      for (var i = 0u; i < THREAD_M; i++) {
        for (var j = 0u; j < THREAD_N; j++) {
          acc[i * THREAD_N + j] = fma(av[i], bv[j], acc[i * THREAD_N + j]);
        }
      }
    }
    workgroupBarrier();
  }
  for (var i = 0u; i < THREAD_M; i++) {
    let m = m0 + lid.y + i * WG_M;
    for (var j = 0u; j < THREAD_N; j++) {
      let n = n0 + lid.x + j * WG_N;
      if (m < M && n < N) {
        store_c(z, m, n, acc[i * THREAD_N + j]);
      }
    }
  }
}
