// col2im.wgsl — F.fold: out[n, c, h, w] = the sum of every column entry whose sliding block covers pixel
// (h, w) with kernel tap (i, j): entry ((c * KH + i) * KW + j, bh * LW + bw) where h = bh * sh - ph + i * dh
// and w = bw * sw - pw + j * dw. Each output pixel pulls its own taps (at most KH * KW), so overlapping blocks
// add in a fixed order and no atomics are needed.
//
// Layout: cols any strided view [N, C * KH * KW, LH * LW] (offset and strides in Params); out contiguous
//   [N, C, H, W]. LH, LW are the block counts along h and w.
// Types: T by alias (f32, or u32 for bool, whose sum saturates to 1: torch's col2im of bool is an or).
// Geometry: one thread per output element (per_element.wgsl); threads past `numel` exit at once.

//! include bounded.wgsl
//! include per_element.wgsl

alias T = f32;

override SATURATE: bool = false;

struct Params {
  numel: u32,
  C: u32,
  H: u32,
  W: u32,
  KH: u32,
  KW: u32,
  LH: u32,
  LW: u32,
  stride: vec2<u32>,
  pad: vec2<u32>,
  dil: vec2<u32>,
  cols_offset: u32,
  cols_strides: vec4<u32>,  // (n, column, block, unused)
}

@group(0) @binding(0) var<storage, read> cols: array<T>;
@group(0) @binding(1) var<storage, read_write> out: array<T>;
@group(0) @binding(2) var<uniform> p: Params;

// The block along one axis whose tap k covers position o, or -1 where none does.
fn block(o: u32, k: u32, a: u32, blocks: u32) -> i32 {
  let t = i32(o + p.pad[a]) - i32(k * p.dil[a]);
  if (t < 0 || u32(t) % p.stride[a] != 0u || u32(t) / p.stride[a] >= blocks) {
    return -1;
  }
  return t / i32(p.stride[a]);
}

@compute @workgroup_size(WORKGROUP)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(num_workgroups) nwg: vec3u,
        @builtin(local_invocation_index) li: u32) {
  let i = element_index(wid, nwg, li);
  if (i >= p.numel) {
    return;
  }
  let o = nchw(i, p.C, p.H, p.W);
  let base = p.cols_offset + o.x * p.cols_strides.x;
  // The taps walk cols together: KH * KW never exceeds its length (bounded.wgsl).
  let taps_w = bounded(p.KW, arrayLength(&cols));
  let taps_h = bounded_within(p.KH, taps_w, arrayLength(&cols));
  var acc = T(0);
  for (var ki = 0u; ki < taps_h; ki++) {
    let bh = block(o.z, ki, 0u, p.LH);
    if (bh < 0) {
      continue;
    }
    for (var kj = 0u; kj < taps_w; kj++) {
      let bw = block(o.w, kj, 1u, p.LW);
      if (bw < 0) {
        continue;
      }
      let column = (o.y * p.KH + ki) * p.KW + kj;
      acc += cols[base + column * p.cols_strides.y + (u32(bh) * p.LW + u32(bw)) * p.cols_strides.z];
    }
  }
  if (SATURATE) {
    acc = min(acc, T(1));
  }
  out[i] = acc;
}
