// gemm_cpu.wgsl — batched C = act(alpha * (A @ B) + beta * bias + residual), float32, shaped for adapters
// whose invocations run on CPU threads (SwiftShader, lavapipe). No workgroup memory and no barrier (such an
// adapter runs a workgroup's invocations as coroutines or SIMD lanes of one thread, and a barrier switches
// between all of them): each invocation computes GM x GN blocks of 4 x 4 outputs straight from A and B,
// whose rows the CPU's caches hold as a GPU's workgroup tiles would, K in steps of 4, every operand read in
// 16-byte vectors. Interface, layouts (A_K_CONTIGUOUS, B_N_CONTIGUOUS, A_IM2COL) and epilogue:
// gemm_operands.wgsl.
//
// Thread layout: WG_M x WG_N invocations; block (g, h) of invocation (ty, tx) covers rows
//   m0 + (g*WG_M + ty)*4 .. +3 and columns n0 + (h*WG_N + tx)*4 .. +3 of the workgroup's TILE_M x TILE_N
//   tile (TILE_M = 4*GM*WG_M, TILE_N = 4*GN*WG_N), numbered as gemm_vec4_io.wgsl numbers them.
// A k-step of a block is C[4 x 4] += A[4 x 4] @ B[4 x 4]: A as its 4 rows along k (read so when A is
//   k-contiguous, transposed in registers from 4 vec4s along m otherwise), B as the matrix whose column j is
//   row k + j along n (likewise), so each output row takes one matrix-vector product.
// Bounds: rows and columns past M and N read clamped, in-bounds data and store nothing (M and N are
//   multiples of 4 along a contiguous axis read as vec4); k past the slice's end (only where neither operand
//   is k-contiguous, so K need not be a multiple of 4) reads zero rows of B.
// Accumulators are named vec4s, never an indexed array: SwiftShader's and naga's output keep loops rolled,
//   and an indexed private array then lives in memory. c<r><h> is row r (block g = r / 4, row r % 4) of
//   column block h; blocks a configuration lacks (GM or GN of 1) are skipped by constant conditions.
// Split K and geometry: as gemm_vec4_regs.wgsl (slice s of batch z writes C[s * batch + z]).

const WG_M: u32 = 1u;
const WG_N: u32 = 16u;
const GM: u32 = 1u;
const GN: u32 = 2u;
const TILE_M: u32 = 4u * GM * WG_M;
const TILE_N: u32 = 4u * GN * WG_N;
const TILE_K: u32 = 4u;

//! include gemm_operands.wgsl

const_assert GM <= 2u && GN <= 2u;

// Rows m .. m+3 of A at k .. k+3, as the columns of the result (column i is row m + i along k).
fn a_rows(base: u32, m: u32, k: u32, k_end: u32) -> mat4x4<f32> {
  if (A_IM2COL) {
    return mat4x4<f32>(fetch_im2col(min(m, p.M - 1u), k), fetch_im2col(min(m + 1u, p.M - 1u), k),
                       fetch_im2col(min(m + 2u, p.M - 1u), k), fetch_im2col(min(m + 3u, p.M - 1u), k));
  }
  if (A_K_CONTIGUOUS) {
    let sy = p.a_strides.y;
    let at = base + k;
    return mat4x4<f32>(a[(at + min(m, p.M - 1u) * sy) / 4u], a[(at + min(m + 1u, p.M - 1u) * sy) / 4u],
                       a[(at + min(m + 2u, p.M - 1u) * sy) / 4u], a[(at + min(m + 3u, p.M - 1u) * sy) / 4u]);
  }
  let sz = p.a_strides.z;
  let at = base + min(m, p.M - 4u);
  let last = k_end - 1u;
  return transpose(mat4x4<f32>(a[(at + k * sz) / 4u], a[(at + min(k + 1u, last) * sz) / 4u],
                               a[(at + min(k + 2u, last) * sz) / 4u], a[(at + min(k + 3u, last) * sz) / 4u]));
}

// Rows k .. k+3 of B at n .. n+3, as the columns of the result (column j is row k + j along n; zero past
// k_end).
fn b_rows(base: u32, k: u32, n: u32, k_end: u32) -> mat4x4<f32> {
  if (B_N_CONTIGUOUS) {
    let sy = p.b_strides.y;
    let at = base + min(n, p.N - 4u);
    let last = k_end - 1u;
    let zero = vec4<f32>(0.0);
    return mat4x4<f32>(vec4<f32>(b[(at + k * sy) / 4u]),
                       select(zero, vec4<f32>(b[(at + min(k + 1u, last) * sy) / 4u]), k + 1u < k_end),
                       select(zero, vec4<f32>(b[(at + min(k + 2u, last) * sy) / 4u]), k + 2u < k_end),
                       select(zero, vec4<f32>(b[(at + min(k + 3u, last) * sy) / 4u]), k + 3u < k_end));
  }
  let sz = p.b_strides.z;
  let at = base + k;
  return transpose(mat4x4<f32>(vec4<f32>(b[(at + min(n, p.N - 1u) * sz) / 4u]),
                               vec4<f32>(b[(at + min(n + 1u, p.N - 1u) * sz) / 4u]),
                               vec4<f32>(b[(at + min(n + 2u, p.N - 1u) * sz) / 4u]),
                               vec4<f32>(b[(at + min(n + 3u, p.N - 1u) * sz) / 4u])));
}

@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u) {
  let index = wid.x + wid.y * nwg.x;
  let per_z = p.tiles_m * p.tiles_n;
  if (index >= per_z * p.batch * p.splits) {
    return;
  }
  let block = index % (per_z * p.batch);
  let z = block / per_z;
  let slice = index / (per_z * p.batch);
  let zc = slice * p.batch + z;
  let k_begin = slice * p.k_part;
  let k_end = min(k_steps(), k_begin + p.k_part);
  let a_base = p.a_offset + z * p.a_strides.x;
  let b_base = p.b_offset + z * p.b_strides.x;
  let r0 = (block % per_z) / p.tiles_n * TILE_M + lid.y * 4u;
  let r1 = r0 + WG_M * 4u;
  let n0 = (block % p.tiles_n) * TILE_N + lid.x * 4u;
  let n1 = n0 + WG_N * 4u;

  let zero = vec4<f32>(0.0);
  var c00 = zero; var c10 = zero; var c20 = zero; var c30 = zero; var c40 = zero; var c50 = zero; var c60 = zero;
  var c70 = zero; var c01 = zero; var c11 = zero; var c21 = zero; var c31 = zero; var c41 = zero; var c51 = zero;
  var c61 = zero; var c71 = zero;
  for (var k = k_begin; k < k_end; k += 4u) {
    let a0 = a_rows(a_base, r0, k, k_end);
    let b0 = b_rows(b_base, k, n0, k_end);
    c00 += b0 * a0[0];
    c10 += b0 * a0[1];
    c20 += b0 * a0[2];
    c30 += b0 * a0[3];
    if (GN == 2u) {
      let b1 = b_rows(b_base, k, n1, k_end);
      c01 += b1 * a0[0];
      c11 += b1 * a0[1];
      c21 += b1 * a0[2];
      c31 += b1 * a0[3];
      if (GM == 2u) {
        let a1 = a_rows(a_base, r1, k, k_end);
        c40 += b0 * a1[0];
        c50 += b0 * a1[1];
        c60 += b0 * a1[2];
        c70 += b0 * a1[3];
        c41 += b1 * a1[0];
        c51 += b1 * a1[1];
        c61 += b1 * a1[2];
        c71 += b1 * a1[3];
      }
    } else if (GM == 2u) {
      let a1 = a_rows(a_base, r1, k, k_end);
      c40 += b0 * a1[0];
      c50 += b0 * a1[1];
      c60 += b0 * a1[2];
      c70 += b0 * a1[3];
    }
  }

  finish(zc, r0, n0, c00, ACTIVATION);
  finish(zc, r0 + 1u, n0, c10, ACTIVATION);
  finish(zc, r0 + 2u, n0, c20, ACTIVATION);
  finish(zc, r0 + 3u, n0, c30, ACTIVATION);
  if (GN == 2u) {
    finish(zc, r0, n1, c01, ACTIVATION);
    finish(zc, r0 + 1u, n1, c11, ACTIVATION);
    finish(zc, r0 + 2u, n1, c21, ACTIVATION);
    finish(zc, r0 + 3u, n1, c31, ACTIVATION);
  }
  if (GM == 2u) {
    finish(zc, r1, n0, c40, ACTIVATION);
    finish(zc, r1 + 1u, n0, c50, ACTIVATION);
    finish(zc, r1 + 2u, n0, c60, ACTIVATION);
    finish(zc, r1 + 3u, n0, c70, ACTIVATION);
    if (GN == 2u) {
      finish(zc, r1, n1, c41, ACTIVATION);
      finish(zc, r1 + 1u, n1, c51, ACTIVATION);
      finish(zc, r1 + 2u, n1, c61, ACTIVATION);
      finish(zc, r1 + 3u, n1, c71, ACTIVATION);
    }
  }
}
