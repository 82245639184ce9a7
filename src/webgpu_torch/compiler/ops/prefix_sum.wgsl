// prefix_sum.wgsl — out[i] = counts[0] + ... + counts[i - 1]: the exclusive prefix sum of n u32 counts, in
// three passes over blocks of BLOCK = 1024 counts (256 threads, 4 counts each):
//   scan_blocks  each workgroup scans its block in workgroup memory (each thread its 4 counts, then a
//                Hillis-Steele scan of the 256 thread totals), writes the block's exclusive sums to out and
//                its total to totals[block];
//   scan_totals  one workgroup scans `totals` in place (exclusive), 256 at a time with a running carry;
//   add_totals   out[i] += totals[i / BLOCK].
// Layout: counts and out contiguous [n]; totals [blocks] with blocks = ceil(n / BLOCK).
// Geometry: scan_blocks one workgroup per block, add_totals one thread per count, both over a grid folded to
//   fit 65,535 workgroups per dimension (workgroups past the end exit at once, before any barrier);
//   scan_totals a single workgroup.

const WORKGROUP: u32 = 256u;
//! include bounded.wgsl

const BLOCK: u32 = 1024u;

struct Params {
  n: u32,
  blocks: u32,
}

@group(0) @binding(0) var<storage, read> counts: array<u32>;
@group(0) @binding(1) var<storage, read_write> out: array<u32>;
@group(0) @binding(2) var<storage, read_write> totals: array<u32>;
@group(0) @binding(3) var<uniform> p: Params;

var<workgroup> sums: array<u32, WORKGROUP>;

// The inclusive scan of every thread's `mine` across the workgroup (every thread must call it).
fn workgroup_scan(li: u32, mine: u32) -> u32 {
  sums[li] = mine;
  workgroupBarrier();
  for (var d = 1u; d < WORKGROUP; d <<= 1u) {
    var left = 0u;
    if (li >= d) {
      left = sums[li - d];
    }
    workgroupBarrier();
    sums[li] += left;
    workgroupBarrier();
  }
  return sums[li];
}

fn workgroup_index(wid: vec3u, nwg: vec3u) -> u32 {
  return wid.x + wid.y * nwg.x;
}

@compute @workgroup_size(WORKGROUP)
fn scan_blocks(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
               @builtin(local_invocation_index) li: u32) {
  let block = workgroup_index(wid, nwg);
  if (block >= p.blocks) {
    return;
  }
  let base = block * BLOCK + li * 4u;
  var own = vec4<u32>(0u);
  for (var j = 0u; j < 4u; j++) {
    if (base + j < p.n) {
      own[j] = counts[base + j];
    }
  }
  let total = own.x + own.y + own.z + own.w;
  let before = workgroup_scan(li, total) - total;
  let exclusive = vec4(before, before + own.x, before + own.x + own.y, before + own.x + own.y + own.z);
  for (var j = 0u; j < 4u; j++) {
    if (base + j < p.n) {
      out[base + j] = exclusive[j];
    }
  }
  if (li == WORKGROUP - 1u) {
    totals[block] = before + total;
  }
}

@compute @workgroup_size(WORKGROUP)
fn scan_totals(@builtin(local_invocation_index) li: u32) {
  var carry = 0u;
  let blocks = bounded(p.blocks, arrayLength(&totals));
  for (var start = 0u; start < blocks; start += WORKGROUP) {
    let at = start + li;
    var mine = 0u;
    if (at < p.blocks) {
      mine = totals[at];
    }
    let inclusive = workgroup_scan(li, mine);
    if (at < p.blocks) {
      totals[at] = carry + inclusive - mine;
    }
    carry += sums[WORKGROUP - 1u];
    workgroupBarrier();
  }
}

@compute @workgroup_size(WORKGROUP)
fn add_totals(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
              @builtin(local_invocation_index) li: u32) {
  let i = workgroup_index(wid, nwg) * WORKGROUP + li;
  if (i >= p.n) {
    return;
  }
  out[i] += totals[i / BLOCK];
}
