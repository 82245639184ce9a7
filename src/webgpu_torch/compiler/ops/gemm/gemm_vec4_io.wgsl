// gemm_vec4_io.wgsl — what the two float32 vec4 GEMM kernels share beyond gemm_operands.wgsl (interface,
// operand fetches, epilogue): their thread layout and workgroup tiles. Not a kernel: gemm_vec4.wgsl and
// gemm_vec4_regs.wgsl include it and differ only in how a thread holds its accumulators (see each).
// Workgroup memory: a_tile[k][m/4] and b_tile[k][n/4] as vec4, so a thread's operand fragments are
//   vec4 loads. Loads along the non-contiguous axis of a tile scatter one vec4 into 4 components.
//   With ROW_PAD = 1 a k-row holds one spare vec4 (A_ROW = TILE_M / 4 + 1), so the threads that scatter
//   the same m at different k write different banks; unpadded, a k-row is TILE_M words, a multiple of 32
//   banks, and they collide (2-way at TILE_K = 8, 4-way at 16). Fragment reads stay consecutive vec4s.
// Register tile: each of WG_M x WG_N threads owns GM x GN blocks of 4 x 4 outputs; block (g, h) covers rows
//   (g*WG_M + ty)*4 .. +3 and columns (h*WG_N + tx)*4 .. +3 of the workgroup's TILE_M x TILE_N tile, so a
//   warp's fragment reads are consecutive vec4s (or broadcasts).
// Pipelining: each kernel fetches the next k-step's tiles into registers while it multiplies the current
// one, then stages them into workgroup memory (fetch_a/fetch_b, store_a/store_b below). Each kernel declares
// a_tile and b_tile itself, as one stage (A_STAGE, B_STAGE vec4s) or two (double-buffered): see each.
// Geometry: blocks numbered n-fastest, then m, then z, over a folded grid; workgroups past the end exit.
//   (Grouped orders that go down several tile-rows before stepping along n, for L2 reuse, measured no faster
//   on an H200 at 2048³-8192²×2048 and slower at 9216×1024×256.)

const TILE_M: u32 = 128u;
const TILE_N: u32 = 128u;
const TILE_K: u32 = 8u;
const WG_M: u32 = 16u;
const WG_N: u32 = 16u;
const GM: u32 = TILE_M / (4u * WG_M);  // 4 x 4 blocks per thread along m
const GN: u32 = TILE_N / (4u * WG_N);  // … along n
const THREADS: u32 = WG_M * WG_N;
const A_LOADS: u32 = TILE_M * TILE_K / (4u * THREADS);  // vec4 loads per thread per k-step
const B_LOADS: u32 = TILE_N * TILE_K / (4u * THREADS);
const ROW_PAD: u32 = 0u;
const A_ROW: u32 = TILE_M / 4u + ROW_PAD;  // vec4s per k-row of a_tile
const B_ROW: u32 = TILE_N / 4u + ROW_PAD;
const A_STAGE: u32 = TILE_K * A_ROW;  // vec4s of one stage of a_tile (stage s starts at s * A_STAGE)
const B_STAGE: u32 = TILE_K * B_ROW;

//! include gemm_operands.wgsl

// Stores vec4 number e of a k-step's A tile (as fetched) into stage `s` of a_tile.
fn store_a(s: u32, e: u32, v: vec4<f32>) {
  let mk = a_element(e);
  if (A_K_CONTIGUOUS) {
    for (var j = 0u; j < 4u; j++) {
      a_tile[s * A_STAGE + (mk.y + j) * A_ROW + mk.x / 4u][mk.x % 4u] = v[j];
    }
  } else {
    a_tile[s * A_STAGE + mk.y * A_ROW + mk.x / 4u] = v;
  }
}

fn store_b(s: u32, e: u32, v: vec4<f32>) {
  let kn = b_element(e);
  if (B_N_CONTIGUOUS) {
    b_tile[s * B_STAGE + kn.x * B_ROW + kn.y / 4u] = v;
  } else {
    for (var j = 0u; j < 4u; j++) {
      b_tile[s * B_STAGE + (kn.x + j) * B_ROW + kn.y / 4u][kn.y % 4u] = v[j];
    }
  }
}
