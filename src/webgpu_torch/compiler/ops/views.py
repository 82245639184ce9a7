"""Views: ops whose result is a strided view of an argument, so they cost no dispatch.

`view`/`reshape` of a layout that strides cannot express (e.g. flattening a transposed matrix) is the one
exception: it materialises a contiguous copy first, as torch's `reshape` does; `as_strided` of a tensor that
our layout keeps in another order than torch's memory does the same. A functional `copy` is a view of its
source unless it converts the dtype, and inference dropout is its input.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ...format.program import Tensor
from .. import layout
from ..builder import Builder
from .elementwise import copy as copy_kernel
from .elementwise import emit
from .registry import NodeView, OpCase, register


@register("aten.view.default", "aten._unsafe_view.default", view=True, dynamic=True, half=True)
def reshape(ctx: Builder, node: NodeView) -> Tensor:
    t = node.args["self"]
    return ctx.reshaped(t, node.out.shape)


@register("aten.permute.default", view=True, dynamic=True, half=True)
def permute(ctx: Builder, node: NodeView) -> Tensor:
    return layout.permute(node.args["self"], node.args["dims"])


@register("aten.t.default", view=True, dynamic=True, half=True)
def t(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    return layout.permute(x, [1, 0]) if x.ndim == 2 else x


@register("aten.transpose.int", view=True, dynamic=True, half=True)
def transpose(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    dims = list(range(x.ndim))
    a, b = (layout.normalize_dim(d, x.ndim) for d in (node.args["dim0"], node.args["dim1"]))
    dims[a], dims[b] = dims[b], dims[a]
    return layout.permute(x, dims)


@register("aten.expand.default", view=True, dynamic=True, half=True)
def expand(ctx: Builder, node: NodeView) -> Tensor:
    return layout.expand(node.args["self"], node.args["size"])


@register("aten.unsqueeze.default", view=True, dynamic=True, half=True)
def unsqueeze(ctx: Builder, node: NodeView) -> Tensor:
    return layout.unsqueeze(node.args["self"], node.args["dim"])


@register("aten.squeeze.default", "aten.squeeze.dim", "aten.squeeze.dims", view=True, dynamic=True, half=True)
def squeeze(ctx: Builder, node: NodeView) -> Tensor:
    dim = node.args.get("dim")
    return layout.squeeze(node.args["self"], None if dim is None else [dim] if isinstance(dim, int) else dim)


@register("aten.slice.Tensor", view=True, dynamic=True, half=True)
def slice_(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return layout.slice_(a["self"], a["dim"], a["start"], a["end"], a["step"])


@register("aten.select.int", view=True, dynamic=True, half=True)
def select(ctx: Builder, node: NodeView) -> Tensor:
    return layout.select(node.args["self"], node.args["dim"], node.args["index"])


@register("aten.split.Tensor", "aten.split_with_sizes.default", view=True, dynamic=True, half=True)
def split(ctx: Builder, node: NodeView) -> list[Tensor]:
    x, dim = node.args["self"], node.args["dim"]
    sizes = [m.shape[layout.normalize_dim(dim, x.ndim)] for m in node.outputs]
    starts = [sum(sizes[:i]) for i in range(len(sizes))]
    return [layout.slice_(x, dim, start, start + n, 1) for start, n in zip(starts, sizes, strict=True)]


@register("aten.unbind.int", view=True, dynamic=True, half=True)
def unbind(ctx: Builder, node: NodeView) -> list[Tensor]:
    x, dim = node.args["self"], node.args["dim"]
    return [layout.select(x, dim, i) for i in range(x.shape[layout.normalize_dim(dim, x.ndim)])]


# The graph is functional (nothing is mutated after export), so a clone can share its source's storage.
@register("aten.clone.default", "aten.alias.default", "aten.detach.default", view=True, dynamic=True, half=True)
def alias(ctx: Builder, node: NodeView) -> Tensor:
    return node.args["self"]


def as_strided_reach(node: NodeView) -> str | None:
    """as_strided (and as_strided_scatter) address torch's storage of `self`, whose elements must lie densely
    from the start of that storage (the frontend gives their order in memory), and reach only those elements."""
    x, a = node.args["self"], node.args
    if a["self_storage_order"] is None:
        return (f"as_strided of a {list(x.shape)} tensor that is a strided or offset view into a larger storage "
                "(only tensors whose elements lie densely from their storage's start are supported)")
    if any(s < 0 for s in a["stride"]):
        return f"as_strided with negative strides {a['stride']}"
    reach = (a["storage_offset"] or 0) + sum((n - 1) * s for n, s in zip(a["size"], a["stride"], strict=True))
    if 0 not in a["size"] and reach >= x.numel:
        return (f"as_strided to size {a['size']}, stride {a['stride']}, offset {a['storage_offset'] or 0} reaches "
                f"element {reach} of a {list(x.shape)} tensor of {x.numel} elements")
    return None


@register("aten.as_strided.default", check=as_strided_reach, view=True, half=True)
def as_strided(ctx: Builder, node: NodeView) -> Tensor:
    """A view of `self`'s elements laid out in torch's memory order: a view where our layout keeps that order
    (a contiguous tensor, a channels-last conv output seen as NCHW), a copy into it first otherwise."""
    a = node.args
    storage = ctx.contiguous(layout.permute(a["self"], a["self_storage_order"]))
    return replace(storage, shape=tuple(a["size"]), strides=tuple(a["stride"]),
                   offset=storage.offset + (a["storage_offset"] or 0))


@register("aten.diagonal.default", view=True, half=True)
def diagonal(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return layout.diagonal(a["self"], a["offset"], a["dim1"], a["dim2"])


@register("aten.unfold.default", view=True)
def unfold(ctx: Builder, node: NodeView) -> Tensor:
    """Windows of `size` elements every `step` along `dimension`: that dim counts the windows (its stride times
    step) and a new last dim walks a window (the dim's own stride)."""
    x, step = node.args["self"], node.args["step"]
    d = layout.normalize_dim(node.args["dimension"], max(x.ndim, 1))
    if x.ndim == 0:  # a 0-d tensor unfolds into one window of its one element
        return replace(x, shape=(1,), strides=(1,))
    shape, strides = list(x.shape), list(x.strides)
    shape[d], strides[d] = node.out.shape[d], x.strides[d] * step
    return replace(x, shape=(*shape, node.args["size"]), strides=(*strides, x.strides[d]))


@register("aten.copy.default", view=True, dynamic=True)
def copy(ctx: Builder, node: NodeView) -> Tensor:
    """The functional copy_: `src` broadcast to `self`'s shape in `self`'s dtype (a copy only to convert)."""
    dst, src = node.args["self"], node.args["src"]
    view = layout.broadcast_to(src, dst.shape)
    if src.dtype == dst.dtype or {src.dtype, dst.dtype} == {"int32", "int64"}:
        return replace(view, dtype=dst.dtype)
    if dst.dtype == "bool":
        return emit(ctx, "ne", [view, 0], dst.shape, out_dtype="bool", compute=src.dtype)
    return copy_kernel(ctx, view, ctx.new(dst.shape, dst.dtype))


def _check_dropout(node: NodeView) -> str | None:
    if node.args["train"] is not False:
        return (f"native_dropout with train={node.args['train']} (training-time dropout is random); export the "
                "model in eval() mode")
    return None


@register("aten.native_dropout.default", check=_check_dropout, view=True, dynamic=True, half=True)
def native_dropout(ctx: Builder, node: NodeView) -> list[Tensor]:
    """Inference dropout: the input itself, and a mask of ones (one stored element, broadcast) where it is read."""
    x = node.args["input"]
    if 1 not in node.outputs_read:
        return [x, None]
    ones = ctx.constant(f"{node.name}_mask", np.ones((1,), bool), "bool")
    return [x, replace(ones, shape=x.shape, strides=(0,) * x.ndim)]


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def ints(*shape):
        return lambda: torch.randint(-99, 99, shape, generator=torch.Generator().manual_seed(7))

    def mask(*shape):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(8)) > 0.5

    def copied(x, y):  # a functional copy_: export's aten.copy
        out = torch.empty_like(x)
        out.copy_(y)
        return out

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
        OpCase("unfold_windows", lambda a: (a.unfold(1, 5, 3) * 1.0, a.unfold(0, 37, 1) + 0.0, a.t().unfold(0, 2, 7),
                                            a[0, 0].unfold(0, 1, 1) * 1.0), [(37, 41)]),
        # A global pool of a channels-last activation: mean, then as_strided back to channels-last strides.
        OpCase("as_strided_after_channels_last_pool", lambda x: F.adaptive_avg_pool2d(x.permute(0, 3, 1, 2), 1),
               [(3, 7, 5, 37)]),
        OpCase("as_strided_windows_and_of_transposed", lambda x, i, m: (
            x.as_strided((13, 5, 7), (37, 1, 41), 3) * 1.0, x.t().as_strided((41, 7), (1, 41), 5),
            i.as_strided((4, 4), (1, 3), 1), m.as_strided((7,), (5,))), [(37, 41), ints(5, 7), mask(41)]),
        OpCase("diagonal_offsets", lambda x, i: (torch.diagonal(x, 3), torch.diagonal(x, -2, 0, 2) + 0.0,
                                                 x.transpose(0, 2).diagonal(2), i.diagonal(),
                                                 torch.diagonal(x[:2], 41)),
               [(3, 37, 41), ints(37, 41)]),
        OpCase("copy_broadcast_and_cast", lambda x, i, m: (copied(x, x[0]), copied(x, i), copied(i, x),
                                                           copied(m, i[0]), copied(i.int(), i)),
               [(37, 41), ints(37, 41), mask(37, 41)]),
        OpCase("dropout_in_eval", lambda x: (F.dropout(x, 0.3, training=False) * 2.0,
                                             torch.ops.aten.native_dropout.default(x, 0.3, False)),
               [(37, 41)]),
        OpCase("pixel_shuffle_and_unshuffle", lambda x, i: (F.pixel_shuffle(x, 3), F.pixel_unshuffle(x, 1),
                                                            F.pixel_unshuffle(F.pixel_shuffle(i, 2), 2)),
               [(2, 45, 5, 7), ints(1, 12, 5, 7)]),
        # tril/triu reach the graph as `where` with a folded triangle mask.
        OpCase("tril_triu", lambda x, i, m: (x.tril(), x.triu(3), i.tril(-2), m.triu(), x.transpose(1, 2).tril(1)),
               [(3, 37, 41), ints(37, 41), mask(41, 37)]),
    ]
