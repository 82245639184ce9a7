// per_element.wgsl — for kernels that run one thread per element of a contiguous output, WORKGROUP threads to
// a workgroup, over a 1-d count of workgroups folded into (x, y) to fit 65,535 per dimension. Not a kernel:
// kernels include it (`//! include per_element.wgsl`).

const WORKGROUP: u32 = 256u;

// The output element that thread `li` of workgroup `wid` computes (workgroups numbered x-fastest). Threads
// past the end get an index >= the element count and must exit at once.
fn element_index(wid: vec3u, nwg: vec3u, li: u32) -> u32 {
  return (wid.x + wid.y * nwg.x) * WORKGROUP + li;
}

// Element i of a contiguous [B, C, H, W] tensor as (b, c, h, w): the order of the kernels' x_strides, so
// dot(position, x_strides) is the element's offset in a strided view.
fn nchw(i: u32, C: u32, H: u32, W: u32) -> vec4<u32> {
  return vec4(i / (C * H * W), (i / (H * W)) % C, (i / W) % H, i % W);
}

// Element i of a contiguous [B, H, W, C] tensor (channels last), also as (b, c, h, w).
fn nhwc(i: u32, C: u32, H: u32, W: u32) -> vec4<u32> {
  return vec4(i / (C * H * W), i % C, (i / (W * C)) % H, (i / C) % W);
}
