// row.subgroups.wgsl — row.wgsl's row_sum / row_max / row_sum_max written with subgroup operations: the same
// contract (ROW consecutive local indices share a row; every thread of the workgroup calls; the result
// reaches every thread of the row), for devices with the `subgroups` feature.
//
// Assumes what Vulkan, Metal and D3D12 drivers do for a one-dimensional workgroup: a subgroup is SG
// consecutive local indices starting at a multiple of SG, SG a power of two, at least 4 (WebGPU's least
// subgroup size). A row's threads first combine in parts of PART = min(ROW, SG, 32) lanes by XOR shuffles
// (distances below PART stay inside an aligned part); a row of more than one part then combines its ROW /
// PART results through workgroup memory. Two barriers (none for rows of up to 4 threads), where row.wgsl
// takes log2(ROW) + 2. The distances loop from a constant and skip those >= SG by value, not by branch: WGSL
// wants a shuffle's distance uniform and barriers in uniform control flow, and neither holds for a value
// derived from the subgroup's size inside a helper (which has no subgroup_size builtin).

var<workgroup> row_scratch: array<vec2<f32>, WORKGROUP>;

fn row_fold(a: vec2<f32>, b: vec2<f32>, is_max: vec2<bool>) -> vec2<f32> {
  return select(a + b, max(a, b), is_max);
}

override ROW_PART: u32 = min(ROW, 32u);  // PART's bound but for SG

fn row_combine(li: u32, lane: u32, v: vec2<f32>, is_max: vec2<bool>) -> vec2<f32> {
  let ballot = subgroupBallot(true);  // every lane of the subgroup is active here
  let size = countOneBits(ballot.x) + countOneBits(ballot.y) + countOneBits(ballot.z) + countOneBits(ballot.w);
  let part = min(size, ROW_PART);  // PART
  var x = v;
  for (var distance = ROW_PART / 2u; distance > 0u; distance /= 2u) {
    let other = subgroupShuffleXor(x, distance);  // indeterminate when distance >= SG: unused then
    x = select(x, row_fold(x, other, is_max), distance < part);
  }
  if (ROW <= 4u) {
    return x;
  }
  workgroupBarrier();  // the previous call's readers are done with row_scratch
  if (li % part == 0u) {
    row_scratch[li / part] = x;
  }
  workgroupBarrier();
  let first = (li - lane) / part;
  var r = row_scratch[first];
  for (var s = 1u; s < ROW / part; s++) {
    r = row_fold(r, row_scratch[first + s], is_max);
  }
  return r;
}

fn row_sum(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, vec2(v, 0.0), vec2(false)).x;
}

fn row_max(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, vec2(v, 0.0), vec2(true)).x;
}

fn row_sum_max(li: u32, lane: u32, s: f32, m: f32) -> vec2<f32> {
  return row_combine(li, lane, vec2(s, m), vec2(false, true));
}
