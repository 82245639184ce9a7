// attention.wgsl — fused attention, flash style: out = softmax(scale * q @ kᵀ + mask) @ v in one dispatch,
// the scores never leaving the workgroup. fp32 throughout.
//
// Layouts (element strides and offsets in Params; any stride may be 0, which broadcasts):
//   q[b, h, i, d]     Sq query rows of head dim D
//   k[b, g, j, d]     Skv keys; g = h / group: GQA heads share a K/V head (group = 1 for plain attention)
//   v[b, g, j, e]     Dv value columns
//   mask[b, h, i, j]  MASK_KIND 1: added to the scores (MaskT = f32); 2: bool (MaskT = u32), false drops j
//   out[b, h, i, e] at b*o_strides.x + h*o_strides.y + i*o_strides.z + e: the lowering lays it out as
//   [B, Sq, H, Dv], so the transpose to [B, Sq, H·Dv] that every model applies next is free.
//   CAUSAL drops j > i (torch's is_causal: the top-left triangle).
// Tiling: a workgroup owns BR consecutive query rows of one (b, h), one thread per row, holding the row's q
//   (DT registers) and output accumulator (DVT registers). K and V pass through workgroup memory in tiles of
//   BC keys, loaded by all threads together; each thread scores its row against the tile, then folds the tile
//   into a running max m, denominator l and accumulator by the online softmax (each tile rescales them once
//   by exp(m_old - m_new)). DT and DVT are D and Dv rounded up to a power of two, the padding zero in both q
//   and the tiles, so the inner loops have constant bounds. Rows past Sq compute on clamped data and store
//   nothing; with CAUSAL a workgroup stops at the last key its last row can see.
// A row that no key may attend (a fully masked row) gives 0 with SAFE (scaled_dot_product_attention's
// rule), else NaN (softmax's, as the eager form computes it).
// Geometry: B * H * ceil(Sq / BR) workgroups, query tiles fastest, over a grid folded to fit 65,535 per
//   dimension; those past the end exit at once (uniformly, before any barrier).
// Specialised by const substitution (DT, DVT, BC: register and workgroup array sizes) and alias (MaskT).

const DT: u32 = 64u;
const DVT: u32 = 64u;
const BC: u32 = 16u;

alias MaskT = f32;

override BR: u32 = 64u;
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

@group(0) @binding(0) var<storage, read> q: array<f32>;
@group(0) @binding(1) var<storage, read> k: array<f32>;
@group(0) @binding(2) var<storage, read> v: array<f32>;
@group(0) @binding(3) var<storage, read> mask: array<MaskT>;
@group(0) @binding(4) var<storage, read_write> out: array<f32>;
@group(0) @binding(5) var<uniform> p: Params;

var<workgroup> k_tile: array<f32, BC * DT>;
var<workgroup> v_tile: array<f32, BC * DVT>;

@compute @workgroup_size(BR)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let block = wid.x + wid.y * nwg.x;
  if (block >= p.batch * p.heads * p.tiles_q) {
    return;
  }
  let bh = block / p.tiles_q;
  let b = bh / p.heads;
  let h = bh % p.heads;
  let g = h / p.group;
  let i0 = (block % p.tiles_q) * BR;
  let row = i0 + li;
  let i = min(row, p.sq - 1u);
  var neg_inf_bits = 0xff800000u;  // a runtime value: WGSL rejects -inf in constant expressions
  let neg_inf = bitcast<f32>(neg_inf_bits);

  var qr: array<f32, DT>;
  let q_base = p.q_offset + b * p.q_strides.x + h * p.q_strides.y + i * p.q_strides.z;
  for (var d = 0u; d < DT; d++) {
    qr[d] = select(0.0, q[q_base + min(d, p.d - 1u) * p.q_strides.w], d < p.d) * p.scale;
  }
  var acc: array<f32, DVT>;
  var m = neg_inf;
  var l = 0.0;
  let k_base = p.k_offset + b * p.k_strides.x + g * p.k_strides.y;
  let v_base = p.v_offset + b * p.v_strides.x + g * p.v_strides.y;
  let m_base = p.m_offset + b * p.m_strides.x + h * p.m_strides.y + i * p.m_strides.z;

  var kv_end = p.skv;
  if (CAUSAL) {
    kv_end = min(p.skv, i0 + BR);  // the last row of this tile sees keys 0 ..= i0 + BR - 1
  }
  for (var j0 = 0u; j0 < kv_end; j0 += BC) {
    for (var e = li; e < BC * DT; e += BR) {
      let j = j0 + e / DT;
      let d = e % DT;
      k_tile[e] = select(0.0, k[k_base + min(j, p.skv - 1u) * p.k_strides.z + min(d, p.d - 1u) * p.k_strides.w],
                         j < p.skv && d < p.d);
    }
    for (var e = li; e < BC * DVT; e += BR) {
      let j = j0 + e / DVT;
      let d = e % DVT;
      v_tile[e] = select(0.0, v[v_base + min(j, p.skv - 1u) * p.v_strides.z + min(d, p.dv - 1u) * p.v_strides.w],
                         j < p.skv && d < p.dv);
    }
    workgroupBarrier();

    var s: array<f32, BC>;
    var tile_max = neg_inf;
    for (var jj = 0u; jj < BC; jj++) {
      let j = j0 + jj;
      var x = 0.0;
      for (var d = 0u; d < DT; d++) {
        x = fma(qr[d], k_tile[jj * DT + d], x);
      }
      let jm = min(j, p.skv - 1u);
      if (MASK_KIND == 1u) {
        x += f32(mask[m_base + jm * p.m_strides.w]);
      } else if (MASK_KIND == 2u && mask[m_base + jm * p.m_strides.w] == MaskT(0)) {
        x = neg_inf;
      }
      if (j >= p.skv || (CAUSAL && j > i)) {
        x = neg_inf;
      }
      s[jj] = x;
      tile_max = max(tile_max, x);
    }
    let m_new = max(m, tile_max);
    if (m_new != neg_inf) {  // else every key so far is masked: nothing to fold yet
      let corr = exp(m - m_new);
      l *= corr;
      for (var e = 0u; e < DVT; e++) {
        acc[e] *= corr;
      }
      for (var jj = 0u; jj < BC; jj++) {
        let w = exp(s[jj] - m_new);
        l += w;
        for (var e = 0u; e < DVT; e++) {
          acc[e] = fma(w, v_tile[jj * DVT + e], acc[e]);
        }
      }
      m = m_new;
    }
    workgroupBarrier();
  }

  if (row < p.sq) {
    let o_base = b * p.o_strides.x + h * p.o_strides.y + row * p.o_strides.z;
    var inv = 1.0 / l;
    if (l == 0.0) {
      var nan_bits = 0x7fc00000u;
      inv = select(bitcast<f32>(nan_bits), 0.0, SAFE);
    }
    for (var e = 0u; e < DVT; e++) {
      if (e < p.dv) {
        out[o_base + e] = acc[e] * inv;
      }
    }
  }
}
