// row.wgsl — combining one value per thread across the ROW threads that share a row. Not a kernel: row-wise
// kernels (layer_norm.wgsl, softmax.wgsl) include it (`//! include row.wgsl`) and declare ROW (a power of two)
// and WORKGROUP (a multiple of ROW); a row's threads are the ROW consecutive local indices li - lane ..
// li - lane + ROW - 1.
//
// row_sum / row_max return the combination to every thread of the row. Every thread of the workgroup must
// call them (they hold barriers): threads of rows past the end take part with a neutral value.

var<workgroup> row_scratch: array<f32, WORKGROUP>;

fn row_combine(li: u32, lane: u32, v: f32, is_max: bool) -> f32 {
  workgroupBarrier();  // the previous call's readers are done with row_scratch
  row_scratch[li] = v;
  workgroupBarrier();
  for (var half = ROW / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      let other = row_scratch[li + half];
      row_scratch[li] = select(row_scratch[li] + other, max(row_scratch[li], other), is_max);
    }
    workgroupBarrier();
  }
  return row_scratch[li - lane];
}

fn row_sum(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, v, false);
}

fn row_max(li: u32, lane: u32, v: f32) -> f32 {
  return row_combine(li, lane, v, true);
}
