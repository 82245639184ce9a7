"""searchsorted and bucketize (Tensor and Scalar overloads): the insertion point of each value in a sorted
sequence, or in its own row of a sorted batch of sequences, by binary search (bucketize.wgsl); torch's sorter
argument (the order that sorts each row) and NaN order as torch's. And nonzero_static, whose output rows are
found by the same search in the running count of nonzero elements."""

from __future__ import annotations

from numbers import Number

import numpy as np

from ...format import dtypes
from ...format.program import Tensor, contiguous_strides
from .. import layout
from ..builder import Builder, KernelSpec
from .elementwise import emit
from .prefix_sum import exclusive_sum
from .registry import NodeView, OpCase, register

FILE = "bucketize.wgsl"


def _values(node: NodeView):
    return node.args["self"]


def _sequence(node: NodeView):
    return node.args["sorted_sequence"] if "sorted_sequence" in node.args else node.args["boundaries"]


def _check(node: NodeView) -> str | None:
    seq, v = _sequence(node), _values(node)
    dtype = v.dtype if not isinstance(v, Number) else seq.dtype
    if seq.dtype != dtype:
        return f"a {seq.dtype} sequence searched for {dtype} values"
    if isinstance(v, Number) and dtypes.category(dtype) < 2 and not float(v).is_integer():
        return f"searching {seq.dtype} for {v}"
    if node.args.get("side") not in (None, "left", "right"):
        return f"side={node.args['side']!r}"
    return None


@register("aten.searchsorted.Tensor", "aten.searchsorted.Scalar", "aten.bucketize.Tensor", "aten.bucketize.Scalar",
          check=_check)
def searchsorted(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    seq, v = _sequence(node), _values(node)
    if isinstance(v, Number):
        v = ctx.constant(f"{node.name}_value", dtypes.scalar(v, seq.dtype), seq.dtype)
    right = bool(a.get("right")) or a.get("side") == "right"
    return search(ctx, seq, v, right, node.out.dtype, a.get("sorter"))


def search(ctx: Builder, seq: Tensor, v: Tensor, right: bool, out_dtype: str, sorter: Tensor | None = None) -> Tensor:
    """Each value's insertion point in `seq` (of v's dtype): a 1-d sequence serves every value; an N-d one has a
    row per row of the values (their dims but the last alike)."""
    n = seq.shape[-1] if seq.ndim else 1
    m = max(v.shape[-1], 1) if seq.ndim > 1 else 1  # values per row of the sequence
    out = ctx.new(v.shape, out_dtype)
    bound = [ctx.contiguous(seq), ctx.dummy() if sorter is None else ctx.contiguous(sorter), ctx.contiguous(v)]
    spec = KernelSpec.of(FILE, f"bucketize[{seq.dtype}{',right' * right}{',sorter' * (sorter is not None)}]",
                         consts={"T": dtypes.dtype(seq.dtype).wgsl},
                         overrides={"RIGHT": right, "SORTER": sorter is not None})
    ctx.dispatch(spec, [*bound, out], {"numel": v.numel, "n": n, "m": m, "row_stride": n if seq.ndim > 1 else 0},
                 elements=v.numel)
    return out


def _check_nonzero_static(node: NodeView) -> str | None:
    x, fill = node.args["self"], node.args["fill_value"]
    if x.numel == 0:
        return "nonzero_static of an empty tensor is not supported"
    if not -(2**31) <= fill < 2**31:
        return f"fill_value {fill} must fit in int32 (int64 is int32 on the device)"
    return None


@register("aten.nonzero_static.default", check=_check_nonzero_static)
def nonzero_static(ctx: Builder, node: NodeView) -> Tensor:
    """The first `size` nonzero positions, row-major, as coordinates, fill_value past the last: output row r is
    the element of rank r, the first whose running count of nonzeros passes r (a search of the inclusive prefix
    sum), its coordinates unravelled by division (elementwise)."""
    x, size, fill = node.args["self"], node.args["size"], node.args["fill_value"]
    n, out = x.numel, ctx.new(node.out.shape, "int64")
    flat = ctx.reshaped(x, (n,))
    nonzero = emit(ctx, "ne", [flat, 0], (n,), out_dtype="bool", compute=x.dtype)
    counts = emit(ctx, "add", [exclusive_sum(ctx, nonzero), nonzero], (n,), out_dtype="int32")
    ranks = ctx.constant(f"{node.name}_ranks", np.arange(size, dtype=np.int32), "int32")
    at = search(ctx, counts, ranks, True, "int32")
    found = emit(ctx, "lt", [at, n], (size,), out_dtype="bool", compute="int32")
    filler = ctx.constant(f"{node.name}_fill", np.full((), fill, np.int32), "int64")
    for d, stride in enumerate(contiguous_strides(x.shape)):
        coord = emit(ctx, "remainder", [emit(ctx, "div_floor", [at, stride], (size,), out_dtype="int32"),
                                        x.shape[d]], (size,), out_dtype="int32")
        emit(ctx, "where", [found, coord, filler], (size,), out_dtype="int64", out=layout.select(out, 1, d))
    return out


def cases() -> list[OpCase]:
    import torch

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def sorted_with_ties_and_nan():
        s = torch.randint(-20, 20, (41,), generator=gen(1)).float().sort().values
        s[-2:] = float("nan")  # torch sorts NaN last
        return s

    def values():
        v = torch.randint(-25, 25, (7, 37), generator=gen(2)).float()
        v[0, :4] = torch.tensor([float("nan"), float("inf"), float("-inf"), 0.5])
        return v

    def rows_and_sorter():
        s = torch.randn(3, 5, 29, generator=gen(3))
        return s, torch.argsort(s, dim=-1)

    return [
        OpCase("searchsorted_left_right_ties_nan", lambda s, v: (
            torch.searchsorted(s, v), torch.searchsorted(s, v, right=True), torch.searchsorted(s, v, side="right"),
            torch.bucketize(v, s), torch.bucketize(v.t().contiguous(), s, right=True, out_int32=True),
            torch.searchsorted(s, 3.0), torch.bucketize(2.0, s, right=True)), [sorted_with_ties_and_nan, values]),
        OpCase("searchsorted_rows_with_sorter", lambda s, order, v: (
            torch.searchsorted(s.sort(-1).values, v), torch.searchsorted(s, v, sorter=order, right=True)),
            [lambda: rows_and_sorter()[0], lambda: rows_and_sorter()[1], (3, 5, 11)]),
        OpCase("nonzero_static_padded_and_cut", lambda x, m: (
            torch.nonzero_static(x, size=100), torch.nonzero_static(m, size=7, fill_value=-5),
            torch.nonzero_static(x[0, 0], size=3), torch.nonzero_static(x.transpose(0, 2), size=1031),
            torch.nonzero_static(x[0, 0, 0], size=2)),
            [lambda: torch.randint(-1, 2, (3, 5, 7), generator=gen(6)).float(),
             lambda: torch.rand(37, 41, generator=gen(7)) > 0.9]),
        OpCase("searchsorted_ints", lambda s, v: (torch.searchsorted(s, v), torch.bucketize(v, s, right=True)),
               [lambda: torch.randint(-50, 50, (89,), generator=gen(4)).sort().values,
                lambda: torch.randint(-60, 60, (5, 13), generator=gen(5))]),
    ]
