// reduce.wgsl — out[o] = reduce_r x[o, r]: sum, mean, max, min, argmax, argmin over some dims of a tensor
// (any and all are max and min over bool), and the 2-norm.
//
// Layout: the input is a strided view whose dims split into kept dims (enumerating o; the output is
//   contiguous over them) and reduced dims (enumerating r, R = reduce_size elements per output), up to 8 of
//   each, each with its element stride in Params. argmax/argmin return r as a flat index over the reduced dims.
// Geometry: ROW threads (a power of two, <= 256) reduce one output element; a workgroup of 256 threads
//   handles 256 / ROW outputs; the grid is folded to fit 65,535 workgroups per dimension. Each thread folds a
//   strided share of its row, then the row's threads combine in workgroup memory by halving. Ties in
//   argmax/argmin keep the smallest index, as torch does.
// Types: InT (input), AccT (accumulation: f32 for float results, i32 for integer ones, so an integer sum or a
//   count of a mask is exact; u32 for any/all) and OutT (output; i32 for the arg ops) are set by alias
//   substitution.

const OP_SUM: u32 = 0u;
const OP_MEAN: u32 = 1u;
const OP_MAX: u32 = 2u;
const OP_MIN: u32 = 3u;
const OP_ARGMAX: u32 = 4u;
const OP_ARGMIN: u32 = 5u;
const OP_NORM2: u32 = 6u;     // sqrt(sum x²): linalg_vector_norm with ord 2

//! include strided.wgsl

alias InT = f32;
alias AccT = f32;
alias OutT = f32;

override OP: u32 = OP_SUM;
override ROW: u32 = 256u;

const WORKGROUP: u32 = 256u;

struct Params {
  num_out: u32,
  reduce_size: u32,
  kept_ndim: u32,
  red_ndim: u32,
  offset: u32,
  kept_shape: array<vec4<u32>, 2>,
  kept_strides: array<vec4<u32>, 2>,
  red_shape: array<vec4<u32>, 2>,
  red_strides: array<vec4<u32>, 2>,
}

@group(0) @binding(0) var<storage, read> x: array<InT>;
@group(0) @binding(1) var<storage, read_write> out: array<OutT>;
@group(0) @binding(2) var<uniform> p: Params;

var<workgroup> vals: array<AccT, WORKGROUP>;
var<workgroup> idxs: array<u32, WORKGROUP>;

fn element(base: u32, r: u32) -> AccT {
  let v = AccT(x[base + strided_offset(r, p.red_ndim, p.red_shape, p.red_strides)]);
  return select(v, v * v, OP == OP_NORM2);
}

// Whether (v, i) beats (best, best_i) for the op; ties go to the smaller index.
fn better(v: AccT, i: u32, best: AccT, best_i: u32) -> bool {
  if (OP == OP_MAX || OP == OP_ARGMAX) {
    return v > best || (v == best && i < best_i);
  }
  return v < best || (v == best && i < best_i);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let rows_per_wg = WORKGROUP / ROW;
  let o = (wid.x + wid.y * nwg.x) * rows_per_wg + li / ROW;
  let lane = li % ROW;
  let live = o < p.num_out;
  let summing = OP == OP_SUM || OP == OP_MEAN || OP == OP_NORM2;

  var acc = AccT(0);
  var acc_i = 0u;
  if (live && lane < p.reduce_size) {
    let base = p.offset + strided_offset(o, p.kept_ndim, p.kept_shape, p.kept_strides);
    acc = element(base, lane);
    acc_i = lane;
    for (var r = lane + ROW; r < p.reduce_size; r += ROW) {
      let v = element(base, r);
      if (summing) {
        acc += v;
      } else if (better(v, r, acc, acc_i)) {
        acc = v;
        acc_i = r;
      }
    }
  }
  vals[li] = acc;
  idxs[li] = select(0xffffffffu, acc_i, live && lane < p.reduce_size);  // an empty lane never wins
  workgroupBarrier();
  for (var half = ROW / 2u; half > 0u; half /= 2u) {
    if (lane < half) {
      let v = vals[li + half];
      let i = idxs[li + half];
      if (summing) {
        vals[li] += v;
      } else if (i != 0xffffffffu && (idxs[li] == 0xffffffffu || better(v, i, vals[li], idxs[li]))) {
        vals[li] = v;
        idxs[li] = i;
      }
    }
    workgroupBarrier();
  }
  if (live && lane == 0u) {
    if (OP == OP_ARGMAX || OP == OP_ARGMIN) {
      out[o] = OutT(idxs[li]);
    } else if (OP == OP_NORM2) {
      out[o] = OutT(sqrt(f32(vals[li])));
    } else if (OP == OP_MEAN) {
      out[o] = OutT(f32(vals[li]) / f32(p.reduce_size));
    } else {
      out[o] = OutT(vals[li]);
    }
  }
}
