"""Concatenation: `cat` as one copy per input into its slice of the output (a strided view of it), so each
input is read in place whatever its layout, and converted to the output's dtype on the way (cat promotes).
The copies are elementwise.wgsl's; this family has no kernel of its own.
"""

from __future__ import annotations

from ...format.program import Tensor
from .. import layout
from ..builder import Builder
from .elementwise import MAX_DIMS, copy
from .registry import NodeView, OpCase, register


def _check(node: NodeView) -> str | None:
    if node.out.ndim > MAX_DIMS:
        return f"result has {node.out.ndim} dims; at most {MAX_DIMS} are supported"
    return None


@register("aten.cat.default", check=_check, dynamic=True, half=True)
def cat(ctx: Builder, node: NodeView) -> Tensor:
    out = ctx.new(node.out.shape, node.storage())
    dim = layout.normalize_dim(node.args["dim"], out.ndim)
    at = 0
    for t in node.args["tensors"]:
        if t.numel == 0:  # torch skips empty inputs, including legacy 1-d ones of any rank
            continue
        n = t.shape[dim]
        copy(ctx, t, out=layout.slice_(out, dim, at, at + n, 1))
        at += n
    return out


def cases() -> list[OpCase]:
    import torch

    def ints(shape):
        return lambda: torch.randint(-9, 9, shape, generator=torch.Generator().manual_seed(3))

    return [
        OpCase("cat_last_dim_kv_cache", lambda past, new: torch.cat([past, new], dim=-2), [(2, 3, 37, 16),
                                                                                           (2, 3, 1, 16)]),
        OpCase("cat_transposed_and_broadcast", lambda a, b: torch.cat([a.t(), b.expand(5, 41)], dim=0),
               [(41, 37), (1, 41)]),
        OpCase("cat_three_with_empty", lambda a, b, c: torch.cat([a, b[:, :0], c], dim=1),
               [(7, 37), (7, 5), (7, 3)]),
        OpCase("cat_int_and_promote", lambda i, x: (torch.cat([i, i + 1]), torch.cat([i, x], dim=1)),
               [ints((37, 5)), (37, 3)]),
    ]
