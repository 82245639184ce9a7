// row.wgsl — combining values across the ROW threads that share a row. Not a kernel: row-wise kernels
// (layer_norm.wgsl, softmax.wgsl) include it (`//! include row.wgsl`) and declare ROW (a power of two) and
// WORKGROUP (a multiple of ROW); a row's threads are the ROW consecutive local indices li - lane ..
// li - lane + ROW - 1.
//
// row_sum / row_max return the combination to every thread of the row; row_sum_max combines a sum and a max
// at the cost of one. Every thread of the workgroup must call them (they hold barriers): threads of rows past
// the end take part with a neutral value.

var<workgroup> row_scratch: array<vec2<f32>, WORKGROUP>;

// Each component summed, or maxed where `is_max` says so.
fn row_fold(a: vec2<f32>, b: vec2<f32>, is_max: vec2<bool>) -> vec2<f32> {
  return select(a + b, max(a, b), is_max);
}

fn row_combine(li: u32, lane: u32, v: vec2<f32>, is_max: vec2<bool>) -> vec2<f32> {
  workgroupBarrier();  // the previous call's readers are done with row_scratch
  row_scratch[li] = v;
  workgroupBarrier();
  for (var half = ROW / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      row_scratch[li] = row_fold(row_scratch[li], row_scratch[li + half], is_max);
    }
    workgroupBarrier();
  }
  return row_scratch[li - lane];
}

fn row_sum(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, vec2(v, 0.0), vec2(false)).x;
}

fn row_max(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, vec2(v, 0.0), vec2(true)).x;
}

// (sum of s, max of m) over the row.
fn row_sum_max(li: u32, lane: u32, s: f32, m: f32) -> vec2<f32> {
  return row_combine(li, lane, vec2(s, m), vec2(false, true));
}
