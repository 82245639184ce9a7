// gemv.wgsl — C = act(alpha * (A @ B) + beta * bias + residual) for few rows (M <= ROWS), float32:
// matrix-vector work, bound by reading B once, so each workgroup streams a slice of B in 16-byte loads and A
// stays in cache.
//
// Layouts (element strides/offsets in Params, as in gemm.wgsl; A and B bound as vec4 arrays, K % 4 == 0 and
// every stride but the contiguous one a multiple of 4):
//   A[z, m, k] contiguous along k.
//   B[z, k, n]: entry `dot_k` for B contiguous along k (Wᵀ of a linear weight: each output is a dot product
//     of two contiguous rows), which may be packed integer weights (PACKED_BITS != 0: packed.wgsl, the same
//     for every z; a lane then streams 16-byte chunks of 4 words, 32 q4 or 16 q8 values, decoded in
//     registers); entry `sweep_n` for B contiguous along n (row-major [K, N]).
//   bias[z, m, n] and residual[z, m, n] through arbitrary strides (0 = broadcast) when HAS_BIAS /
//   HAS_RESIDUAL. C contiguous [batch, M, N].
// Geometry, dot_k: a workgroup of 256 threads = 256/TEAM teams of TEAM lanes; team t computes the COLS
//   columns from n0 = ((256/TEAM)*wg + t) * COLS for all M rows: lane l reads B[k = 4*(l + TEAM*i) .. +3, n]
//   (over packed weights, 16-byte chunks l + TEAM*i of each column), summing into ROWS x COLS partial sums;
//   the lanes then combine in workgroup memory. TEAM = 32 suits a GPU (a warp's loads of a row coalesce);
//   TEAM = 1 suits a CPU adapter (each invocation streams its own rows, no combining).
// Geometry, sweep_n: a workgroup covers 8 vec4 = 32 columns: 8 threads along n (one vec4 each) x 32
//   k-slices; slice s sums the k-quads s, s+32, …; the 32 slices then combine in workgroup memory. (Many
//   slices rather than many columns, so that N = 768 still makes 24 workgroups.)
// Blocks are numbered n-fastest, then z, over a folded grid; workgroups past the end exit at once.
// NORM (dot_k only): A's rows are read RMS-normalized, an rms_norm folded into the product (norm_prologues.py):
//   C = (A[z, m, :] · norm_weight / sqrt(mean(A[z, m, :]²) + NORM_EPS)) @ B, norm_weight a contiguous [K] from
//   its buffer's start.
//   A's floats are multiplied by the weight as they are read, and their squares summed beside the products
//   (a team's lanes read each float once); each sum is multiplied by its row's scale (`norm_scales`) before
//   the lanes combine them.
// GATED (dot_k only): B's columns pair up, 2j the gate's and 2j + 1 the up projection's (gated_linears.py), and
//   C[z, m, j] = act(gate) * up, act the ACTIVATION (its bounds act_lo, act_hi), C [batch, M, N / 2]. Each sum
//   is rounded to C_T first, as the product stored and then read by the gated elementwise op would be.

//! include activation.wgsl
//! include bounded.wgsl

const ROWS: u32 = 1u;
const COLS: u32 = 1u;                      // dot_k: output columns per team (1 or 4)
const GROUP_WORDS: u32 = 4u;               // dot_k over packed weights: words of a chunk sharing a group
const C_HALF: bool = false;                // GATED: C_T is f16
const WORKGROUP: u32 = 256u;
override TEAM: u32 = 32u;                  // dot_k: lanes per team, a power of two <= WORKGROUP
const SLICES: u32 = 32u;                   // sweep_n: k-slices per column group
const VEC_SWEEP: u32 = WORKGROUP / SLICES; // sweep_n: vec4 column groups per workgroup

override ACTIVATION: u32 = ACT_NONE;
override NORM: bool = false;
override GATED: bool = false;
override NORM_EPS: f32 = 1.0;  // > 0: norm_prologues.py folds no other norm

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> a: array<vec4<A_T>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<B_T>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<C_T>;
@group(0) @binding(4) var<storage, read> residual: array<R_T>;
@group(0) @binding(5) var<storage, read> norm_weight: array<vec4<f32>>;
@group(0) @binding(6) var<uniform> p: Params;

//! include gemm_b_vec4.wgsl
//! include packed.wgsl

// The K the loops walk: p.K, never more than the longer operand holds elements (bounded.wgsl).
fn k_steps() -> u32 {
  return bounded(p.K, 4u * max(arrayLength(&a), arrayLength(&b)));
}

var<workgroup> partial: array<f32, WORKGROUP * 4u * ROWS>;  // sweep_n's 4 columns, or dot_k's COLS
const_assert COLS <= 4u;

fn store(z: u32, m: u32, n: u32, acc: f32) {
  c[(z * p.M + m) * p.N + n] = C_T(activate(epilogue_sum(z, m, n, acc), ACTIVATION, p.act_lo, p.act_hi));
}

// GATED: a sum as C_T holds it (C_HALF: C_T is f16; quantizeToF16, as a conversion to f16 and back may be
// compiled away).
fn as_stored(v: f32) -> f32 {
  return select(v, quantizeToF16(v), C_HALF);
}

fn store_gated(z: u32, m: u32, j: u32, gate: f32, up: f32) {
  let g = activate(as_stored(gate), ACTIVATION, p.act_lo, p.act_hi);
  c[(z * p.M + m) * (p.N / 2u) + j] = C_T(g * as_stored(up));
}

fn a_vec(z: u32, m: u32, k: u32) -> vec4<f32> {
  return vec4<f32>(a[(p.a_offset + z * p.a_strides.x + m * p.a_strides.y + k * p.a_strides.z) / 4u]);
}

// What A's floats k .. k+3 are multiplied by as they are read: the norm's weight under NORM, else 1.
fn a_gain(k: u32) -> vec4<f32> {
  if (NORM) {
    return norm_weight[k / 4u];
  }
  return vec4<f32>(1.0);
}

// A (scale, sum of (a / scale)²) pair of a part of a row with another: the sum rescaled to the larger scale
// (both powers of two, so exactly, but for what underflows).
fn norm_combine(x: vec2<f32>, y: vec2<f32>) -> vec2<f32> {
  let s = max(x.x, y.x);
  let rx = x.x / s;
  let ry = y.x / s;
  return vec2<f32>(s, x.y * rx * rx + y.y * ry * ry);
}

// NORM, for rows whose plain sum of squares may be wrong (`norm_scales`): 1 / sqrt(mean(A[z, m, :]²) + NORM_EPS)
// for each row m (rows past M as row M - 1), the same in every thread. Every thread of the workgroup calls it
// (it holds barriers); it leaves `partial` free. As in layer_norm.wgsl the squares are of a / 2^e, 2^e near the
// largest |a| (power_of_two_scale), so a row near 1e30 still normalizes: each thread sums its floats' squares
// under its own scale, and the pairs combine in a halving tree (`norm_combine`).
fn row_scales(z: u32, li: u32) -> array<f32, ROWS> {
  let K = k_steps();
  for (var m = 0u; m < ROWS; m++) {
    let row = min(m, p.M - 1u);
    var big = 0.0;
    for (var k = li * 4u; k < K; k += WORKGROUP * 4u) {
      let v = abs(a_vec(z, row, k));
      big = max(big, max(max(v.x, v.y), max(v.z, v.w)));
    }
    let s = power_of_two_scale(big);
    var q = 0.0;
    for (var k = li * 4u; k < K; k += WORKGROUP * 4u) {
      let v = a_vec(z, row, k) / s;
      q += dot(v, v);
    }
    partial[2u * (m * WORKGROUP + li)] = s;
    partial[2u * (m * WORKGROUP + li) + 1u] = q;
  }
  for (var half = WORKGROUP / 2u; half > 0u; half /= 2u) {
    workgroupBarrier();
    for (var m = 0u; m < ROWS && li < half; m++) {
      let i = 2u * (m * WORKGROUP + li);
      let j = 2u * (m * WORKGROUP + li + half);
      let c = norm_combine(vec2(partial[i], partial[i + 1u]), vec2(partial[j], partial[j + 1u]));
      partial[i] = c.x;
      partial[i + 1u] = c.y;
    }
  }
  workgroupBarrier();
  var scales: array<f32, ROWS>;
  for (var m = 0u; m < ROWS; m++) {
    // mean(a²) = q·s² / K, so the scale is (1 / s) / sqrt(q / K + eps / s²); eps / s² may underflow where q is 0.
    let inv = 1.0 / partial[2u * m * WORKGROUP];
    let q = partial[2u * m * WORKGROUP + 1u] / f32(p.K);
    scales[m] = select(inv * inverseSqrt(q + NORM_EPS * inv * inv), inverseSqrt(NORM_EPS), q == 0.0);
  }
  workgroupBarrier();  // every thread has read `partial`
  return scales;
}

// NORM: each row's 1 / sqrt(mean(a²) + NORM_EPS) from `sq`, the squares of the floats of A this lane read in
// the main loop: the team's sums meet in workgroup memory and each lane adds them up in lane order, so every
// team (each reads all of A the same way) finds the same scales. Where thread 0 finds a row's sum overflowed
// or so small (under 2^-100) that its squares may have underflowed, the workgroup as a whole takes
// `row_scales` instead (its flag in `partial`, past the sums: one u32 more would not fit 32 KiB at 8 rows).
// Every thread calls it; it leaves `partial` free.
fn norm_scales(z: u32, li: u32, lane: u32, sq: array<f32, ROWS>) -> array<f32, ROWS> {
  for (var m = 0u; m < ROWS; m++) {
    partial[m * WORKGROUP + li] = sq[m];
  }
  workgroupBarrier();
  var scales: array<f32, ROWS>;
  var plain = true;
  for (var m = 0u; m < ROWS; m++) {
    var q = 0.0;
    for (var j = 0u; j < TEAM; j++) {
      q += partial[m * WORKGROUP + li - lane + j];
    }
    plain = plain && (m >= p.M || (q >= 0x1p-100f && q <= 3e38));  // NaN fails too
    scales[m] = inverseSqrt(q / f32(p.K) + NORM_EPS);
  }
  if (li == 0u) {
    partial[ROWS * WORKGROUP] = select(0.0, 1.0, !plain);
  }
  if (workgroupUniformLoad(&partial[ROWS * WORKGROUP]) != 0.0) {  // its barrier: every thread has read `partial`
    return row_scales(z, li);
  }
  return scales;
}

// dot_k: the COLS columns of B a team reads from n0 on, those past N at column N - 1 (their sums not stored).
fn team_columns(n0: u32) -> array<u32, COLS> {
  var columns: array<u32, COLS>;
  for (var c = 0u; c < COLS; c++) {
    columns[c] = min(n0 + c, p.N - 1u);
  }
  return columns;
}

// dot_k's sums over packed weights for the COLS columns n0 .. n0+COLS-1 (those past N read column N-1, and
// are not stored), sums[m * COLS + c] for row m and column n0 + c (rows past M read row M-1, and are not
// stored). A lane's chunks of a column are 16 bytes (4 words, SPAN values), TEAM apart; GROUP_WORDS
// consecutive words of a chunk share one group (it divides 4 and the words of a group: packed.wgsl). Each
// chunk's words and its groups' parameters are loaded for every column before any is decoded, so a lane has
// them all in flight at once. Per group and column it sums code · a and, once for all columns, a alone, then
// applies the group's scale and zero point: Σ (code − zero) · scale · a = scale · (Σ code · a − zero · Σ a).
// A code becomes a float by its bits: OR-ed into the mantissa of 2^23, less 2^23, exactly (no
// integer-to-float conversion, a quarter-rate instruction); a word's shifts are constants (chunks start on
// whole words). Each float of A is read once for the COLS columns, each code once for the ROWS rows; A's
// floats past K (a partial last chunk) read as 0, so the loop body has no branch.
fn packed_sums(z: u32, n0: u32, lane: u32, sq: ptr<function, array<f32, ROWS>>) -> array<f32, ROWS * COLS> {
  const SPAN: u32 = 4u * PACKED_PER_WORD;
  const TWO_23: f32 = 8388608.0;
  const SETS: u32 = 4u / GROUP_WORDS;  // groups a chunk's words may belong to
  var sums: array<f32, ROWS * COLS>;
  let columns = team_columns(n0);
  var rows: array<u32, ROWS>;  // each row's first vec4 of A (A is contiguous along k), rows past M at M - 1
  for (var m = 0u; m < ROWS; m++) {
    rows[m] = (p.a_offset + z * p.a_strides.x + min(m, p.M - 1u) * p.a_strides.y) / 4u;
  }
  let K = k_steps();
  for (var k0 = lane * SPAN; k0 < K; k0 += TEAM * SPAN) {
    var words: array<vec4<u32>, COLS>;
    var groups: array<vec2<u32>, COLS * SETS>;
    for (var c = 0u; c < COLS; c++) {
      words[c] = vec4<u32>(b[packed_word(p.packed, columns[c], k0) / 4u]);
      for (var s = 0u; s < SETS; s++) {
        let k = min(k0 + s * GROUP_WORDS * PACKED_PER_WORD, K - 1u);
        groups[c * SETS + s] = packed_group(p.packed, columns[c], k);
      }
    }
    for (var s = 0u; s < SETS; s++) {
      // Σ code · a and Σ a over this set's words, zeroed by their initializers: a declaration without one, in a
      // loop, was not zeroed each time round by Dawn's compiler (on lavapipe), as WGSL says it should be.
      var dots = array<f32, ROWS * COLS>();
      var a_sums = array<f32, ROWS>();
      for (var j = s * GROUP_WORDS; j < (s + 1u) * GROUP_WORDS; j++) {
        for (var i = 0u; i < PACKED_PER_WORD; i += 4u) {
          let k = k0 + j * PACKED_PER_WORD + i;
          let shifts = (vec4<u32>(0u, 1u, 2u, 3u) + i) * PACKED_BITS;
          for (var m = 0u; m < ROWS; m++) {
            let raw = select(vec4<f32>(), vec4<f32>(a[rows[m] + k / 4u]), k < K);
            if (NORM) {
              (*sq)[m] += dot(raw, raw);
            }
            let av = raw * a_gain(k);
            a_sums[m] += dot(av, vec4<f32>(1.0));
            for (var c = 0u; c < COLS; c++) {
              let bits = ((vec4<u32>(words[c][j]) >> shifts) & vec4<u32>(PACKED_MASK)) | vec4<u32>(0x4b000000u);
              dots[m * COLS + c] += dot(bitcast<vec4<f32>>(bits) - TWO_23, av);
            }
          }
        }
      }
      for (var c = 0u; c < COLS; c++) {
        let group = groups[c * SETS + s];
        let zero = select(PACKED_MIDPOINT, bitcast<f32>(group.y), PACKED_ZERO_POINTS);
        for (var m = 0u; m < ROWS; m++) {
          sums[m * COLS + c] += bitcast<f32>(group.x) * (dots[m * COLS + c] - zero * a_sums[m]);
        }
      }
    }
  }
  return sums;
}

@compute @workgroup_size(WORKGROUP)
fn dot_k(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.tiles_n * p.batch) {
    return;
  }
  let z = block / p.tiles_n;
  let team = li / TEAM;
  let lane = li % TEAM;
  let n0 = ((block % p.tiles_n) * (WORKGROUP / TEAM) + team) * COLS;
  var sums: array<f32, ROWS * COLS>;
  var sq: array<f32, ROWS>;  // NORM: the squares of the floats of A this lane read
  if (n0 < p.N && PACKED_BITS != 0u) {
    sums = packed_sums(z, n0, lane, &sq);
  } else if (n0 < p.N) {  // float weights: each float of A read once for the COLS columns
    var columns = team_columns(n0);
    for (var c = 0u; c < COLS; c++) {  // each column's first element of B
      columns[c] = p.b_offset + z * p.b_strides.x + columns[c] * p.b_strides.z;
    }
    let K = k_steps();
    for (var k = lane * 4u; k < K; k += TEAM * 4u) {
      for (var m = 0u; m < ROWS; m++) {
        if (m < p.M) {
          let raw = a_vec(z, m, k);
          if (NORM) {
            sq[m] += dot(raw, raw);
          }
          let av = raw * a_gain(k);
          for (var c = 0u; c < COLS; c++) {
            sums[m * COLS + c] += dot(av, b_vec4(columns[c] + k * p.b_strides.y));
          }
        }
      }
    }
  }
  // The team's sums meet in workgroup memory, then lane l folds (in lane order) those of outputs s = l,
  // l + TEAM, …: one barrier, where a halving tree takes one per step (a CPU adapter's compiler spends seconds
  // on such steps, each over ROWS x COLS sums).
  var scales: array<f32, ROWS>;
  if (NORM) {
    scales = norm_scales(z, li, lane, sq);
  }
  for (var s = 0u; s < ROWS * COLS; s++) {
    partial[s * WORKGROUP + li] = select(sums[s], sums[s] * scales[s / COLS], NORM);
  }
  workgroupBarrier();
  let first = li - lane;
  for (var s = lane; s < ROWS * COLS; s += TEAM) {
    var acc = 0.0;
    for (var j = 0u; j < TEAM; j++) {
      acc += partial[s * WORKGROUP + first + j];
    }
    let m = s / COLS;
    let col = s % COLS;
    if (n0 + col < p.N && m < p.M) {
      if (GATED) {  // into the first of the slots it was folded from, which no other lane reads
        partial[s * WORKGROUP + first] = epilogue_sum(z, m, n0 + col, acc);
      } else {
        store(z, m, n0 + col, acc);
      }
    }
  }
  if (GATED) {
    workgroupBarrier();
    store_pairs(z, n0, team, lane);
  }
}

// GATED: the lane that folded a gate's output (an even column) stores its pair's product, the up column's
// output folded into its slot by the lane beside it (COLS > 1) or by the next team's.
fn store_pairs(z: u32, n0: u32, team: u32, lane: u32) {
  for (var s = lane; s < ROWS * COLS; s += TEAM) {
    let m = s / COLS;
    let col = s % COLS;
    if ((n0 + col) % 2u == 0u && n0 + col < p.N && m < p.M) {
      let up = team * COLS + col + 1u;  // its place in the workgroup's columns: their count is even
      let gate = partial[s * WORKGROUP + team * TEAM];
      store_gated(z, m, (n0 + col) / 2u, gate, partial[(m * COLS + up % COLS) * WORKGROUP + up / COLS * TEAM]);
    }
  }
}

@compute @workgroup_size(WORKGROUP)
fn sweep_n(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
           @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.tiles_n * p.batch) {
    return;
  }
  let z = block / p.tiles_n;
  let slice = li / VEC_SWEEP;
  let g = li % VEC_SWEEP;
  let n = ((block % p.tiles_n) * VEC_SWEEP + g) * 4u;
  var sums: array<vec4<f32>, ROWS>;
  if (n < p.N) {
    let base = p.b_offset + z * p.b_strides.x + n * p.b_strides.z;
    let K = k_steps();
    for (var k4 = slice * 4u; k4 < K; k4 += SLICES * 4u) {
      for (var m = 0u; m < ROWS; m++) {
        if (m < p.M) {
          let av = a_vec(z, m, k4);
          for (var j = 0u; j < 4u; j++) {
            sums[m] = fma(vec4<f32>(av[j]), b_vec4(base + (k4 + j) * p.b_strides.y), sums[m]);
          }
        }
      }
    }
  }
  for (var m = 0u; m < ROWS; m++) {
    for (var j = 0u; j < 4u; j++) {
      partial[(m * 4u + j) * WORKGROUP + li] = sums[m][j];
    }
  }
  workgroupBarrier();
  if (slice == 0u && n < p.N) {
    for (var m = 0u; m < min(p.M, ROWS); m++) {
      for (var j = 0u; j < 4u; j++) {
        var acc = 0.0;
        for (var s = 0u; s < SLICES; s++) {
          acc += partial[(m * 4u + j) * WORKGROUP + s * VEC_SWEEP + g];
        }
        if (n + j < p.N) {
          store(z, m, n + j, acc);
        }
      }
    }
  }
}
