// gemm_subgroup_matrix.wgsl — batched C = act(alpha * (A @ B) + beta * bias + residual) on the GPU's matrix
// units, through WGSL subgroup matrices (chromium_experimental_subgroup_matrix; tensor cores on NVIDIA):
// 16 x 16 x 16 products of float16 operands, summed in float32. Interface, layouts, operand fetches and
// epilogue: gemm_operands.wgsl, shared with the float32 vec4 kernels, so every operand layout, the implicit
// im2col A of a convolution, float16 weights, split K and the fused epilogue work here unchanged.
//
// Precision, by PARTS (error bounds and measurements: docs/design.md, "GEMM on matrix units"):
//   1: each operand rounded to f16 (compile option precision="float16").
//   2: float32-accurate. Each operand x is split into two f16 parts, x = 2^4 * (hi + 2^-11 * lo) with
//      hi = 2^-4 * x rounded to f16 and lo = f16(2^11 * (2^-4 * x - hi)), and A @ B is taken as
//      2^8 * (hi @ hi + 2^-11 * (hi @ lo + lo @ hi)): three products into two accumulators (lo @ lo, 2^-22 of
//      the product, is dropped), as CUTLASS's 3xTF32. The 2^-4 keeps operands up to 2^20 inside f16's range;
//      the 2^11 keeps lo clear of f16's subnormals, so each operand carries 22 significant bits.
// Tiling: SG_M x SG_N subgroups; each owns a 64 x 32 block of the workgroup's TILE_M x TILE_N tile as 4 x 2
//   16 x 16 accumulators (a Block; PARTS of them), subgroup (sm, sn) = (sg / SG_N, sg % SG_N) at rows
//   sm*64 and columns sn*32. Accumulators and operands are named struct fields, never array elements:
//   the driver keeps an array of subgroup matrices in local memory unless every index folds to a constant
//   once loops unroll, and WGSL cannot ask for the unrolling (measured: an array of accumulators indexed in
//   loops ran 4096³ at 31 TFLOP/s on an H200, every tiling alike).
// Workgroup memory: per stage and part, A's TILE_M x TILE_K tile and B's TILE_K x TILE_N tile as f16, cut into
//   16 x 16 fragments, each its own array (a Fragment) of 16 rows along its operand's contiguous axis (A's
//   fragment as [m][k] when K-contiguous, else [k][m]; B's as [k][n] when N-contiguous, else [n][k]) so that
//   a fetched vec4 lands as 4 consecutive f16s; 8 f16s (16 bytes) of padding end each row: rows 16-byte
//   aligned and spread over the banks for the matrix loads. Fragments run k-fastest for A and n-fastest for
//   B. Every matrix load and store is of a whole array at offset 0 with a constant stride, so that Tint's
//   robustness can prove it in bounds: with a varying offset it puts each behind a branch (H100, 4096³: 73.1
//   TFLOP/s with the branches, 84.6 without; 137 with robustness off altogether). STAGES = 2 double-buffers (one
//   barrier per k-step: a stage is rewritten only after the barrier that ends the step that read it);
//   STAGES = 1 stages the next tiles between two barriers. The next k-step's vec4s are fetched into
//   registers while the current step multiplies, as in the vec4 kernels.
// Subgroups: the tiling is laid out for 32 invocations per subgroup. Narrower subgroups are more: those past
//   SG_M * SG_N load tiles and write outputs but own no accumulators. Wider ones would leave blocks
//   uncomputed, so the runtime counts the feature as present only where the adapter's subgroup matrices come
//   in subgroups of at most 32 (runtime/engine.py; docs/artifact.md).
// Epilogue: accumulator by accumulator, each subgroup stores its c00 into its array of `staged` (16 x 16
//   f32), the whole workgroup writes the staged blocks out, 2 vec4s of outputs per invocation, through
//   finish() (whatever the subgroups' width), and the accumulators shift towards c00.
// Geometry: as the vec4 kernels: blocks n-fastest, then m, then z, then K slices; workgroups past the end exit.

// Subgroup-matrix calls must be subgroup-uniform; Tint can prove only workgroup uniformity, and the calls
// depend on the subgroup's id. They are subgroup-uniform: every value they take is the same across a subgroup.
diagnostic(off, chromium.subgroup_matrix_uniformity);

const SG_M: u32 = 2u;  // subgroups along m
const SG_N: u32 = 4u;  // … along n
const TILE_K: u32 = 16u;  // a multiple of 16
const STAGES: u32 = 2u;  // 1 or 2
const PARTS: u32 = 1u;  // f16 parts per operand: 1 or 2

const FRAG: u32 = 16u;  // the subgroup matrices' M = N = K
const FRAG_M: u32 = 4u;  // 16 x 16 accumulators per subgroup along m (the fields of Block)
const FRAG_N: u32 = 2u;  // … along n
const SUBGROUP: u32 = 32u;  // invocations per subgroup the tiling is laid out for
const TILE_M: u32 = SG_M * FRAG_M * FRAG;
const TILE_N: u32 = SG_N * FRAG_N * FRAG;
const SUBGROUPS: u32 = SG_M * SG_N;
const THREADS: u32 = SUBGROUPS * SUBGROUP;
const ACCS: u32 = FRAG_M * FRAG_N;  // accumulators per subgroup and part
const A_LOADS: u32 = TILE_M * TILE_K / (4u * THREADS);  // vec4 fetches per invocation per k-step
const B_LOADS: u32 = TILE_N * TILE_K / (4u * THREADS);
const OUT_VEC4S: u32 = SUBGROUPS * FRAG * FRAG / (4u * THREADS);  // staged vec4s each invocation writes out
const PAD: u32 = 8u;
const FRAG_ROW: u32 = FRAG + PAD;  // f16s from one row of a staged fragment to the next
const A_FRAGS: u32 = TILE_M / FRAG * (TILE_K / FRAG);  // fragments of one part of a stage
const B_FRAGS: u32 = TILE_K / FRAG * (TILE_N / FRAG);
const SCALE_IN: f32 = select(1.0, 0.0625, PARTS == 2u);  // 2^-4 for split operands
const SCALE_OUT: f32 = 1.0 / (SCALE_IN * SCALE_IN);
const LO_SCALE: f32 = 2048.0;  // 2^11

//! include gemm_operands.wgsl

alias Left = subgroup_matrix_left<f16, FRAG, FRAG>;
alias Right = subgroup_matrix_right<f16, FRAG, FRAG>;
alias Acc = subgroup_matrix_result<f32, FRAG, FRAG>;

// A subgroup's accumulators: c<i><j> holds rows 16i .. 16i+15 and columns 16j .. 16j+15 of its block.
struct Block {
  c00: Acc, c01: Acc, c10: Acc, c11: Acc, c20: Acc, c21: Acc, c30: Acc, c31: Acc,
}

// One k-step of 16 of a block's operands: rows l<i> of A and columns r<j> of B.
struct Operands {
  l0: Left, l1: Left, l2: Left, l3: Left, r0: Right, r1: Right,
}

alias Fragment = array<f16, FRAG * FRAG_ROW>;

var<workgroup> a_tile: array<Fragment, STAGES * PARTS * A_FRAGS>;
var<workgroup> b_tile: array<Fragment, STAGES * PARTS * B_FRAGS>;
var<workgroup> staged: array<array<f32, FRAG * FRAG>, SUBGROUPS>;

// Where A's element (m, k) of one part of a stage is staged: (fragment, index within it); b_at likewise for
// B's (k, n).
fn a_at(m: u32, k: u32) -> vec2<u32> {
  let within = select((k % FRAG) * FRAG_ROW + m % FRAG, (m % FRAG) * FRAG_ROW + k % FRAG, A_K_CONTIGUOUS);
  return vec2<u32>(m / FRAG * (TILE_K / FRAG) + k / FRAG, within);
}

fn b_at(k: u32, n: u32) -> vec2<u32> {
  let within = select((n % FRAG) * FRAG_ROW + k % FRAG, (k % FRAG) * FRAG_ROW + n % FRAG, B_N_CONTIGUOUS);
  return vec2<u32>(k / FRAG * (TILE_N / FRAG) + n / FRAG, within);
}

// The f16 parts of 4 operand values: [hi, lo] as in the header (just [f16(v), 0] when PARTS = 1).
fn parts(v: vec4<f32>) -> array<vec4<f16>, 2> {
  if (PARTS == 1u) {
    return array<vec4<f16>, 2>(vec4<f16>(v), vec4<f16>());
  }
  let x = v * SCALE_IN;
  let hi = on_f16_grid(x);
  return array<vec4<f16>, 2>(vec4<f16>(hi), vec4<f16>((x - hi) * LO_SCALE));
}

// x rounded to a value float16 holds exactly (to nearest, ties away from zero; 0 below f16's least
// subnormal), computed on the bits. Not f32(f16(x)): compilers may fold that round trip into x (lavapipe's
// does), which would leave lo = 0.
fn on_f16_grid(x: vec4<f32>) -> vec4<f32> {
  let bits = bitcast<vec4<u32>>(x);
  // Fraction bits f16 cannot hold: 13 from 2^-14 (biased exponent 113) up, one more per binade below.
  let drop = vec4<u32>(126u) - min((bits >> vec4<u32>(23u)) & vec4<u32>(0xffu), vec4<u32>(113u));
  let kept = (bits + (vec4<u32>(1u) << (drop - 1u))) & ~((vec4<u32>(1u) << drop) - 1u);
  return select(bitcast<vec4<f32>>(kept), vec4<f32>(0.0), drop > vec4<u32>(23u));
}

// Writes vec4 number e of a k-step's A tile (as fetched) into stage s, each part q.
fn stage_a(s: u32, e: u32, v: vec4<f32>) {
  let h = parts(v);
  for (var q = 0u; q < PARTS; q++) {
    stage_a_part(s, q, e, h[q]);
  }
}

fn stage_a_part(s: u32, q: u32, e: u32, v: vec4<f16>) {
  let mk = a_element(e);
  let at = a_at(mk.x, mk.y);
  let f = (s * PARTS + q) * A_FRAGS + at.x;
  for (var j = 0u; j < 4u; j++) {
    a_tile[f][at.y + j] = v[j];
  }
}

fn stage_b(s: u32, e: u32, v: vec4<f32>) {
  let h = parts(v);
  for (var q = 0u; q < PARTS; q++) {
    stage_b_part(s, q, e, h[q]);
  }
}

fn stage_b_part(s: u32, q: u32, e: u32, v: vec4<f16>) {
  let kn = b_element(e);
  let at = b_at(kn.x, kn.y);
  let f = (s * PARTS + q) * B_FRAGS + at.x;
  for (var j = 0u; j < 4u; j++) {
    b_tile[f][at.y + j] = v[j];
  }
}

// A's staged fragment f as a left operand (column-major when stored [k][m]); load_right likewise for B's
// ([n][k] is column-major for a K x N fragment).
fn load_left(f: u32) -> Left {
  if (A_K_CONTIGUOUS) {
    return subgroupMatrixLoad<Left>(&a_tile[f], 0u, false, FRAG_ROW);
  }
  return subgroupMatrixLoad<Left>(&a_tile[f], 0u, true, FRAG_ROW);
}

fn load_right(f: u32) -> Right {
  if (B_N_CONTIGUOUS) {
    return subgroupMatrixLoad<Right>(&b_tile[f], 0u, false, FRAG_ROW);
  }
  return subgroupMatrixLoad<Right>(&b_tile[f], 0u, true, FRAG_ROW);
}

// The operands of one k-step of 16 for the block whose first fragments are a0 (A) and b0 (B).
fn load_operands(a0: u32, b0: u32) -> Operands {
  let a_step = TILE_K / FRAG;  // fragments from one 16-row block of A to the next
  return Operands(load_left(a0), load_left(a0 + a_step), load_left(a0 + 2u * a_step),
                  load_left(a0 + 3u * a_step), load_right(b0), load_right(b0 + 1u));
}

fn multiply(acc: ptr<function, Block>, x: Operands, y: Operands) {
  (*acc).c00 = subgroupMatrixMultiplyAccumulate(x.l0, y.r0, (*acc).c00);
  (*acc).c01 = subgroupMatrixMultiplyAccumulate(x.l0, y.r1, (*acc).c01);
  (*acc).c10 = subgroupMatrixMultiplyAccumulate(x.l1, y.r0, (*acc).c10);
  (*acc).c11 = subgroupMatrixMultiplyAccumulate(x.l1, y.r1, (*acc).c11);
  (*acc).c20 = subgroupMatrixMultiplyAccumulate(x.l2, y.r0, (*acc).c20);
  (*acc).c21 = subgroupMatrixMultiplyAccumulate(x.l2, y.r1, (*acc).c21);
  (*acc).c30 = subgroupMatrixMultiplyAccumulate(x.l3, y.r0, (*acc).c30);
  (*acc).c31 = subgroupMatrixMultiplyAccumulate(x.l3, y.r1, (*acc).c31);
}

// The block with every accumulator moved one place towards c00 (the epilogue writes c00 out each time).
fn shifted(b: Block) -> Block {
  return Block(b.c01, b.c10, b.c11, b.c20, b.c21, b.c30, b.c31, b.c31);
}

// (row, column) within the workgroup's tile of staged vec4 number v for accumulator f: block v / 64 is
// subgroup v / 64's, row (v % 64) / 4 and columns 4 * (v % 4) .. +3 of it.
fn out_at(f: u32, v: u32) -> vec2<u32> {
  let owner = v / (FRAG * FRAG / 4u);
  let e = v % (FRAG * FRAG / 4u);
  return vec2<u32>(((owner / SG_N) * FRAG_M + f / FRAG_N) * FRAG + e / 4u,
                   ((owner % SG_N) * FRAG_N + f % FRAG_N) * FRAG + (e % 4u) * 4u);
}

fn staged_vec4(v: u32) -> vec4<f32> {
  let owner = v / (FRAG * FRAG / 4u);
  let e = 4u * (v % (FRAG * FRAG / 4u));
  return vec4<f32>(staged[owner][e], staged[owner][e + 1u], staged[owner][e + 2u], staged[owner][e + 3u]);
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32, @builtin(subgroup_id) sg: u32) {
  let index = wid.x + wid.y * nwg.x;
  let per_z = p.tiles_m * p.tiles_n;
  if (index >= per_z * p.batch * p.splits) {
    return;
  }
  let block = index % (per_z * p.batch);
  let z = block / per_z;
  let zc = index / (per_z * p.batch) * p.batch + z;  // C's batch index: slice s writes C[s * batch + z]
  let m0 = (block % per_z) / p.tiles_n * TILE_M;
  let n0 = (block % p.tiles_n) * TILE_N;
  let a_base = p.a_offset + z * p.a_strides.x;
  let b_base = p.b_offset + z * p.b_strides.x;
  let k_begin = (zc / p.batch) * p.k_part;
  let k_end = min(k_steps(), k_begin + p.k_part);
  let mine = sg < SUBGROUPS;  // whether this subgroup owns accumulators
  let sm = sg / SG_N;
  let sn = sg % SG_N;

  var a_next: array<vec4<f32>, A_LOADS>;
  var b_next: array<vec4<f32>, B_LOADS>;
  for (var i = 0u; i < A_LOADS; i++) {
    stage_a(0u, li + i * THREADS, fetch_a(a_base, m0, k_begin, li + i * THREADS));
  }
  for (var i = 0u; i < B_LOADS; i++) {
    stage_b(0u, li + i * THREADS, fetch_b(b_base, k_begin, n0, li + i * THREADS));
  }
  workgroupBarrier();

  var acc: Block;
  var cross: Block;  // PARTS = 2: hi @ lo + lo @ hi
  var s = 0u;
  for (var k0 = k_begin; k0 < k_end; k0 += TILE_K) {
    let more = k0 + TILE_K < k_end;
    if (more) {
      for (var i = 0u; i < A_LOADS; i++) {
        a_next[i] = fetch_a(a_base, m0, k0 + TILE_K, li + i * THREADS);
      }
      for (var i = 0u; i < B_LOADS; i++) {
        b_next[i] = fetch_b(b_base, k0 + TILE_K, n0, li + i * THREADS);
      }
    }
    if (mine) {
      for (var kk = 0u; kk < TILE_K; kk += FRAG) {
        let a0 = s * PARTS * A_FRAGS + a_at(sm * FRAG_M * FRAG, kk).x;
        let b0 = s * PARTS * B_FRAGS + b_at(kk, sn * FRAG_N * FRAG).x;
        let hi = load_operands(a0, b0);
        multiply(&acc, hi, hi);
        if (PARTS == 2u) {
          let lo = load_operands(a0 + A_FRAGS, b0 + B_FRAGS);
          multiply(&cross, hi, lo);
          multiply(&cross, lo, hi);
        }
      }
    }
    if (STAGES == 1u) {
      workgroupBarrier();
    }
    if (more) {
      let next = (s + 1u) % STAGES;
      for (var i = 0u; i < A_LOADS; i++) {
        stage_a(next, li + i * THREADS, a_next[i]);
      }
      for (var i = 0u; i < B_LOADS; i++) {
        stage_b(next, li + i * THREADS, b_next[i]);
      }
    }
    workgroupBarrier();
    s = (s + 1u) % STAGES;
  }

  // Accumulator by accumulator: each subgroup stages its c00 (and cross's) in `staged`, the workgroup writes
  // the staged blocks out, then the accumulators shift towards c00.
  for (var f = 0u; f < ACCS; f++) {
    var lo: array<vec4<f32>, OUT_VEC4S>;
    if (PARTS == 2u) {
      if (mine) {
        subgroupMatrixStore(&staged[sg], 0u, cross.c00, false, FRAG);
      }
      workgroupBarrier();
      for (var h = 0u; h < OUT_VEC4S; h++) {
        lo[h] = staged_vec4(li + h * THREADS);
      }
      workgroupBarrier();
      cross = shifted(cross);
    }
    if (mine) {
      subgroupMatrixStore(&staged[sg], 0u, acc.c00, false, FRAG);
    }
    workgroupBarrier();
    for (var h = 0u; h < OUT_VEC4S; h++) {
      var v = staged_vec4(li + h * THREADS);
      if (PARTS == 2u) {
        v = (v + lo[h] * (1.0 / LO_SCALE)) * SCALE_OUT;
      }
      let at = out_at(f, li + h * THREADS);
      finish(zc, m0 + at.x, n0 + at.y, v, stored_activation());
    }
    workgroupBarrier();
    acc = shifted(acc);
  }
  if (ACTIVATION != stored_activation()) {  // exp, erf or tanh: a pass of its own (gemm_operands.wgsl)
    for (var f = 0u; f < ACCS; f++) {
      for (var h = 0u; h < OUT_VEC4S; h++) {
        let at = out_at(f, li + h * THREADS);
        activate_stored(zc, m0 + at.x, n0 + at.y);
      }
    }
  }
}
