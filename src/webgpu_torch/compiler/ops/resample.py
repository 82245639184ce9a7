"""Resampling of N-C-spatial tensors, each output element from a window of its own channel: pooling in 2-d
and 3-d (max and adaptive max pooling with the indices torch returns, average and adaptive average pooling)
and 2-d upsampling (nearest, bilinear, bicubic: the `.vec` overloads torch.export produces).

One kernel, the op an override constant; a 2-d op is a 3-d one of depth 1, and the input is read through its
strides (unbatched inputs as a batch of one). Output sizes come from the node, so ceil_mode costs nothing.
Upsampling scales are computed here exactly as torch computes them (float32: 1/scale_factor when one is given,
else input/output size; (n-1)/(o-1) with align_corners), so nearest picks torch's pixels. A global average
over H and W exports as `mean.dim` and runs in ops/reduce.py. Max and average pools also take the integer
dtypes torch pools (max: int64 and int32; avg: int64); everything else is float32.
"""

from __future__ import annotations

import re
from math import prod

import numpy as np

from ...format import dtypes
from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register

FILE = "resample.wgsl"
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}
INTEGER_POOLS = {"max": ("int64", "int32"), "avg": ("int64",)}  # the integer dtypes torch's CPU pools take


def _check_input(x, spatial: int, batched_only: bool, what: str, dtypes_: tuple[str, ...] = ()) -> str | None:
    ranks = (spatial + 2,) if batched_only else (spatial + 2, spatial + 1)
    if x.ndim not in ranks:
        dims = "DHW"[3 - spatial:]
        shapes = " or ".join(f"[{', '.join(('N', 'C', *dims)[r == spatial + 1:])}]" for r in ranks)
        return f"{what} needs a {shapes} input, got {list(x.shape)}"
    if not dtypes.is_float(x.dtype) and x.dtype not in dtypes_:
        return f"{what} of {x.dtype} is not supported (floating point{''.join(', ' + d for d in dtypes_)})"
    return None


def _check_pool(op: str, spatial: int):
    def check(node: NodeView) -> str | None:
        return _check_input(node.args["self"], spatial, False, f"{spatial}-d pooling", INTEGER_POOLS.get(op, ()))

    return check


def _check_upsample(node: NodeView) -> str | None:
    return _check_input(node.args["input"], 2, True, "2-d upsampling")


def resample(ctx: Builder, node: NodeView, x: Tensor, op: str, spatial: int, kernel=(1, 1, 1), stride=(1, 1, 1),
             padding=(0, 0, 0), dilation=(1, 1, 1), divisor: int = 0, scale=(0.0, 0.0, 0.0),
             count_pad: bool = True, align_corners: bool = False, with_indices: bool = False) -> list[Tensor]:
    """The op over the last `spatial` dims of x (a batch of one where x has no batch dim); returns the output
    and, with_indices, the argmax indices (int64), both of the node's output shape."""
    x5 = x if x.ndim == spatial + 2 else layout.unsqueeze(x, 0)
    for _ in range(3 - spatial):
        x5 = layout.unsqueeze(x5, 2)
    out_size = (1,) * (3 - spatial) + tuple(node.outputs[0].shape[-spatial:])
    out = ctx.new(x5.shape[:2] + out_size, x.dtype)
    indices = ctx.new(out.shape, "int64") if with_indices else ctx.sink()
    x5 = ctx.walkable(x5, prod(x5.shape[2:]))  # windows walk a plane, bounded by x's length (ops/bounded.wgsl)
    params = {"numel": out.numel, "C": x5.shape[1], "divisor": divisor, "x_offset": x5.offset,
              "in_size": x5.shape[2:], "out_size": out_size, "kernel": kernel, "stride": stride, "pad": padding,
              "dil": dilation, "scale": [float(v) for v in scale], "x_strides": x5.strides}
    name = f"resample[{op}{',align_corners' * align_corners}{',indices' * with_indices}]"
    spec = KernelSpec.of(FILE, name, consts={"T": dtypes.dtype(x.dtype).wgsl},
                         overrides={"OP": OP_CODES[op], "COUNT_PAD": count_pad, "ALIGN_CORNERS": align_corners,
                                    "WITH_INDICES": with_indices})
    ctx.dispatch(spec, [x5, out, indices], params, elements=out.numel)
    shape = node.outputs[0].shape
    return [layout.view(out, shape), layout.view(indices, shape) if with_indices else None]


def _ints(v, spatial: int, default: tuple[int, ...], depth: int) -> tuple[int, ...]:
    """An `int[2]`/`int[3]` argument as ATen accepts it: one int, [n] or one per dim; [] means `default`.
    Returned as 3-d, a 2-d op's value along depth being `depth`."""
    if isinstance(v, int):
        v = [v]
    v = tuple(default) if not v else tuple(v) * spatial if len(v) == 1 else tuple(v)
    return (depth,) * (3 - spatial) + v


def _window(a: dict, spatial: int) -> dict:
    kernel = _ints(a["kernel_size"], spatial, (), 1)
    return {"kernel": kernel, "stride": _ints(a["stride"], spatial, kernel[3 - spatial:], 1),
            "padding": _ints(a["padding"], spatial, (0,) * spatial, 0)}


def _max_pool(spatial: int):
    def lower(ctx: Builder, node: NodeView) -> list[Tensor | None]:
        a = node.args
        dilation = _ints(a["dilation"], spatial, (1,) * spatial, 1)
        return resample(ctx, node, a["self"], "max", spatial, dilation=dilation, **_window(a, spatial),
                        with_indices=1 in node.outputs_read)

    return lower


def _avg_pool(spatial: int):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a = node.args
        return resample(ctx, node, a["self"], "avg", spatial, divisor=a["divisor_override"] or 0,
                        count_pad=a["count_include_pad"], **_window(a, spatial))[0]

    return lower


def _adaptive_avg_pool(spatial: int):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        return resample(ctx, node, node.args["self"], "adaptive", spatial)[0]

    return lower


def _adaptive_max_pool(spatial: int):
    def lower(ctx: Builder, node: NodeView) -> list[Tensor | None]:
        return resample(ctx, node, node.args["self"], "adaptive_max", spatial, with_indices=1 in node.outputs_read)

    return lower


for _s in (2, 3):
    register(f"aten.max_pool{_s}d_with_indices.default", check=_check_pool("max", _s))(_max_pool(_s))
    register(f"aten.avg_pool{_s}d.default", check=_check_pool("avg", _s))(_avg_pool(_s))
    register(f"aten._adaptive_avg_pool{_s}d.default", check=_check_pool("adaptive", _s))(_adaptive_avg_pool(_s))
    register(f"aten.adaptive_max_pool{_s}d.default", check=_check_pool("adaptive_max", _s))(_adaptive_max_pool(_s))


def _scale(n: int, out: int, factor: float | None, align_corners: bool) -> np.float32:
    """torch's source-per-destination scale along one dim (area_pixel_compute_scale), in float32."""
    if align_corners:
        return np.float32(n - 1) / np.float32(out - 1) if out > 1 else np.float32(0)
    if factor is not None and factor > 0:
        return np.float32(1.0 / factor)
    return np.float32(n) / np.float32(out)


def _upsample(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        x, align_corners = node.args["input"], bool(node.args.get("align_corners"))
        factors = node.args["scale_factors"] or (None, None)
        scale = [_scale(n, o, f, align_corners)
                 for n, o, f in zip(x.shape[2:], node.out.shape[2:], factors, strict=True)]
        return resample(ctx, node, x, op, 2, scale=(0.0, *scale), align_corners=align_corners)[0]

    return lower


for _op in ("nearest", "bilinear", "bicubic"):
    register(f"aten.upsample_{_op}2d.vec", check=_check_upsample)(_upsample(_op))


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def up(**kw):
        return lambda x: F.interpolate(x, **kw)

    def ints(*shape, dtype=torch.int64):  # few distinct values, so windows tie and the first maximum must win
        return lambda: torch.randint(-3, 4, shape, generator=torch.Generator().manual_seed(9)).to(dtype)

    def unpool(x):  # SegNet's decoder reads the pool's indices
        v, i = F.max_pool2d(x, 2, return_indices=True)
        return i, F.max_unpool2d(v * 2.0, i, 2, output_size=x.shape[-2:])

    return [
        OpCase("max_pool_k3_s2_p1_batch3", lambda x: F.max_pool2d(x, 3, 2, 1), [(3, 5, 17, 19)]),
        OpCase("max_pool_dilated_ceil", lambda x: F.max_pool2d(x, (3, 2), (2, 3), (1, 0), (2, 1), ceil_mode=True),
               [(1, 7, 23, 19)]),
        OpCase("max_pool_unbatched_default_stride", lambda x: F.max_pool2d(x, (3, 2)), [(5, 13, 11)]),
        OpCase("max_pool_indices", lambda x: F.max_pool2d(x, (3, 2), (2, 3), (1, 0), (2, 1), ceil_mode=True,
                                                         return_indices=True), [(2, 7, 23, 19)]),
        OpCase("max_pool_indices_unpooled", unpool, [(2, 3, 17, 19)]),
        # torch.export decomposes the 1-d average pools into the 2-d ones over a height of 1.
        OpCase("avg_pools_1d", lambda x: (F.avg_pool1d(x, 3, 2, 1), F.adaptive_avg_pool1d(x, 5)), [(3, 7, 41)]),
        OpCase("max_pool_int_ties", lambda i, j: (F.max_pool2d(i, 3, 2, 1, return_indices=True),
                                                  F.max_pool2d(j, (2, 3), return_indices=True)),
               [ints(2, 3, 17, 19), ints(3, 13, 11, dtype=torch.int32)]),
        OpCase("max_pool3d_indices", lambda x, i: (F.max_pool3d(x, 3, 2, 1, return_indices=True),
                                                   F.max_pool3d(x, (2, 3, 1), (1, 2, 2), 0, (2, 1, 1)),
                                                   F.max_pool3d(i, 2, ceil_mode=True, return_indices=True)),
               [(2, 3, 7, 11, 13), ints(3, 5, 7, 9)]),
        OpCase("avg_pool_count_pad", lambda x: F.avg_pool2d(x, 3, 2, 1), [(3, 5, 17, 19)]),
        OpCase("avg_pool_int_truncates", lambda i: (F.avg_pool2d(i, 3, 2, 1),
                                                    F.avg_pool2d(i, 2, padding=1, count_include_pad=False)),
               [ints(2, 3, 17, 19)]),
        OpCase("avg_pool3d", lambda x, i: (F.avg_pool3d(x, 3, 2, 1), F.avg_pool3d(x, (2, 3, 3), (1, 2, 2), 1,
                                                                                   ceil_mode=True,
                                                                                   count_include_pad=False),
                                           F.avg_pool3d(x, 2, divisor_override=3), F.avg_pool3d(i, 2)),
               [(2, 3, 7, 11, 13), ints(3, 5, 7, 9)]),
        OpCase("adaptive_max_pool_2d_3d", lambda x: (F.adaptive_max_pool2d(x[0], (5, 7), return_indices=True),
                                                    F.adaptive_max_pool2d(x[:, 0], 1),
                                                    F.adaptive_max_pool3d(x, (3, 5, 4), return_indices=True),
                                                    F.adaptive_max_pool3d(x, (11, 2, 17))), [(2, 3, 7, 11, 13)]),
        OpCase("adaptive_avg_pool3d", lambda x: (F.adaptive_avg_pool3d(x, (3, 5, 4)), F.adaptive_avg_pool3d(x[0], 2),
                                                 F.adaptive_avg_pool3d(x, (11, 1, 17))), [(2, 3, 7, 11, 13)]),
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
        OpCase("bicubic_scale_and_size", lambda x: (F.interpolate(x, scale_factor=2, mode="bicubic"),
                                                    F.interpolate(x, scale_factor=(0.6, 1.7), mode="bicubic"),
                                                    F.interpolate(x, size=(5, 23), mode="bicubic")),
               [(2, 3, 13, 11)]),
        OpCase("bicubic_align_corners", lambda x: (F.interpolate(x, size=(29, 23), mode="bicubic", align_corners=True),
                                                   F.interpolate(x.transpose(2, 3), scale_factor=0.7, mode="bicubic",
                                                                 align_corners=True)), [(2, 3, 13, 11)]),
        OpCase("bilinear_fractional_of_transposed", lambda x: F.interpolate(x.transpose(2, 3), scale_factor=1.37,
                                                                            mode="bilinear"), [(1, 3, 13, 11)]),
    ]
