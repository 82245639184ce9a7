// attention_split.wgsl — attention for a few query rows (a decode step: S_q ≤ 4), the keys split across
// workgroups (flash-decoding): out = softmax(scale * q @ kᵀ + mask) @ v, fp32 throughout.
//   split  one workgroup per (query row, split s): the row's scores against keys [s·CHUNK, (s+1)·CHUNK) ∩ the
//          row's live keys, their max m, Σ exp(x − m) = l and Σ exp(x − m)·v = acc, into partial[row, s].
//          A split past the row's live keys exits at once, but split 0, which then writes m = −inf, l = 0,
//          acc = 0: so a step's cost follows the live prefix of a static cache, not its length.
//   merge  one thread per (query row, 4 columns of v), over the row's splits up to its last live key's (at
//          least split 0): M = max_s m_s, out = Σ_s e^(m_s − M)·acc_s / Σ_s e^(m_s − M)·l_s, stored at
//          b·o.x + h·o.y + i·o.z + e (the [B, Sq, H, Dv] layout attention.wgsl writes). A row that sees no key
//          gives 0 with SAFE (sdpa's rule), else NaN (softmax's).
//
// Layouts: q, k, v, mask, and the mask kinds, as attention.wgsl (shared readers: attention_rows.wgsl); query
//   row r = (b·H + h)·Sq + i; GQA heads share K/V head h / group. partial is [rows, splits, 1 + DV4] vec4s:
//   (m, l, 0, 0) then acc's DV4 vec4s.
// split: THREADS threads; thread t scores keys t, t + THREADS, … of the chunk (each a dot over D4 vec4s read
//   straight from k), into workgroup memory; the max and the sum of exponentials are tree reductions over the
//   threads; then thread t sums p_j·v[j] for vec4 column t % DV4 over keys j ≡ t / DV4 (mod THREADS / DV4),
//   and the key groups add up through workgroup memory. Workgroups numbered row-major over (row, split) in a
//   grid folded to fit 65,535 per dimension; those past the end exit at once.
// merge: 64 threads a workgroup over rows·DV4 (row, column) pairs; its loop over splits runs no further than
//   partial holds (bounded.wgsl).
// Specialised by const substitution (D4, DV4, CHUNK) and aliases (MaskT; Q_T, K_T, V_T, O_T: how q, k, v and out
// are stored, f32 or f16 activations under precision="float16"; scores, sums and partials are f32).

//! include attention_rows.wgsl
//! include bounded.wgsl

const D4: u32 = 16u;
const DV4: u32 = 16u;
const CHUNK: u32 = 256u;  // keys a split, a multiple of THREADS
const THREADS: u32 = 64u;
const GROUPS: u32 = THREADS / DV4;  // key groups of the value sum (DV4 <= THREADS)

alias MaskT = f32;
alias Q_T = f32;
alias K_T = f32;
alias V_T = f32;
alias O_T = f32;

override MASK_KIND: u32 = 0u;
override SAFE: bool = true;

struct Params {
  rows: u32,
  heads: u32,
  group: u32,
  sq: u32,
  skv: u32,
  d: u32,
  dv: u32,
  splits: u32,
  scale: f32,
  q_offset: u32,
  k_offset: u32,
  v_offset: u32,
  m_offset: u32,
  q_strides: vec4<u32>,  // (b, h, i, d)
  k_strides: vec4<u32>,  // (b, g, j, d)
  v_strides: vec4<u32>,  // (b, g, j, e)
  m_strides: vec4<u32>,  // (b, h, i, j)
  o_strides: vec4<u32>,  // (b, h, i, -); e is contiguous
}

@group(0) @binding(0) var<storage, read> q: array<Q_T>;
@group(0) @binding(1) var<storage, read> k: array<K_T>;
@group(0) @binding(2) var<storage, read> v: array<V_T>;
@group(0) @binding(3) var<storage, read> mask: array<MaskT>;
@group(0) @binding(4) var<storage, read_write> partial: array<vec4<f32>>;
@group(0) @binding(5) var<storage, read_write> out: array<O_T>;
@group(0) @binding(6) var<uniform> p: Params;

var<workgroup> q_row: array<vec4<f32>, D4>;
var<workgroup> scores: array<f32, CHUNK>;
var<workgroup> folded: array<f32, THREADS>;
var<workgroup> sums: array<vec4<f32>, THREADS>;
var<workgroup> row_live: u32;  // split: the row's live keys, read by thread 0 for the whole workgroup

// How many keys query row (b, h, i) sees: the live prefix under a key limit (MASK_KIND 3), else every key.
fn live_of(at: vec3<u32>) -> u32 {
  if (MASK_KIND == 3u) {
    return live_keys(at.x, at.y, at.z);
  }
  return p.skv;
}

// Row r as (b, h, i).
fn row_of(r: u32) -> vec3<u32> {
  let bh = r / p.sq;
  return vec3<u32>(bh / p.heads, bh % p.heads, r % p.sq);
}

// The max (`take_max`) or the sum of every thread's `x`, folded through workgroup memory; every thread gets it.
fn across(x: f32, li: u32, take_max: bool) -> f32 {
  folded[li] = x;
  workgroupBarrier();
  for (var half = THREADS / 2u; half > 0u; half /= 2u) {
    if (li < half) {
      folded[li] = select(folded[li] + folded[li + half], max(folded[li], folded[li + half]), take_max);
    }
    workgroupBarrier();
  }
  let result = folded[0];
  workgroupBarrier();
  return result;
}

@compute @workgroup_size(THREADS)
fn split(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
         @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.rows * p.splits) {
    return;
  }
  let r = block / p.splits;
  let s = block % p.splits;
  let at = row_of(r);
  let b = at.x;
  let h = at.y;
  let i = at.z;
  let g = h / p.group;
  var neg_inf_bits = 0xff800000u;  // a runtime value: WGSL rejects -inf in constant expressions
  let neg_inf = bitcast<f32>(neg_inf_bits);
  if (li == 0u) {
    row_live = live_of(at);
  }
  let live = workgroupUniformLoad(&row_live);
  let j0 = s * CHUNK;
  if (s > 0u && j0 >= live) {
    return;  // merge reads no split past the live keys but the first
  }
  let n = min(live, j0 + CHUNK) - min(live, j0);  // this split's live keys: j0 .. j0 + n - 1

  let q_base = p.q_offset + b * p.q_strides.x + h * p.q_strides.y + i * p.q_strides.z;
  for (var d4 = li; d4 < D4; d4 += THREADS) {
    let a = at4(q_base, p.q_strides.w, d4 * 4u, p.d);
    q_row[d4] = select(vec4<f32>(0.0), vec4<f32>(f32(q[a.x]), f32(q[a.y]), f32(q[a.z]), f32(q[a.w])), in4(d4 * 4u, p.d)) * p.scale;
  }
  workgroupBarrier();

  let k_base = key_base(b, g);
  let m_base = mask_base(b, h, i);
  var m = neg_inf;
  for (var t = li; t < CHUNK; t += THREADS) {
    var x = neg_inf;
    if (t < n) {
      let j = j0 + t;
      let row = k_base + j * p.k_strides.z;
      x = 0.0;
      for (var d4 = 0u; d4 < D4; d4++) {
        let a = at4(row, p.k_strides.w, d4 * 4u, p.d);
        x += dot(q_row[d4], vec4<f32>(f32(k[a.x]), f32(k[a.y]), f32(k[a.z]), f32(k[a.w])));  // q's padding is zero
      }
      if (MASK_KIND == 1u) {
        x += f32(mask[m_base + j * p.m_strides.w]);
      } else if (MASK_KIND == 2u && mask[m_base + j * p.m_strides.w] == MaskT(0)) {
        x = neg_inf;
      }
    }
    scores[t] = x;
    m = max(m, x);
  }
  m = across(m, li, true);
  var l = 0.0;
  for (var t = li; t < CHUNK; t += THREADS) {
    let w = select(exp(scores[t] - m), 0.0, scores[t] == neg_inf);  // also 0 where no key is live (m = -inf)
    scores[t] = w;
    l += w;
  }
  l = across(l, li, false);  // its barriers also publish `scores`

  let c = li % DV4;
  let key_group = li / DV4;
  var acc = vec4<f32>(0.0);
  if (key_group < GROUPS) {
    let v_base = value_base(b, g);
    for (var t = key_group; t < n; t += GROUPS) {
      let a = at4(v_base + (j0 + t) * p.v_strides.z, p.v_strides.w, c * 4u, p.dv);
      acc = fma(vec4<f32>(scores[t]), vec4<f32>(f32(v[a.x]), f32(v[a.y]), f32(v[a.z]), f32(v[a.w])), acc);
    }
  }
  sums[li] = acc;
  workgroupBarrier();
  let slot = (r * p.splits + s) * (1u + DV4);
  if (li < DV4) {
    var total = vec4<f32>(0.0);
    for (var grp = 0u; grp < GROUPS; grp++) {
      total += sums[grp * DV4 + li];
    }
    partial[slot + 1u + li] = total;
  }
  if (li == 0u) {
    partial[slot] = vec4<f32>(m, l, 0.0, 0.0);
  }
}

@compute @workgroup_size(64)
fn merge(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let index = gid.x + gid.y * nwg.x * 64u;
  if (index >= p.rows * DV4) {
    return;
  }
  let r = index / DV4;
  let c = index % DV4;
  var neg_inf_bits = 0xff800000u;
  let neg_inf = bitcast<f32>(neg_inf_bits);
  let at = row_of(r);
  let live_splits = max((live_of(at) + CHUNK - 1u) / CHUNK, 1u);  // split 0 is written even with no live key
  let splits = min(bounded(p.splits, arrayLength(&partial) / (1u + DV4)), live_splits);
  var top = neg_inf;
  for (var s = 0u; s < splits; s++) {
    top = max(top, partial[(r * p.splits + s) * (1u + DV4)].x);
  }
  var l = 0.0;
  var acc = vec4<f32>(0.0);
  if (top != neg_inf) {
    for (var s = 0u; s < splits; s++) {
      let slot = (r * p.splits + s) * (1u + DV4);
      let ml = partial[slot];
      let w = select(exp(ml.x - top), 0.0, ml.x == neg_inf);
      l += w * ml.y;
      acc = fma(vec4<f32>(w), partial[slot + 1u + c], acc);
    }
  }
  let inv = row_inverse(l);
  let o_base = at.x * p.o_strides.x + at.y * p.o_strides.y + at.z * p.o_strides.z + c * 4u;
  for (var e = 0u; e < 4u; e++) {
    if (c * 4u + e < p.dv) {
      out[o_base + e] = O_T(acc[e] * inv);
    }
  }
}
