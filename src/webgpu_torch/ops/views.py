"""Views: ops whose result is a strided view of an argument, so they cost no dispatch.

`view`/`reshape` of a layout that strides cannot express (e.g. flattening a transposed matrix) is the one
exception: it materialises a contiguous copy first, as torch's `reshape` does.
"""

from __future__ import annotations

from .. import layout
from ..builder import Builder
from ..program import Tensor
from .registry import NodeView, OpCase, register


@register("aten.view.default", "aten._unsafe_view.default", view=True, dynamic=True)
def reshape(ctx: Builder, node: NodeView) -> Tensor:
    t = node.args["self"]
    return ctx.reshaped(t, node.out.shape)


@register("aten.permute.default", view=True, dynamic=True)
def permute(ctx: Builder, node: NodeView) -> Tensor:
    return layout.permute(node.args["self"], node.args["dims"])


@register("aten.t.default", view=True, dynamic=True)
def t(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    return layout.permute(x, [1, 0]) if x.ndim == 2 else x


@register("aten.transpose.int", view=True, dynamic=True)
def transpose(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    dims = list(range(x.ndim))
    a, b = (layout.normalize_dim(d, x.ndim) for d in (node.args["dim0"], node.args["dim1"]))
    dims[a], dims[b] = dims[b], dims[a]
    return layout.permute(x, dims)


@register("aten.expand.default", view=True, dynamic=True)
def expand(ctx: Builder, node: NodeView) -> Tensor:
    return layout.expand(node.args["self"], node.args["size"])


@register("aten.unsqueeze.default", view=True, dynamic=True)
def unsqueeze(ctx: Builder, node: NodeView) -> Tensor:
    return layout.unsqueeze(node.args["self"], node.args["dim"])


@register("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims", view=True, dynamic=True)
def squeeze(ctx: Builder, node: NodeView) -> Tensor:
    dim = node.args.get("dim")
    return layout.squeeze(node.args["self"], None if dim is None else [dim] if isinstance(dim, int) else dim)


@register("aten.slice.Tensor", view=True, dynamic=True)
def slice_(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return layout.slice_(a["self"], a["dim"], a["start"], a["end"], a["step"])


@register("aten.select.int", view=True, dynamic=True)
def select(ctx: Builder, node: NodeView) -> Tensor:
    return layout.select(node.args["self"], node.args["dim"], node.args["index"])


@register("aten.split.Tensor", "aten.split_with_sizes.default", view=True, dynamic=True)
def split(ctx: Builder, node: NodeView) -> list[Tensor]:
    x, dim = node.args["self"], node.args["dim"]
    sizes = [m.shape[layout.normalize_dim(dim, x.ndim)] for m in node.outputs]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [layout.slice_(x, dim, start, start + n, 1) for start, n in zip(starts, sizes, strict=True)]


@register("aten.unbind.int", view=True, dynamic=True)
def unbind(ctx: Builder, node: NodeView) -> list[Tensor]:
    x, dim = node.args["self"], node.args["dim"]
    return [layout.select(x, dim, i) for i in range(x.shape[layout.normalize_dim(dim, x.ndim)])]


# The graph is functional (nothing is mutated after export), so a clone can share its source's storage.
@register("aten.clone.default", "aten.alias.default", "aten.detach.default", view=True, dynamic=True)
def alias(ctx: Builder, node: NodeView) -> Tensor:
    return node.args["self"]


def cases() -> list[OpCase]:
    import torch

    # Each view feeds an elementwise op or is returned as is, so the strides it produces are exercised.
    return [
        OpCase("view_merge", lambda a: a.view(37, 15) * 2.0, [(37, 3, 5)]),
        OpCase("reshape_transposed", lambda a: a.t().reshape(-1) + 1.0, [(37, 41)]),
        OpCase("permute_output", lambda a: a.permute(2, 0, 1), [(3, 5, 7)]),
        OpCase("transpose_then_view", lambda a: a.transpose(0, 1).contiguous().view(5, 21), [(3, 5, 7)]),
        OpCase("expand_unsqueeze", lambda a, b: a.unsqueeze(1).expand(37, 41, 3) * b, [(37, 3), (41, 3)]),
        OpCase("squeeze_dims", lambda a: torch.relu(a.squeeze(1).squeeze(-1)), [(37, 1, 41, 1)]),
        OpCase("squeeze_all_and_several", lambda a: (a.squeeze() * 1.0, a.squeeze((1, 3)) * 1.0), [(37, 1, 41, 1)]),
        OpCase("slice_step", lambda a: a[3:30:4, 1:] * 1.0, [(37, 41)]),
        OpCase("select_negative", lambda a: a[:, -2] + 0.0, [(37, 41)]),
        OpCase("clone_of_t", lambda a: a.t().clone(), [(37, 41)]),
        OpCase("detach", lambda a: a.detach() * 2.0, [(37, 41)]),
        OpCase("split_chunk_unbind", lambda a: [t * 1.0 for t in (*a.split(5, dim=1), *a.split([3, 30, 4]),
                                                                 *a.chunk(3, dim=-1), *a[:4].unbind(0))],
               [(37, 41)]),
        OpCase("split_one_piece", lambda a: a.split(41, dim=1)[0] + 1.0, [(37, 41)]),
    ]
