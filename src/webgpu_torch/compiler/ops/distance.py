"""Pairwise p-norm distances: `_cdist_forward` (torch.cdist between two sets of rows, batch dims broadcast)
and `_pdist_forward` (torch.pdist within one set, the upper triangle flattened), one thread per distance.

torch.cdist reaches us as `_cdist_forward` for p ≠ 2 and for small p = 2 problems; larger Euclidean ones
arrive already decomposed into a matrix product (torch's `use_mm_for_euclid_dist` route). Here every p is
computed from the differences themselves, as torch's own `_cdist_forward` does.
"""

from __future__ import annotations

import math

from ...format import dtypes, symbolic
from ...format.program import Tensor
from .. import layout
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register

FILE = "distance.wgsl"
MAX_BATCH_DIMS = 8  # Params packs the batch dims eight to an array (strided.wgsl); rows and columns apart


def _norm(p: float) -> int:
    """distance.wgsl's NORM for p: 0, 1, 2, inf each have their own form; any other p uses the float."""
    return {0.0: 0, 1.0: 1, 2.0: 2, math.inf: 3}.get(float(p), 4)


def _check(node: NodeView) -> str | None:
    xs = [node.args[k] for k in ("x1", "x2", "self") if k in node.args]
    if not all(dtypes.is_float(x.dtype) for x in xs):
        return f"p-norm distances of {', '.join(x.dtype for x in xs)} inputs (floating point only)"
    if node.out.ndim - 2 > MAX_BATCH_DIMS:
        return f"cdist with {node.out.ndim - 2} batch dims (at most {MAX_BATCH_DIMS})"
    return None


def _dispatch(ctx: Builder, x1: Tensor, x2: Tensor, out: Tensor, p: float, rows: int, cols: int,
              batch: tuple[int, ...], pairs: bool) -> None:
    """out's elements from rows of x1 and x2 (both [*batch, n, dim], batch broadcast by strides); p ≥ 0, as
    torch checks while tracing. For pairs, x2 is x1 and `cols` is unused."""
    # The kernel bounds its loop over dims by the longer operand and, for pairs, its search over rows by x1
    # (ops/bounded.wgsl).
    if pairs or not ctx.holds(x2, x1.shape[-1]):
        x1 = ctx.walkable(x1, symbolic.maximum(rows, x1.shape[-1]) if pairs else x1.shape[-1])
        x2 = x1 if pairs else x2
    params = {"numel": out.numel, "rows": rows, "cols": cols, "dim": x1.shape[-1], "p": p,
              "batch_ndim": len(batch), "x1_offset": x1.offset, "x2_offset": x2.offset,
              "x1_strides": x1.strides[-2:], "x2_strides": x2.strides[-2:], "batch_shape": batch,
              "x1_batch_strides": x1.strides[:-2], "x2_batch_strides": x2.strides[:-2]}
    spec = KernelSpec.of(FILE, f"{'pdist' if pairs else 'cdist'}[p={p:g}]",
                         overrides={"NORM": _norm(p), "PAIRS": pairs})
    ctx.dispatch(spec, [x1, x2, out], params, elements=out.numel)


@register("aten._cdist_forward.default", check=_check)
def cdist(ctx: Builder, node: NodeView) -> Tensor:
    x1, x2 = node.args["x1"], node.args["x2"]
    out = ctx.new(node.out.shape)
    *batch, rows, cols = out.shape
    x1 = layout.broadcast_to(x1, (*batch, *x1.shape[-2:]))
    x2 = layout.broadcast_to(x2, (*batch, *x2.shape[-2:]))
    _dispatch(ctx, x1, x2, out, node.args["p"], rows, cols, tuple(batch), pairs=False)
    return out


@register("aten._pdist_forward.default", check=_check)
def pdist(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    out = ctx.new(node.out.shape)
    _dispatch(ctx, x, x, out, node.args["p"], x.shape[0], 0, (), pairs=True)
    return out


def cases() -> list[OpCase]:
    import torch

    def with_ties(*shape):  # repeated rows and columns: zero distances and zero differences for p = 0 and p < 1
        def make():
            x = torch.randn(shape, generator=torch.Generator().manual_seed(7))
            x[..., 3, :] = x[..., 0, :]
            x[..., 1:4] = x[..., 1:4].round()
            return x
        return make

    norms = (0.0, 0.5, 1.0, 2.0, 3.0, math.inf)
    return [
        OpCase("cdist_norms", lambda a, b: tuple(torch.cdist(a, b, p=p) for p in norms), [(13, 7), (11, 7)]),
        OpCase("cdist_broadcast_batch_transposed", lambda a, b: tuple(
            torch.cdist(a, b.transpose(-1, -2), p=p) for p in (1.0, 2.0, math.inf)), [(3, 1, 5, 17), (2, 17, 19)]),
        OpCase("cdist_ties", lambda a, b: tuple(torch.cdist(a, b, p=p) for p in norms),
               [with_ties(2, 7, 5), with_ties(2, 7, 5)]),
        OpCase("pdist_norms", lambda x: tuple(torch.pdist(x, p=p) for p in norms), [with_ties(23, 9)]),
        OpCase("pdist_of_a_slice_of_400_rows", lambda x: torch.pdist(x[1:, ::2]), [(401, 11)]),
    ]
