// sort.wgsl — sorting rows of a tensor along one dim into values and int64 indices (sort, topk), in two
// entry points:
//
//   sort_blocks: each workgroup loads BLOCK elements (BLOCK / SEGMENT segments of SEGMENT elements, each
//     segment a block of one row), sorts every segment in workgroup memory with a bitonic network, and writes
//     the first `keep` of each block: block b of row o ranks r at position b·keep + r of its output row.
//   merge: one thread per element of rows made of sorted runs of `run` elements; an element's place in the
//     merge of its run and the next is its rank in its own run plus the number of the other run's elements
//     that come before it (a binary search), so every pass doubles the runs with no synchronisation at all.
//
//   median, nanmedian: one thread per row of the fully sorted [rows, n] scratch; each writes one element and
//     its index: the lower median (position (n - 1) / 2), but for median the row's first NaN where it has one
//     (torch's), for nanmedian the lower median of its numbers (all NaN: position (n - 1) / 2, a NaN; torch's
//     index there is whatever its partition leaves).
//
// Order: by key (descending with DESCENDING), NaN above every number (last ascending, first descending, as
//   in torch), equal keys (-0 and +0 too, NaN and NaN) by their original index, ascending. That is a strict
//   total order in which every element has its own place, so the result is deterministic and is torch's
//   stable sort in either direction. Padding (index PAD: the end of a short block) comes after everything.
// Layout: the input is a strided view: row o (enumerated over the dims other than the sorted one, their
//   strides in Params as row_params.wgsl's) has n elements at element stride `stride`; its indices (`x_idx`,
//   same addressing) are read unless FIRST, where an element's index is its position. The outputs hold
//   `out_n` elements per row, row o's element r at (o / inner * out_n + r) * inner + o % inner: the final
//   pass writes the op's outputs in the input's shape (`inner` the element count of the dims after the
//   sorted one), the others [rows, out_n] scratch (inner = 1). An element ranked at or past out_n is dropped.
// Geometry: sort_blocks: 256 threads per workgroup, workgroups numbered x-fastest over a grid folded to fit
//   65,535 per dimension, each covering BLOCK / SEGMENT segments. merge: one thread per input element;
//   median, nanmedian: one per row.
// Types: KeyT (f32, i32, or u32 for bool) by alias substitution; indices are u32 (int64 travels as int32).

//! include ieee.wgsl
//! include strided.wgsl

alias KeyT = f32;

const BLOCK: u32 = 2048u;   // keys and indices of a block fill 16 KiB, WebGPU's default workgroup storage
const WORKGROUP: u32 = 256u;
const PAD: u32 = 0xffffffffu;

override SEGMENT: u32 = 2048u;  // elements sorted together: a power of two <= BLOCK
override DESCENDING: bool = false;
override FIRST: bool = true;

struct Params {
  rows: u32,
  n: u32,           // elements per input row
  blocks: u32,      // sort_blocks: blocks per input row (ceil(n / SEGMENT))
  keep: u32,        // sort_blocks: elements written per block
  run: u32,         // merge: the length of the sorted runs
  out_n: u32,       // elements per output row
  inner: u32,
  offset: u32,
  stride: u32,
  kept_ndim: u32,
  kept_shape: array<vec4<u32>, 2>,
  kept_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<KeyT>;
@group(0) @binding(1) var<storage, read> x_idx: array<u32>;
@group(0) @binding(2) var<storage, read_write> out: array<KeyT>;
@group(0) @binding(3) var<storage, read_write> out_idx: array<u32>;
@group(0) @binding(4) var<uniform> p: Params;

var<workgroup> keys: array<KeyT, BLOCK>;
var<workgroup> ids: array<u32, BLOCK>;

// Whether (a, ia) comes before (b, ib) in the order above.
fn before(a: KeyT, ia: u32, b: KeyT, ib: u32) -> bool {
  if (ia == PAD || ib == PAD) {
    return ib == PAD && ia != PAD;
  }
  let a_nan = is_nan(f32(a));
  let b_nan = is_nan(f32(b));
  if (a == b || (a_nan && b_nan)) {
    return ia < ib;
  }
  let a_above = a_nan || (!b_nan && a > b);
  return a_above == DESCENDING;
}

// Where row o starts in `x` and `x_idx`: its element pos is at row_start(o) + pos · stride. (Found once a
// thread: the row's offset takes a division per dim.)
fn row_start(o: u32) -> u32 {
  return p.offset + strided_offset(o, p.kept_ndim, p.kept_shape, p.kept_strides);
}

fn key_at(row: u32, pos: u32) -> KeyT {
  return x[row + pos * p.stride];
}

fn index_at(row: u32, pos: u32) -> u32 {
  if (FIRST) {
    return pos;
  }
  return x_idx[row + pos * p.stride];
}

fn store(o: u32, r: u32, key: KeyT, id: u32) {
  if (r < p.out_n) {
    let at = (o / p.inner * p.out_n + r) * p.inner + o % p.inner;
    out[at] = key;
    out_idx[at] = id;
  }
}

@compute @workgroup_size(WORKGROUP)
fn sort_blocks(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) li: u32) {
  let first_segment = (wid.x + wid.y * nwg.x) * (BLOCK / SEGMENT);
  for (var s = li; s < BLOCK; s += WORKGROUP) {
    let q = first_segment + s / SEGMENT;  // segment q is block q % blocks of row q / blocks
    let o = q / p.blocks;
    let pos = q % p.blocks * SEGMENT + s % SEGMENT;
    if (o < p.rows && pos < p.n) {
      let row = row_start(o);
      keys[s] = key_at(row, pos);
      ids[s] = index_at(row, pos);
    } else {
      keys[s] = KeyT(0);
      ids[s] = PAD;
    }
  }
  // Bitonic network: runs of k elements sorted alternately up and down merge into runs of 2k; the last
  // stage (k = SEGMENT) sorts every segment up. Pair (i, i + j) has bit j of i clear.
  for (var k = 2u; k <= SEGMENT; k *= 2u) {
    for (var j = k / 2u; j > 0u; j /= 2u) {
      workgroupBarrier();
      for (var t = li; t < BLOCK / 2u; t += WORKGROUP) {
        let i = 2u * t - (t & (j - 1u));
        let l = i + j;
        let up = k == SEGMENT || (i & k) == 0u;
        if (before(keys[l], ids[l], keys[i], ids[i]) == up) {
          let key = keys[i];
          let id = ids[i];
          keys[i] = keys[l];
          ids[i] = ids[l];
          keys[l] = key;
          ids[l] = id;
        }
      }
    }
  }
  workgroupBarrier();
  for (var s = li; s < BLOCK; s += WORKGROUP) {
    let q = first_segment + s / SEGMENT;
    let r = s % SEGMENT;
    if (q / p.blocks < p.rows && r < p.keep) {
      store(q / p.blocks, q % p.blocks * p.keep + r, keys[s], ids[s]);
    }
  }
}

@compute @workgroup_size(WORKGROUP)
fn merge(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  let e = gid.x + gid.y * nwg.x * WORKGROUP;
  if (e >= p.rows * p.n) {
    return;
  }
  let o = e / p.n;
  let pos = e % p.n;
  let start = pos / (2u * p.run) * (2u * p.run);  // the pair of runs [start, start + run), [start + run, ...)
  let in_first = pos < start + p.run;
  let other = select(start, start + p.run, in_first);
  let other_len = min(other + p.run, max(p.n, other)) - other;
  let row = row_start(o);
  let key = key_at(row, pos);
  let id = index_at(row, pos);
  var lo = 0u;
  var hi = other_len;
  while (lo < hi) {
    let mid = lo + (hi - lo) / 2u;  // never wraps: at most 32 halvings, whatever p.run says
    if (before(key_at(row, other + mid), index_at(row, other + mid), key, id)) {
      lo = mid + 1u;
    } else {
      hi = mid;
    }
  }
  let own = select(start + p.run, start, in_first);
  store(o, start + (pos - own) + lo, key, id);
}

// The position that median (or with ignore_nan, nanmedian) picks in the sorted row starting at `row`. A
// sorted row's NaNs come last, so its count of numbers is found by a binary search.
fn median_position(row: u32, ignore_nan: bool) -> u32 {
  var lo = 0u;
  var hi = p.n;
  while (lo < hi) {
    let mid = lo + (hi - lo) / 2u;  // at most 32 halvings, whatever p.n says
    if (is_nan(f32(key_at(row, mid)))) {
      hi = mid;
    } else {
      lo = mid + 1u;
    }
  }
  if (ignore_nan && lo > 0u) {
    return (lo - 1u) / 2u;
  }
  return select(lo, (p.n - 1u) / 2u, ignore_nan || lo == p.n);
}

fn pick_median(gid: vec3u, nwg: vec3u, ignore_nan: bool) {
  let o = gid.x + gid.y * nwg.x * WORKGROUP;
  if (o >= p.rows) {
    return;
  }
  let row = row_start(o);
  let at = median_position(row, ignore_nan);
  store(o, 0u, key_at(row, at), x_idx[row + at * p.stride]);
}

@compute @workgroup_size(WORKGROUP)
fn median(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  pick_median(gid, nwg, false);
}

@compute @workgroup_size(WORKGROUP)
fn nanmedian(@builtin(global_invocation_id) gid: vec3u, @builtin(num_workgroups) nwg: vec3u) {
  pick_median(gid, nwg, true);
}
