"""searchsorted and bucketize (Tensor and Scalar overloads): the insertion point of each value in a sorted
sequence, or in its own row of a sorted batch of sequences, by binary search (bucketize.wgsl); torch's sorter
argument (the order that sorts each row) and NaN order as torch's."""

from __future__ import annotations

from numbers import Number

from .. import dtypes
from ..builder import Builder, KernelSpec
from ..program import Tensor
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
    """A 1-d sequence serves every value; an N-d one has a row per row of the values (their dims but the last
    alike)."""
    a = node.args
    seq, v = _sequence(node), _values(node)
    if isinstance(v, Number):
        v = ctx.constant(f"{node.name}_value", dtypes.scalar(v, seq.dtype), seq.dtype)
    right = bool(a.get("right")) or a.get("side") == "right"
    n = seq.shape[-1] if seq.ndim else 1
    m = max(v.shape[-1], 1) if seq.ndim > 1 else 1  # values per row of the sequence
    out = ctx.new(v.shape, node.out.dtype)
    sorter = a.get("sorter")
    bound = [ctx.contiguous(seq), ctx.dummy() if sorter is None else ctx.contiguous(sorter), ctx.contiguous(v)]
    spec = KernelSpec.of(FILE, f"bucketize[{seq.dtype}{',right' * right}{',sorter' * (sorter is not None)}]",
                         consts={"T": dtypes.dtype(seq.dtype).wgsl},
                         overrides={"RIGHT": right, "SORTER": sorter is not None})
    ctx.dispatch(spec, [*bound, out], {"numel": v.numel, "n": n, "m": m, "row_stride": n if seq.ndim > 1 else 0},
                 elements=v.numel)
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
        OpCase("searchsorted_ints", lambda s, v: (torch.searchsorted(s, v), torch.bucketize(v, s, right=True)),
               [lambda: torch.randint(-50, 50, (89,), generator=gen(4)).sort().values,
                lambda: torch.randint(-60, 60, (5, 13), generator=gen(5))]),
    ]
