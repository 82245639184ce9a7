"""2-d resampling of NCHW tensors, each output pixel from a window of its own channel: pooling (max_pool2d,
the values of max_pool2d_with_indices; avg_pool2d; adaptive average pooling) and upsampling (nearest,
bilinear: the `.vec` overloads torch.export produces).

One kernel, the op an override constant; the input is read through its strides ([C, H, W] pooling inputs
as a batch of one). Output sizes come from the node, so ceil_mode costs nothing. Upsampling scales are
computed here exactly as torch computes them (float32: 1/scale_factor when one is given, else input/output
size; (n-1)/(o-1) with align_corners), so nearest picks torch's pixels. A global average over H and W exports
as `mean.dim` and runs in ops/reduce.py.
"""

from __future__ import annotations

import re

import numpy as np

from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register

FILE = "resample.wgsl"
WORKGROUP = 256  # per_element.wgsl
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def _check_input(x, ranks: tuple[int, ...], what: str) -> str | None:
    if x.ndim not in ranks:
        shapes = " or ".join(("[N, C, H, W]", "[C, H, W]")[: len(ranks)])
        return f"{what} needs a {shapes} input, got {list(x.shape)}"
    if x.dtype != "float32":
        return f"input is {x.dtype}; resampling kernels are float32 only"
    return None


def _check_pool(node: NodeView) -> str | None:
    if node.outputs_read - {0}:
        return "the indices (output 1) of max_pool2d_with_indices are read; only the values are supported"
    return _check_input(node.args["self"], (4, 3), "2-d pooling")


def _check_upsample(node: NodeView) -> str | None:
    return _check_input(node.args["input"], (4,), "2-d upsampling")


def resample(ctx: Builder, node: NodeView, x: Tensor, op: str, kernel=(1, 1), stride=(1, 1), padding=(0, 0),
             dilation=(1, 1), divisor: int = 0, scale=(0.0, 0.0), count_pad: bool = True,
             align_corners: bool = False) -> Tensor:
    x4 = x if x.ndim == 4 else layout.unsqueeze(x, 0)
    out_shape = x4.shape[:2] + node.outputs[0].shape[-2:]
    out = ctx.new(out_shape)
    params = {"numel": out.numel, "C": x4.shape[1], "H": x4.shape[2], "W": x4.shape[3], "OH": out_shape[2],
              "OW": out_shape[3], "KH": kernel[0], "KW": kernel[1], "stride_h": stride[0], "stride_w": stride[1],
              "pad_h": padding[0], "pad_w": padding[1], "dil_h": dilation[0], "dil_w": dilation[1],
              "divisor": divisor, "x_offset": x4.offset, "scale_h": float(scale[0]), "scale_w": float(scale[1]),
              "x_strides": x4.strides}
    name = f"resample[{op}{',align_corners' * align_corners}]"
    spec = KernelSpec.of(FILE, name, overrides={"OP": OP_CODES[op], "COUNT_PAD": count_pad,
                                                "ALIGN_CORNERS": align_corners})
    ctx.dispatch(spec, [x4, out], params, -(-out.numel // WORKGROUP))
    return layout.view(out, node.outputs[0].shape)


def _pair(v, default: tuple[int, int]) -> tuple[int, int]:
    """An `int[2]` argument as ATen accepts it: one int, [n] or [h, w]; [] means `default`."""
    if isinstance(v, int):
        return (v, v)
    return (v[0], v[-1]) if v else default


@register("aten.max_pool2d_with_indices.default", check=_check_pool)
def max_pool2d(ctx: Builder, node: NodeView) -> tuple[Tensor, None]:
    a = node.args
    kernel = _pair(a["kernel_size"], (1, 1))
    return resample(ctx, node, a["self"], "max", kernel, _pair(a["stride"], kernel), _pair(a["padding"], (0, 0)),
                    _pair(a["dilation"], (1, 1))), None


@register("aten.avg_pool2d.default", check=_check_pool)
def avg_pool2d(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    kernel = _pair(a["kernel_size"], (1, 1))
    return resample(ctx, node, a["self"], "avg", kernel, _pair(a["stride"], kernel), _pair(a["padding"], (0, 0)),
                    divisor=a["divisor_override"] or 0, count_pad=a["count_include_pad"])


@register("aten._adaptive_avg_pool2d.default", check=_check_pool)
def adaptive_avg_pool2d(ctx: Builder, node: NodeView) -> Tensor:
    return resample(ctx, node, node.args["self"], "adaptive")


def _scale(n: int, out: int, factor: float | None, align_corners: bool) -> np.float32:
    """torch's source-per-destination scale along one dim (area_pixel_compute_scale), in float32."""
    if align_corners:
        return np.float32(n - 1) / np.float32(out - 1) if out > 1 else np.float32(0)
    if factor is not None and factor > 0:
        return np.float32(1.0 / factor)
    return np.float32(n) / np.float32(out)


def _upsample(ctx: Builder, node: NodeView, op: str, align_corners: bool = False) -> Tensor:
    x = node.args["input"]
    factors = node.args["scale_factors"] or (None, None)
    scale = [_scale(n, o, f, align_corners) for n, o, f in zip(x.shape[2:], node.out.shape[2:], factors, strict=True)]
    return resample(ctx, node, x, op, scale=scale, align_corners=align_corners)


@register("aten.upsample_nearest2d.vec", check=_check_upsample)
def upsample_nearest2d(ctx: Builder, node: NodeView) -> Tensor:
    return _upsample(ctx, node, "nearest")


@register("aten.upsample_bilinear2d.vec", check=_check_upsample)
def upsample_bilinear2d(ctx: Builder, node: NodeView) -> Tensor:
    return _upsample(ctx, node, "bilinear", node.args["align_corners"])


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def up(**kw):
        return lambda x: F.interpolate(x, **kw)

    return [
        OpCase("max_pool_k3_s2_p1_batch3", lambda x: F.max_pool2d(x, 3, 2, 1), [(3, 5, 17, 19)]),
        OpCase("max_pool_dilated_ceil", lambda x: F.max_pool2d(x, (3, 2), (2, 3), (1, 0), (2, 1), ceil_mode=True),
               [(1, 7, 23, 19)]),
        OpCase("max_pool_unbatched_default_stride", lambda x: F.max_pool2d(x, (3, 2)), [(5, 13, 11)]),
        OpCase("avg_pool_count_pad", lambda x: F.avg_pool2d(x, 3, 2, 1), [(3, 5, 17, 19)]),
        OpCase("avg_pool_exclude_pad_ceil", lambda x: F.avg_pool2d(x, (3, 5), (2, 3), (1, 2), ceil_mode=True,
                                                                   count_include_pad=False), [(1, 7, 23, 19)]),
        OpCase("avg_pool_default_stride_divisor_override", lambda x: F.avg_pool2d(x, (2, 3), divisor_override=5),
               [(3, 5, 13, 11)]),
        OpCase("avg_pool_of_transposed", lambda x: F.avg_pool2d(x.transpose(2, 3), 3, 1, 1), [(1, 5, 13, 11)]),
        OpCase("adaptive_avg_pool_7x5", lambda x: F.adaptive_avg_pool2d(x, (7, 5)), [(3, 5, 17, 19)]),
        OpCase("adaptive_avg_pool_upsampling", lambda x: F.adaptive_avg_pool2d(x, (11, 13)), [(1, 3, 7, 5)]),
        OpCase("adaptive_avg_pool_global", lambda x: F.adaptive_avg_pool2d(x, 1), [(3, 37, 7, 7)]),
        OpCase("nearest_x2_batch3", up(scale_factor=2), [(3, 5, 9, 7)]),
        OpCase("nearest_fractional_scale", up(scale_factor=(1.7, 2.3)), [(1, 3, 13, 11)]),
        OpCase("nearest_to_size_down_and_up", up(size=(7, 17)), [(1, 3, 13, 11)]),
        OpCase("bilinear_x2", up(scale_factor=2, mode="bilinear"), [(3, 5, 9, 7)]),
        OpCase("bilinear_to_size", up(size=(17, 5), mode="bilinear"), [(1, 3, 13, 11)]),
        OpCase("bilinear_align_corners", up(size=(17, 23), mode="bilinear", align_corners=True), [(1, 3, 13, 11)]),
        OpCase("bilinear_align_corners_to_one", up(size=(1, 5), mode="bilinear", align_corners=True),
               [(1, 3, 13, 11)]),
        OpCase("bilinear_fractional_of_transposed", lambda x: F.interpolate(x.transpose(2, 3), scale_factor=1.37,
                                                                            mode="bilinear"), [(1, 3, 13, 11)]),
    ]
