"""Normalisation by statistics of the input itself: `native_group_norm`, and batch norm with batch statistics
(`_native_batch_norm_legit.no_stats`: InstanceNorm, and BatchNorm without running statistics, in eval mode
too), each with its mean and rstd outputs (computed on the way).

Both normalise rows of an [N, C, HW] view: group norm row (n, g) is group g's channels of sample n, batch
statistics' row c is channel c of every sample. Three dispatches: chunk statistics (group_norm.wgsl: a row is
split into chunks so that few long rows — a UNet's 32 groups of 10 channels × 64 × 64 — still fill the
GPU), their merge into each row's mean and rstd, and the normalisation with the per-channel affine, one
thread per element (group_norm_apply.wgsl). The input is read in place (a channels-last conv output needs
no copy); the output is written contiguous.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import prod

from ...format import dtypes, symbolic
from ...format.program import Tensor
from ...format.symbolic import Value
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register, register_option

STATS, APPLY = "group_norm.wgsl", "group_norm_apply.wgsl"
# A chunk of at least this many elements (8 per thread) per workgroup; rows split until about TARGET_BLOCKS
# workgroups share the statistics pass.
MIN_CHUNK = 2048
TARGET_BLOCKS = 1024
# compile(ep, norm_chunks="row") keeps each row one chunk (one workgroup per row), for benchmarks to compare.
NORM_CHUNKS = register_option("norm_chunks", "auto", "row")


@dataclass(frozen=True)
class Rows:
    """Where the statistics' rows lie in x [N, C, HW] (see group_norm.wgsl): row r starts at
    (r // split) * stride_hi + (r % split) * stride_lo, its element i at (i // HW) * elem_stride + (i % HW) * ss;
    output element (n, c) normalises by row n * row_n + c // cg."""

    count: Value
    length: Value
    split: Value
    stride_hi: Value
    stride_lo: Value
    elem_stride: Value
    row_n: Value
    cg: Value


def _check(node: NodeView) -> str | None:
    a = node.args
    for name in ("input", "weight", "bias"):
        t = a[name]
        if t is not None and not dtypes.is_float(t.dtype):
            return f"{name} is {t.dtype}; {_what(node)} is floating point only"
    x = a["input"]
    if x.ndim < 2:
        return f"{_what(node)} needs an input of >= 2 dims [N, C, ...], got {list(x.shape)}"
    if any(symbolic.bounds(s)[0] == 0 for s in x.shape):
        return f"{_what(node)} of an empty tensor (no samples, channels or positions) is not supported"
    return None


def _what(node: NodeView) -> str:
    return "group norm" if "group" in node.target else "batch norm with batch statistics"


@register("aten.native_group_norm.default", check=_check, dynamic=True)
def native_group_norm(ctx: Builder, node: NodeView) -> list[Tensor]:
    a = node.args
    n, c, hw, groups = a["N"], a["C"], a["HxW"], a["group"]
    x = ctx.reshaped(a["input"], (n, c, hw))
    cg = c // groups
    rows = Rows(count=n * groups, length=cg * hw, split=groups, stride_hi=x.strides[0], stride_lo=cg * x.strides[1],
                elem_stride=x.strides[1], row_n=groups, cg=cg)
    return normalize(ctx, node, x, rows)


@register("aten._native_batch_norm_legit.no_stats", check=_check, dynamic=True)
def batch_norm_batch_stats(ctx: Builder, node: NodeView) -> list[Tensor]:
    a = node.args
    shape = a["input"].shape
    n, c = shape[0], shape[1]
    x = ctx.reshaped(a["input"], (n, c, prod(shape[2:])))
    rows = Rows(count=c, length=n * x.shape[2], split=c, stride_hi=0, stride_lo=x.strides[1],
                elem_stride=x.strides[0], row_n=0, cg=1)
    return normalize(ctx, node, x, rows)


def normalize(ctx: Builder, node: NodeView, x: Tensor, rows: Rows) -> list[Tensor]:
    """out = (x - mean[row]) * rstd[row] * weight[c] + bias[c] over x [N, C, HW]; returns [out, mean, rstd]."""
    a = node.args
    w, b = a["weight"], a["bias"]
    out = ctx.new(a["input"].shape)
    mean, rstd = (ctx.new(m.shape) for m in node.outputs[1:])
    whole = NORM_CHUNKS.of(ctx.options) == "row"
    chunks, chunk_len = (1, rows.length) if whole else chunking(rows.length, rows.count)
    partial = ctx.new((rows.count, chunks, 2))
    x = ctx.walkable(x, rows.length)  # the kernel bounds a row's walk by x's length (ops/bounded.wgsl)
    sizes = {"rows": rows.count, "chunks": chunks, "chunk_len": chunk_len, "row_len": rows.length,
             "HW": x.shape[2], "ss": x.strides[2], "x_offset": x.offset}
    layout = {"row_split": rows.split, "row_stride_hi": rows.stride_hi, "row_stride_lo": rows.stride_lo,
              "elem_stride": rows.elem_stride}
    ctx.dispatch(KernelSpec.of(STATS, "group_norm[stats]"), [x, partial], {**sizes, **layout}, rows.count * chunks)

    affine = {"HAS_WEIGHT": w is not None, "HAS_BIAS": b is not None}
    operands = [partial, x, ctx.contiguous(w) if w is not None else ctx.dummy(),
                ctx.contiguous(b) if b is not None else ctx.dummy(), mean, rstd, out]
    params = {**sizes, "numel": out.numel, "C": x.shape[1], "row_n": rows.row_n, "Cg": rows.cg,
              "sn": x.strides[0], "sc": x.strides[1], "eps": float(a["eps"])}
    ctx.dispatch(KernelSpec.of(APPLY, "group_norm[finish]", entry="finish", overrides=affine), operands, params,
                 elements=rows.count)
    ctx.dispatch(KernelSpec.of(APPLY, "group_norm", overrides=affine), operands, params, elements=out.numel)
    return [out, mean, rstd]


def chunking(length: Value, count: Value) -> tuple[int, Value]:
    """(chunks, chunk_len) for `count` rows of `length` elements: enough chunks of at least MIN_CHUNK
    elements for about TARGET_BLOCKS workgroups in all. `chunks` is fixed (for dynamic sizes, planned at their
    hints); chunk_len covers a row in that many (static: none empty)."""
    want = max(1, min(-(-symbolic.hint(length) // MIN_CHUNK), -(-TARGET_BLOCKS // max(1, symbolic.hint(count)))))
    chunk_len = -(-length // want)
    if isinstance(length, int):
        return -(-length // chunk_len), chunk_len
    return want, chunk_len


def cases() -> list[OpCase]:
    import torch

    gn = torch.nn.functional.group_norm
    return [
        # wav2vec2's feature encoder: GroupNorm(512, 512), one channel per group, over a long sequence.
        OpCase("group_norm_group_per_channel_long_rows", lambda x, w, b: gn(x, 37, w, b),
               [(2, 37, 3203), (37,), (37,)]),
        # A UNet block: 32 groups of 2 channels over a prime-sized image, every row one chunk.
        OpCase("group_norm_unet_32_groups", lambda x, w, b: gn(x, 32, w, b, eps=1e-6),
               [(3, 64, 13, 11), (64,), (64,)]),
        # Few long rows, each split into chunks merged afterwards; a large common offset must not cancel.
        OpCase("group_norm_chunked_rows_with_offset", lambda x, w: gn(x * 3.0 + 100.0, 4, w),
               [(1, 12, 67, 61), (12,)]),
        OpCase("group_norm_channels_last_no_affine_and_stats",
               lambda x: torch.ops.aten.native_group_norm.default(x.permute(0, 3, 1, 2), None, None, 2, 20, 7 * 5,
                                                                 5, 1e-5),
               [(2, 7, 5, 20)]),
        OpCase("group_norm_1d_tiny_groups", lambda x, w, b: gn(x, 3, w, b), [(5, 3, 1), (3,), (3,)]),
        OpCase("instance_norm_2d", lambda x: torch.nn.functional.instance_norm(x), [(3, 5, 13, 11)]),
        OpCase("batch_norm_batch_stats_and_stats_outputs",
               lambda x, w, b: torch.ops.aten._native_batch_norm_legit.no_stats(x * 2.0 + 50.0, w, b, True, 0.1,
                                                                               1e-5),
               [(7, 37, 41), (37,), (37,)]),
        OpCase("batch_norm_batch_stats_2d_chunked", lambda x: torch.nn.functional.batch_norm(x, None, None,
                                                                                            training=True),
               [(4099, 3)]),
        OpCase("group_norm_one_chunk_per_row", lambda x: gn(x, 4, eps=1e-3), [(1, 12, 67, 61)],
               kwargs={"norm_chunks": "row"}),
    ]
