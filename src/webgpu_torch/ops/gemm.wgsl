// gemm.wgsl — batched C = act(beta * bias + alpha * (A @ B)) in float32, with float32 accumulation.
//
// Layouts (element strides and offsets in Params; any stride may be 0, which broadcasts):
//   A[z, m, k] = a[a_offset + z*a_strides.x + m*a_strides.y + k*a_strides.z]
//   B[z, k, n] = b[b_offset + z*b_strides.x + k*b_strides.y + n*b_strides.z]
//   bias[z, m, n] likewise through bias_strides (read only when HAS_BIAS)
//   C: contiguous [batch, M, N].
// So a transposed operand is read in place; A_K_CONTIGUOUS / B_N_CONTIGUOUS say which axis of each operand is
// the contiguous one, and pick the thread-to-element mapping that keeps global loads coalesced.
//
// Tiling: a workgroup computes one TILE_M x TILE_N block of C for one z, stepping K by TILE_K through
//   workgroup memory (a_tile is [k][m], b_tile is [k][n], so the inner product reads rows of both).
//   Each of the WG_M x WG_N threads accumulates a THREAD_M x THREAD_N register tile whose rows are
//   ty + i*WG_M and columns tx + j*WG_N: interleaved rather than blocked, so neighbouring threads read
//   neighbouring workgroup-memory words and store neighbouring words of C.
//   Out-of-range rows, columns and k read as 0 and are never stored: any M, N, K works.
// Geometry: blocks are numbered n-fastest, then m, then z, over a grid folded to fit 65,535 workgroups per
//   dimension; workgroups past the last block exit at once (uniformly, before any barrier).
// Specialised by const substitution (register-tile and tile sizes must be constants in WGSL). `act` is the
// fused activation epilogue (ACTIVATION, from activation.wgsl).

//! include activation.wgsl

const TILE_M: u32 = 32u;
const TILE_N: u32 = 32u;
const TILE_K: u32 = 32u;
const THREAD_M: u32 = 4u;
const THREAD_N: u32 = 4u;
const WG_M: u32 = TILE_M / THREAD_M;
const WG_N: u32 = TILE_N / THREAD_N;
const THREADS: u32 = WG_M * WG_N;

override A_K_CONTIGUOUS: bool = true;
override B_N_CONTIGUOUS: bool = true;
override HAS_BIAS: bool = false;
override ACTIVATION: u32 = ACT_NONE;

struct Params {
  M: u32,
  N: u32,
  K: u32,
  batch: u32,
  tiles_m: u32,
  tiles_n: u32,
  alpha: f32,
  beta: f32,
  act_lo: f32,
  act_hi: f32,
  a_offset: u32,
  b_offset: u32,
  bias_offset: u32,
  a_strides: vec4<u32>,     // (z, m, k, -)
  b_strides: vec4<u32>,     // (z, k, n, -)
  bias_strides: vec4<u32>,  // (z, m, n, -)
}

@group(0) @binding(0) var<storage, read> a: array<f32>;
@group(0) @binding(1) var<storage, read> b: array<f32>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<f32>;
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> a_tile: array<f32, TILE_K * TILE_M>;
var<workgroup> b_tile: array<f32, TILE_K * TILE_N>;

fn load_a_tile(base: u32, m0: u32, k0: u32, lid: u32) {
  for (var e = lid; e < TILE_M * TILE_K; e += THREADS) {
    var m = e % TILE_M;
    var k = e / TILE_M;
    if (A_K_CONTIGUOUS) {
      m = e / TILE_K;
      k = e % TILE_K;
    }
    var v = 0.0;
    if (m0 + m < p.M && k0 + k < p.K) {
      v = a[base + (m0 + m) * p.a_strides.y + (k0 + k) * p.a_strides.z];
    }
    a_tile[k * TILE_M + m] = v;
  }
}

fn load_b_tile(base: u32, k0: u32, n0: u32, lid: u32) {
  for (var e = lid; e < TILE_N * TILE_K; e += THREADS) {
    var n = e / TILE_K;
    var k = e % TILE_K;
    if (B_N_CONTIGUOUS) {
      n = e % TILE_N;
      k = e / TILE_N;
    }
    var v = 0.0;
    if (k0 + k < p.K && n0 + n < p.N) {
      v = b[base + (k0 + k) * p.b_strides.y + (n0 + n) * p.b_strides.z];
    }
    b_tile[k * TILE_N + n] = v;
  }
}

@compute @workgroup_size(WG_N, WG_M)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_id) lid: vec3u, @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  let per_z = p.tiles_m * p.tiles_n;
  if (block >= per_z * p.batch) {
    return;
  }
  let z = block / per_z;
  let m0 = (block % per_z) / p.tiles_n * TILE_M;
  let n0 = (block % p.tiles_n) * TILE_N;
  let a_base = p.a_offset + z * p.a_strides.x;
  let b_base = p.b_offset + z * p.b_strides.x;

  var acc: array<f32, THREAD_M * THREAD_N>;
  for (var k0 = 0u; k0 < p.K; k0 += TILE_K) {
    load_a_tile(a_base, m0, k0, li);
    load_b_tile(b_base, k0, n0, li);
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
      if (m < p.M && n < p.N) {
        var v = p.alpha * acc[i * THREAD_N + j];
        if (HAS_BIAS) {
          v += p.beta * bias[p.bias_offset + z * p.bias_strides.x + m * p.bias_strides.y + n * p.bias_strides.z];
        }
        c[(z * p.M + m) * p.N + n] = activate(v, ACTIVATION, p.act_lo, p.act_hi);
      }
    }
  }
}
