// attention.wgsl — fused attention, flash style: out = softmax(scale * q @ kᵀ + mask) @ v in one dispatch,
// the scores never leaving the workgroup. fp32 throughout.
//
// Layouts (element strides and offsets in Params; any stride may be 0, which broadcasts):
//   q[b, h, i, d]     Sq query rows of head dim D
//   k[b, g, j, d]     Skv keys; g = h / group: GQA heads share a K/V head (group = 1 for plain attention)
//   v[b, g, j, e]     Dv value columns
//   mask[b, h, i, j]  MASK_KIND 1: added to the scores (MaskT = f32); 2: bool (MaskT = u32), false drops j;
//                     3: mask[b, h, i] (MaskT = i32, j's stride 0) is row i's last visible key, so j is dropped
//                     past it: the live prefix of a static KV cache (cache_attention.py), where a workgroup
//                     also stops after the furthest key its rows see (never past Skv, whatever the value)
//   out[b, h, i, e] at b*o_strides.x + h*o_strides.y + i*o_strides.z + e: the lowering lays it out as
//   [B, Sq, H, Dv], so the transpose to [B, Sq, H·Dv] that every model applies next is free.
//   CAUSAL drops j > i (torch's is_causal: the top-left triangle).
// Tiling: a workgroup owns BR consecutive query rows of one (b, h), LANES threads per row: thread li is
//   lane li / BR of row li % BR (rows fastest, so the threads of a warp read the same key of a tile, a
//   broadcast). K and V pass through workgroup memory in tiles of BC keys, loaded by all threads together;
//   lane t scores its row against keys t, t + LANES, … of each tile and folds them into its own running max
//   m, denominator l and accumulator by the online softmax, key by key (no score array: the loops stay
//   small, and lavapipe compiled a 32-key score array's unrolled loops in 82 s). Each lane holds the row's q
//   (D4 vec4s) and its accumulator (DV4 vec4s). After the last tile the row's lanes merge: each rescales
//   its (l, acc) to the row's max, the lanes add their acc into workgroup memory in turn (LANES barriers: a
//   pairwise tree needs half the lanes' accumulators there at once, too much for long heads), and they store
//   the row's columns between them. D4 and DV4 are D and Dv in vec4s, rounded up, the padding zero in q and
//   the tiles, so the inner loops have constant bounds. Rows past Sq compute on clamped data and store
//   nothing; with CAUSAL a workgroup stops at the last key its last row can see.
// A row that no key may attend (a fully masked row) gives 0 with SAFE (scaled_dot_product_attention's
// rule), else NaN (softmax's, as the eager form computes it).
// Geometry: B * H * ceil(Sq / BR) workgroups, query tiles fastest, over a grid folded to fit 65,535 per
//   dimension; those past the end exit at once (uniformly, before any barrier).
// Entry `rows`, for adapters whose invocations run on CPU threads (SwiftShader, lavapipe), which pay for each
//   barrier a switch between all of a workgroup's invocations and keep private arrays in memory: no
//   workgroup memory and no barrier. A workgroup of BR invocations owns BR consecutive query rows of one
//   (b, h), one row each, and every invocation reads the keys and values itself (its neighbours read the
//   same ones: a CPU's cache serves them). Keys go KB at a time, so q and the accumulator are read once per
//   KB keys. Its loops over the head dims end at the heads' own vec4 counts (uniforms), not D4 and DV4:
//   lavapipe's compiler unrolls constant-bound loops, and this entry's unrolled took it 80 s to compile.
//   Same geometry as `main` with LANES = 1.
// Specialised by const substitution (array sizes and the thread layout) and alias (MaskT).

//! include attention_rows.wgsl
//! include bounded.wgsl

const D4: u32 = 16u;
const DV4: u32 = 16u;
const BC: u32 = 16u;  // keys per tile, a multiple of LANES
const BR: u32 = 16u;
const LANES: u32 = 4u;
const THREADS: u32 = BR * LANES;
const KEYS: u32 = BC / LANES;  // keys per lane per tile
const V_AT: u32 = BC * D4;  // the V tile's first vec4 in `tiles`
const KB: u32 = 4u;  // `rows`: keys scored together
// K and V tiles ([BC][D4], then [BC][DV4]); after the last tile, the row sums [BR][DV4] (none for one lane).
const SHARED: u32 = max(BC * (D4 + DV4), BR * DV4 * min(LANES - 1u, 1u));

alias MaskT = f32;
// Q_T, K_T, V_T, O_T: how q, k, v and out are stored: f32, or f16 activations (precision="float16"); every
// score, sum and accumulator is f32.
alias Q_T = f32;
alias K_T = f32;
alias V_T = f32;
alias O_T = f32;

override MASK_KIND: u32 = 0u;
override CAUSAL: bool = false;
override SAFE: bool = true;

struct Params {
  batch: u32,
  heads: u32,
  group: u32,
  sq: u32,
  skv: u32,
  d: u32,
  dv: u32,
  tiles_q: u32,
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
@group(0) @binding(4) var<storage, read_write> out: array<O_T>;
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> tiles: array<vec4<f32>, SHARED>;
var<workgroup> lane_m: array<f32, THREADS>;
var<workgroup> lane_l: array<f32, THREADS>;
var<workgroup> live_end: u32;

// The head a workgroup's block of query rows belongs to: batch b, query head h and its K/V head g (h / group),
// and the block's first row i0.
struct Head {
  b: u32,
  h: u32,
  g: u32,
  i0: u32,
}

fn head_of(block: u32, rows: u32) -> Head {
  let bh = block / p.tiles_q;
  let h = bh % p.heads;
  return Head(bh / p.heads, h, h / p.group, (block % p.tiles_q) * rows);
}

// Query row i of head (b, h), times the scale, as f32 vec4s: the first d4_end of them read (zero past p.d),
// the rest left zero.
fn scaled_query(b: u32, h: u32, i: u32, d4_end: u32) -> array<vec4<f32>, D4> {
  var qr: array<vec4<f32>, D4>;
  let q_base = p.q_offset + b * p.q_strides.x + h * p.q_strides.y + i * p.q_strides.z;
  for (var d4 = 0u; d4 < d4_end; d4++) {
    let at = at4(q_base, p.q_strides.w, d4 * 4u, p.d);
    let qv = vec4<f32>(f32(q[at.x]), f32(q[at.y]), f32(q[at.z]), f32(q[at.w]));
    qr[d4] = select(vec4<f32>(0.0), qv, in4(d4 * 4u, p.d)) * p.scale;
  }
  return qr;
}

@compute @workgroup_size(THREADS)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.batch * p.heads * p.tiles_q) {
    return;
  }
  let head = head_of(block, BR);
  let b = head.b;
  let h = head.h;
  let g = head.g;
  let i0 = head.i0;
  let r = li % BR;
  let lane = li / BR;
  let row = i0 + r;
  let i = min(row, p.sq - 1u);
  var neg_inf_bits = 0xff800000u;  // a runtime value: WGSL rejects -inf in constant expressions
  let neg_inf = bitcast<f32>(neg_inf_bits);

  var qr = scaled_query(b, h, i, D4);
  var acc: array<vec4<f32>, DV4>;
  var m = neg_inf;
  var l = 0.0;
  let k_base = key_base(b, g);
  let v_base = value_base(b, g);
  let m_base = mask_base(b, h, i);

  var kv_end = bounded(p.skv, max(arrayLength(&k), arrayLength(&v)));
  if (CAUSAL) {
    kv_end = min(kv_end, i0 + BR);  // the last row of this tile sees keys 0 ..= i0 + BR - 1
  }
  var row_live = p.skv;
  if (MASK_KIND == 3u) {
    row_live = live_keys(b, h, i);
    if (li == 0u) {
      var end = 0u;
      for (var r2 = 0u; r2 < BR; r2++) {
        end = max(end, live_keys(b, h, min(i0 + r2, p.sq - 1u)));
      }
      live_end = end;
    }
    kv_end = min(kv_end, workgroupUniformLoad(&live_end));
  }
  for (var j0 = 0u; j0 < kv_end; j0 += BC) {
    for (var e = li; e < BC * D4; e += THREADS) {
      let j = j0 + e / D4;
      let d = (e % D4) * 4u;
      let at = at4(k_base + min(j, p.skv - 1u) * p.k_strides.z, p.k_strides.w, d, p.d);
      let kv = vec4<f32>(f32(k[at.x]), f32(k[at.y]), f32(k[at.z]), f32(k[at.w]));
      tiles[e] = select(vec4<f32>(0.0), kv,
                        in4(d, p.d) & vec4<bool>(j < p.skv));
    }
    for (var e = li; e < BC * DV4; e += THREADS) {
      let j = j0 + e / DV4;
      let d = (e % DV4) * 4u;
      let at = at4(v_base + min(j, p.skv - 1u) * p.v_strides.z, p.v_strides.w, d, p.dv);
      let vv = vec4<f32>(f32(v[at.x]), f32(v[at.y]), f32(v[at.z]), f32(v[at.w]));
      tiles[V_AT + e] = select(vec4<f32>(0.0), vv,
                               in4(d, p.dv) & vec4<bool>(j < p.skv));
    }
    workgroupBarrier();

    for (var kk = 0u; kk < KEYS; kk++) {
      let jj = kk * LANES + lane;
      let j = j0 + jj;
      var x = 0.0;
      for (var d4 = 0u; d4 < D4; d4++) {
        x += dot(qr[d4], tiles[jj * D4 + d4]);
      }
      let jm = min(j, p.skv - 1u);
      if (MASK_KIND == 1u) {
        x += f32(mask[m_base + jm * p.m_strides.w]);
      } else if (MASK_KIND == 2u && mask[m_base + jm * p.m_strides.w] == MaskT(0)) {
        x = neg_inf;
      }
      if (j >= row_live || (CAUSAL && j > i)) {
        x = neg_inf;
      }
      if (x > m) {  // a new max: rescale what is folded so far (from m = -inf, l and acc are still 0)
        let corr = exp(m - x);
        l *= corr;
        for (var e4 = 0u; e4 < DV4; e4++) {
          acc[e4] *= corr;
        }
        m = x;
      }
      if (x != neg_inf) {  // a masked key adds nothing
        let w = exp(x - m);
        l += w;
        for (var e4 = 0u; e4 < DV4; e4++) {
          acc[e4] = fma(vec4<f32>(w), tiles[V_AT + jj * DV4 + e4], acc[e4]);
        }
      }
    }
    workgroupBarrier();
  }

  // Merge the row's lanes: rescale each to the row's max (a lane that saw no key holds l = 0, acc = 0).
  lane_m[li] = m;
  workgroupBarrier();
  var row_max = neg_inf;
  for (var t = 0u; t < LANES; t++) {
    row_max = max(row_max, lane_m[t * BR + r]);
  }
  let corr = select(exp(m - row_max), 0.0, m == neg_inf);
  lane_l[li] = l * corr;
  if (LANES > 1u) {
    for (var t = 0u; t < LANES; t++) {  // the tiles are free: the last tile's barrier has passed
      if (lane == t) {
        for (var e4 = 0u; e4 < DV4; e4++) {
          let mine = acc[e4] * corr;
          tiles[r * DV4 + e4] = select(tiles[r * DV4 + e4] + mine, mine, t == 0u);
        }
      }
      workgroupBarrier();
    }
  }

  if (row < p.sq) {
    var sum = 0.0;
    for (var t = 0u; t < LANES; t++) {
      sum += lane_l[t * BR + r];
    }
    let inv = row_inverse(sum);
    let o_base = b * p.o_strides.x + h * p.o_strides.y + row * p.o_strides.z;
    for (var e4 = 0u; e4 < DV4; e4++) {
      if (e4 % LANES == lane) {  // the row's lanes store its columns between them
        var o: vec4<f32>;
        if (LANES == 1u) {
          o = acc[e4] * corr;
        } else {
          o = tiles[r * DV4 + e4];
        }
        for (var c = 0u; c < 4u; c++) {
          if (e4 * 4u + c < p.dv) {
            out[o_base + e4 * 4u + c] = O_T(o[c] * inv);
          }
        }
      }
    }
  }
}

// Element strides of K and V rows as the `rows` entry reads them: K[j, d .. d+3] and V[j, e .. e+3] for key j
// (clamped into the keys: a clamped key's weight is 0), zero outside the head dims.
fn key4(base: u32, j: u32, d: u32) -> vec4<f32> {
  let at = at4(base + min(j, p.skv - 1u) * p.k_strides.z, p.k_strides.w, d, p.d);
  return select(vec4<f32>(0.0), vec4<f32>(f32(k[at.x]), f32(k[at.y]), f32(k[at.z]), f32(k[at.w])), in4(d, p.d));
}

fn value4(base: u32, j: u32, e: u32) -> vec4<f32> {
  let at = at4(base + min(j, p.skv - 1u) * p.v_strides.z, p.v_strides.w, e, p.dv);
  return select(vec4<f32>(0.0), vec4<f32>(f32(v[at.x]), f32(v[at.y]), f32(v[at.z]), f32(v[at.w])), in4(e, p.dv));
}

@compute @workgroup_size(BR)
fn rows(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.batch * p.heads * p.tiles_q) {
    return;
  }
  let head = head_of(block, BR);
  let b = head.b;
  let h = head.h;
  let g = head.g;
  let row = head.i0 + li;
  if (row >= p.sq) {
    return;  // no barrier follows
  }
  var neg_inf_bits = 0xff800000u;  // a runtime value: WGSL rejects -inf in constant expressions
  let neg_inf = bitcast<f32>(neg_inf_bits);

  let d4_end = min((p.d + 3u) / 4u, D4);
  let dv4_end = min((p.dv + 3u) / 4u, DV4);
  var qr = scaled_query(b, h, row, d4_end);
  var acc: array<vec4<f32>, DV4>;
  var m = neg_inf;
  var l = 0.0;
  let k_base = key_base(b, g);
  let v_base = value_base(b, g);
  let m_base = mask_base(b, h, row);
  var kv_end = p.skv;
  if (CAUSAL) {
    kv_end = min(p.skv, row + 1u);
  }
  if (MASK_KIND == 3u) {
    kv_end = min(kv_end, live_keys(b, h, row));
  }
  for (var j0 = 0u; j0 < kv_end; j0 += KB) {
    var x = vec4<f32>(0.0);  // the scores of keys j0 .. j0 + 3
    for (var d4 = 0u; d4 < d4_end; d4++) {
      let qv = qr[d4];
      x += vec4<f32>(dot(qv, key4(k_base, j0, d4 * 4u)), dot(qv, key4(k_base, j0 + 1u, d4 * 4u)),
                     dot(qv, key4(k_base, j0 + 2u, d4 * 4u)), dot(qv, key4(k_base, j0 + 3u, d4 * 4u)));
    }
    let j = vec4<u32>(j0) + vec4<u32>(0u, 1u, 2u, 3u);
    let jm = min(j, vec4<u32>(p.skv - 1u));
    if (MASK_KIND == 1u) {
      x += vec4<f32>(f32(mask[m_base + jm.x * p.m_strides.w]), f32(mask[m_base + jm.y * p.m_strides.w]),
                     f32(mask[m_base + jm.z * p.m_strides.w]), f32(mask[m_base + jm.w * p.m_strides.w]));
    } else if (MASK_KIND == 2u) {
      let keep = vec4<bool>(mask[m_base + jm.x * p.m_strides.w] != MaskT(0),
                            mask[m_base + jm.y * p.m_strides.w] != MaskT(0),
                            mask[m_base + jm.z * p.m_strides.w] != MaskT(0),
                            mask[m_base + jm.w * p.m_strides.w] != MaskT(0));
      x = select(vec4<f32>(neg_inf), x, keep);
    }
    x = select(x, vec4<f32>(neg_inf), j >= vec4<u32>(kv_end));  // past Skv, the causal diagonal or the live keys
    let top = max(max(x.x, x.y), max(x.z, x.w));
    if (top > m) {  // a new max: rescale what is folded so far (from m = -inf, l and acc are still 0)
      let corr = select(exp(m - top), 0.0, m == neg_inf);
      l *= corr;
      for (var e4 = 0u; e4 < dv4_end; e4++) {
        acc[e4] *= corr;
      }
      m = top;
    }
    if (top != neg_inf) {  // masked keys add nothing
      let w = select(exp(x - vec4<f32>(m)), vec4<f32>(0.0), x == vec4<f32>(neg_inf));
      l += w.x + w.y + w.z + w.w;
      for (var e4 = 0u; e4 < dv4_end; e4++) {
        acc[e4] += w.x * value4(v_base, j0, e4 * 4u) + w.y * value4(v_base, j0 + 1u, e4 * 4u) +
                   w.z * value4(v_base, j0 + 2u, e4 * 4u) + w.w * value4(v_base, j0 + 3u, e4 * 4u);
      }
    }
  }

  let inv = row_inverse(l);
  let o_base = b * p.o_strides.x + h * p.o_strides.y + row * p.o_strides.z;
  for (var e4 = 0u; e4 < dv4_end; e4++) {
    for (var c = 0u; c < 4u; c++) {
      if (e4 * 4u + c < p.dv) {
        out[o_base + e4 * 4u + c] = O_T(acc[e4][c] * inv);
      }
    }
  }
}
