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
// Geometry, dot_k: a workgroup of 256 threads = 256/TEAM teams of TEAM lanes; team t computes column
//   n = (256/TEAM)*wg + t for all M rows: lane l reads B[k = 4*(l + TEAM*i) .. +3, n], summing into ROWS
//   partial sums; the lanes then combine in workgroup memory. TEAM = 32 suits a GPU (a warp's loads of a row
//   coalesce); TEAM = 1 suits a CPU adapter (each invocation streams its own row, no combining).
// Geometry, sweep_n: a workgroup covers 8 vec4 = 32 columns: 8 threads along n (one vec4 each) x 32
//   k-slices; slice s sums the k-quads s, s+32, …; the 32 slices then combine in workgroup memory. (Many
//   slices rather than many columns, so that N = 768 still makes 24 workgroups.)
// Blocks are numbered n-fastest, then z, over a folded grid; workgroups past the end exit at once.

//! include activation.wgsl
//! include bounded.wgsl

const ROWS: u32 = 1u;
const WORKGROUP: u32 = 256u;
override TEAM: u32 = 32u;                  // dot_k: lanes per output column, a power of two <= WORKGROUP
const SLICES: u32 = 32u;                   // sweep_n: k-slices per column group
const VEC_SWEEP: u32 = WORKGROUP / SLICES; // sweep_n: vec4 column groups per workgroup

override ACTIVATION: u32 = ACT_NONE;

//! include gemm_params.wgsl

@group(0) @binding(0) var<storage, read> a: array<vec4<A_T>>;
@group(0) @binding(1) var<storage, read> b: array<vec4<B_T>>;
@group(0) @binding(2) var<storage, read> bias: array<f32>;
@group(0) @binding(3) var<storage, read_write> c: array<C_T>;
@group(0) @binding(4) var<storage, read> residual: array<R_T>;
@group(0) @binding(5) var<uniform> p: Params;

//! include gemm_b_vec4.wgsl
//! include packed.wgsl

// The K the loops walk: p.K, never more than the longer operand holds elements (bounded.wgsl).
fn k_steps() -> u32 {
  return bounded(p.K, 4u * max(arrayLength(&a), arrayLength(&b)));
}

var<workgroup> partial: array<f32, WORKGROUP * 4u * ROWS>;

fn store(z: u32, m: u32, n: u32, acc: f32) {
  c[(z * p.M + m) * p.N + n] = C_T(activate(epilogue_sum(z, m, n, acc), ACTIVATION, p.act_lo, p.act_hi));
}

fn a_vec(z: u32, m: u32, k: u32) -> vec4<f32> {
  return vec4<f32>(a[(p.a_offset + z * p.a_strides.x + m * p.a_strides.y + k * p.a_strides.z) / 4u]);
}

// dot_k's sums for column n over packed weights: the lane's chunks of row n are 16 bytes each, TEAM apart;
// every word holds PACKED_PER_WORD values of one group (packed.wgsl), decoded four at a time. A group's scale
// and zero point are read once for the words it spans in a row.
fn packed_sums(z: u32, n: u32, lane: u32) -> array<f32, ROWS> {
  const SPAN: u32 = 4u * PACKED_PER_WORD;  // values per chunk
  var sums: array<f32, ROWS>;
  var at = 0xffffffffu;  // the group `group` holds
  var group = vec2<u32>(0u);
  let K = k_steps();
  for (var k0 = lane * SPAN; k0 < K; k0 += TEAM * SPAN) {
    let words = vec4<u32>(b[packed_word(p.packed, n, k0) / 4u]);
    for (var j = 0u; j < 4u; j++) {
      let kw = k0 + j * PACKED_PER_WORD;
      if (kw >= K) {
        break;
      }
      if (kw / p.packed.y != at) {
        at = kw / p.packed.y;
        group = packed_group(p.packed, n, kw);
      }
      for (var i = 0u; i < PACKED_PER_WORD && kw + i < K; i += 4u) {
        let w = packed_values(words[j], kw + i, group);
        for (var m = 0u; m < ROWS; m++) {
          if (m < p.M) {
            sums[m] += dot(a_vec(z, m, kw + i), w);
          }
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
  let n = (block % p.tiles_n) * (WORKGROUP / TEAM) + team;
  var sums: array<f32, ROWS>;
  if (n < p.N && PACKED_BITS != 0u) {
    sums = packed_sums(z, n, lane);
  } else if (n < p.N) {
    let col = p.b_offset + z * p.b_strides.x + n * p.b_strides.z;
    let K = k_steps();
    for (var k = lane * 4u; k < K; k += TEAM * 4u) {
      let w = b_vec4(col + k * p.b_strides.y);
      for (var m = 0u; m < ROWS; m++) {
        if (m < p.M) {
          sums[m] += dot(a_vec(z, m, k), w);
        }
      }
    }
  }
  for (var m = 0u; m < ROWS; m++) {
    partial[m * WORKGROUP + li] = sums[m];
  }
  workgroupBarrier();
  for (var half = TEAM / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      for (var m = 0u; m < ROWS; m++) {
        partial[m * WORKGROUP + li] += partial[m * WORKGROUP + li + half];
      }
    }
    workgroupBarrier();
  }
  if (lane == 0u && n < p.N) {
    for (var m = 0u; m < min(p.M, ROWS); m++) {
      store(z, m, n, partial[m * WORKGROUP + li]);
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
