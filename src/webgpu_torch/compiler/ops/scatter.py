"""Scatters: writes into a copy of `self` — scatter (src, value), scatter_add, scatter_reduce, index_put (and
so index_add, index_copy, index_fill and `x[i] = v`, which export as index_put), masked_scatter, slice_scatter.

Every result is deterministic. WGSL has no float atomics, and a push with them would add in whatever order
threads arrive; so a scatter is described once (`Sources`: source positions, the output element each reaches,
its value) and runs by one of two routes that both fold an output's values in source order (sums add in CPU
torch's order; without a reduction the last source wins, as on CPU):
  pull       (scatter.wgsl, one dispatch) each output element scans the K source positions that may reach it
             — K is the index's extent along the scatter dim, or the number of index_put positions — and
             folds those whose indices name it. No atomics. Costs K index reads per output element: what
             models mostly do (one-hot labels, KV-cache updates at a few positions, top-k masks) has small K.
  segmented  (scatter_segmented.wgsl, 7 dispatches) a counting sort groups the sources by the output they
             reach (integer atomics count and place them; prefix_sum.py makes the segment starts), then each
             output sorts its own segment by source position (insertion sort) and folds it. O(sources +
             outputs), for long scans: a permutation scattered across a row, max_unpool's flat index_put, an
             index_add of many rows (MoE token combines). A segment of many sources for a sum sorts
             quadratically in one thread; a scatter with few outputs takes the pull instead, whose scans are
             then the cheaper side.
The rule (`_route`) takes the pull while out × K ≤ PULL_FACTOR · (out + sources); compile(scatter=...) forces
one. Rejected: a radix sort of (target, source) pairs, which bounds every segment's sort at the price of
several passes per digit.

Indices are checked on the device only as far as the kernels go: one outside its dim reaches nothing (the
structure where a later device-side error flag is raised). Negative indices count from the end for index_put
(Python indexing), and are out of range for scatter, where torch raises.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, replace
from math import prod

from ...format import dtypes
from ...format.errors import InputError
from ...format.program import Tensor, contiguous_strides
from ...format.symbolic import Expr, hint
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .elementwise import copy
from .indexing import scatter_in_place, word_of
from .prefix_sum import exclusive_sum
from .registry import NodeView, OpCase, register, register_option
from .views import as_strided_reach

FILE = "scatter.wgsl"
SEGMENTED = "scatter_segmented.wgsl"
MAX_DIMS = 8
MAX_INDICES = 3
PULL_FACTOR = 32
REDUCTIONS = {name.lower(): int(code) for name, code in
              re.findall(r"const REDUCE_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}
# torch's names of the reductions (scatter_reduce.two; the deprecated scatter.reduce overloads).
REDUCE_NAMES = {"sum": "sum", "prod": "prod", "mean": "mean", "amax": "max", "amin": "min", "add": "sum",
                "multiply": "prod"}
SCATTER = register_option("scatter", "auto", "pull", "segmented")


@dataclass(frozen=True)
class Sources:
    """What a scatter folds into `self`: source positions s over `shape` (row-major). Along each source dim e
    with out_dims[e] set, a source sits at its own coordinate of that output dim; the one dim with None (the
    scan dim) is what the index tensors replace: index t (a view over `shape`) names the coordinate along
    output dim indices[t][1]. `value` is a view over `shape`, or a scalar's word."""

    shape: tuple
    out_dims: tuple
    indices: tuple[tuple[Tensor, int], ...]
    value: Tensor | int
    wrap: bool  # negative indices count from the end

    @property
    def scan_dim(self) -> int:
        return self.out_dims.index(None)


def scatter_into(ctx: Builder, base: Tensor, sources: Sources, reduce: str, include_self: bool = True) -> Tensor:
    """A copy of `base` (any view) with the sources folded in, by the cheaper route (or the forced one)."""
    if _route(ctx, base, sources) == "pull":
        return _pull_sources(ctx, base, sources, reduce, include_self)
    return segmented(ctx, base, sources, reduce, include_self)


def _route(ctx: Builder, base: Tensor, sources: Sources) -> str:
    forced = SCATTER.of(ctx.options)
    if forced != "auto":
        return forced
    scan = sources.shape[sources.scan_dim]
    outputs, count = base.numel, prod(sources.shape)
    if any(isinstance(v, Expr) for v in (scan, outputs, count)):  # dynamic sizes: decide at their hints
        scan, outputs, count = hint(scan), hint(outputs), hint(count)
    return "pull" if outputs * scan <= PULL_FACTOR * (outputs + count) else "segmented"


def _over_output(t: Tensor, sources: Sources, shape: tuple) -> tuple[Tensor, int]:
    """A view over the sources as one over the output's `shape` (stride 0 along dims no source dim runs
    along), and its stride along the scan dim."""
    strides = [0] * len(shape)
    for e, d in enumerate(sources.out_dims):
        if d is not None:
            strides[d] = t.strides[e]
    return replace(t, shape=shape, strides=tuple(strides)), t.strides[sources.scan_dim]


def _pull_sources(ctx: Builder, base: Tensor, sources: Sources, reduce: str, include_self: bool) -> Tensor:
    indices = [(*_over_output(t, sources, base.shape), d) for t, d in sources.indices]
    value = sources.value if isinstance(sources.value, int) else _over_output(sources.value, sources, base.shape)
    bounds = list(base.shape)
    for e, d in enumerate(sources.out_dims):
        if d is not None:
            bounds[d] = sources.shape[e]
    return pull(ctx, base, indices, sources.shape[sources.scan_dim], value, reduce=reduce,
                include_self=include_self, wrap=sources.wrap, bounds=bounds)


def _fold_overrides(reduce: str, include_self: bool, dtype: str, wrap: bool) -> dict:
    return {"REDUCE": REDUCTIONS[reduce], "INCLUDE_SELF": include_self, "WRAP_NEGATIVE": wrap,
            "FLOOR_MEAN": dtypes.category(dtype) == 1, "SATURATE": dtype == "bool"}


def pull(ctx: Builder, base: Tensor, indices: list[tuple[Tensor, int, int]], scan, source: tuple[Tensor, int] | int,
         *, reduce: str = "none", include_self: bool = True, wrap: bool = False, bounds=None,
         mask: bool = False, ranked: bool = False) -> Tensor:
    """The pull route (scatter.wgsl): `indices` holds (index view over base's shape, its stride per scan
    position, the output dim it names) per index tensor; `source` is (value view over base's shape, its
    stride per scan position) or a scalar's word."""
    shape = base.shape
    out = ctx.new(shape, base.dtype)
    views = [t for t, _, _ in indices]
    slots = views + [views[0]] * (MAX_INDICES - len(views))
    pad = [0] * (4 - len(indices))
    divs = contiguous_strides(shape)
    src, src_scan = source if isinstance(source, tuple) else (base, 0)
    if not (ctx.holds(views[0], scan) or ctx.holds(src, scan)):  # the kernel bounds its scan by them
        raise InputError(f"an index and a source broadcast along the scattered dim ({scan} positions over "
                         "buffers shorter than that): pass a materialized index (.contiguous())")
    params = {"numel": out.numel, "ndim": len(shape), "scan": scan, "base_offset": base.offset,
              "src_offset": src.offset, "src_scan_stride": src_scan, "src_count": src.numel,
              "value": 0 if isinstance(source, tuple) else source,
              "idx_offsets": [t.offset for t in slots] + [0], "idx_scan_strides": [s for _, s, _ in indices] + pad,
              "coord_divs": [divs[d] for _, _, d in indices] + pad,
              "coord_sizes": [shape[d] for _, _, d in indices] + pad,
              "shape": shape, "bounds": shape if bounds is None else bounds, "base_strides": base.strides,
              "src_strides": src.strides, **{f"idx{k}_strides": t.strides for k, t in enumerate(slots)}}
    overrides = {**_fold_overrides(reduce, include_self, base.dtype, wrap), "NUM_INDICES": len(indices),
                 "HAS_SRC": isinstance(source, tuple), "MASK": mask, "RANKED": ranked}
    name = f"scatter[{reduce}{',mask' * mask}{',ranked' * ranked}]"
    spec = KernelSpec.of(FILE, name, consts={"T": dtypes.dtype(base.dtype).wgsl}, overrides=overrides)
    ctx.dispatch(spec, [base, src, *slots, out], params, elements=out.numel)
    return out


def segmented(ctx: Builder, base: Tensor, sources: Sources, reduce: str, include_self: bool = True) -> Tensor:
    """The segmented route (scatter_segmented.wgsl): clear, count, prefix sum, place, fold."""
    shape, count = base.shape, prod(sources.shape)
    out = ctx.new(shape, base.dtype)
    counts = ctx.new((out.numel + 1,), "int32")
    order = ctx.new((count,), "int32")
    divs = contiguous_strides(shape)
    views = [t for t, _ in sources.indices]
    slots = views + [views[0]] * (MAX_INDICES - len(views))
    pad = [0] * (4 - len(views))
    has_src = not isinstance(sources.value, int)
    src = sources.value if has_src else base
    params = {"sources": count, "outputs": out.numel, "ndim": len(sources.shape), "out_ndim": len(shape),
              "base_offset": base.offset, "src_offset": src.offset, "value": 0 if has_src else sources.value,
              "idx_offsets": [t.offset for t in slots] + [0],
              "index_out_strides": [divs[d] for _, d in sources.indices] + pad,
              "index_sizes": [shape[d] for _, d in sources.indices] + pad, "shape": sources.shape,
              "out_strides": [0 if d is None else divs[d] for d in sources.out_dims],
              "src_strides": src.strides if has_src else (), "out_shape": shape, "base_strides": base.strides,
              **{f"idx{k}_strides": t.strides for k, t in enumerate(slots)}}
    overrides = {**_fold_overrides(reduce, include_self, base.dtype, sources.wrap), "NUM_INDICES": len(views),
                 "HAS_SRC": has_src}
    consts = {"T": dtypes.dtype(base.dtype).wgsl}

    def run(entry: str, starts: Tensor, threads) -> None:
        spec = KernelSpec.of(SEGMENTED, f"scatter_segmented[{entry},{reduce}]", entry=entry, consts=consts,
                             overrides=overrides)
        ctx.dispatch(spec, [base, src, *slots, out, counts, starts, order], params, elements=threads)

    placeholder = ctx.dummy()  # `starts` before there are any: bound, never read
    run("clear", placeholder, out.numel + 1)
    run("count", placeholder, count)
    starts = exclusive_sum(ctx, counts)
    run("place", starts, count)
    run("fold", starts, out.numel)
    return out


# -- checks ----------------------------------------------------------------------------------------------------

def _check_scatter(node: NodeView) -> str | None:
    x, index = node.args["self"], node.args["index"]
    if not 1 <= x.ndim <= MAX_DIMS:
        return f"input has {x.ndim} dims; 1 to {MAX_DIMS} are supported"
    if index.dtype not in ("int32", "int64"):
        return f"index must be int32 or int64, got {index.dtype}"
    if index.ndim != x.ndim:
        return f"index has {index.ndim} dims and self {x.ndim}; scatter needs as many"
    if node.target == "aten.scatter_reduce.two" and node.args["reduce"] not in REDUCE_NAMES:
        return f"scatter_reduce with reduce={node.args['reduce']!r} is not supported"
    return None


def _check_index_put(node: NodeView) -> str | None:
    x, given = node.args["self"], [t for t in node.args["indices"] if t is not None]
    if not 1 <= x.ndim <= MAX_DIMS:
        return f"input has {x.ndim} dims; 1 to {MAX_DIMS} are supported"
    if not given:
        return "index_put without an index tensor is not supported"
    masks = [t for t in given if t.dtype == "bool"]
    if masks:
        if len(given) > 1:
            return "index_put with a bool mask among other index tensors is not supported"
        return _check_mask_values(node)
    if any(t.dtype not in ("int32", "int64") for t in given):
        return f"index tensors must be int32, int64 or a bool mask, got {[t.dtype for t in given]}"
    if len(given) > MAX_INDICES:
        return f"{len(given)} index tensors; at most {MAX_INDICES} are supported"
    return None


def _check_mask_values(node: NodeView) -> str | None:
    """A bool mask selects a number of elements known only on the device: the values must broadcast over them
    (one value, or one per position of the dims after the mask), not list one per selected element."""
    x, values = node.args["self"], node.args["values"]
    first = next(i for i, t in enumerate(node.args["indices"]) if t is not None)
    mask = node.args["indices"][first]
    if tuple(mask.shape) != tuple(x.shape[first:first + mask.ndim]):
        return f"a bool mask of shape {list(mask.shape)} over dims {first}.. of {list(x.shape)}"
    rank = first + 1 + x.ndim - first - mask.ndim  # dims of the selection torch broadcasts values to
    count_dim = values.ndim - rank + first
    if values.ndim > rank or (count_dim >= 0 and values.shape[count_dim] != 1):
        return (f"index_put by a bool mask with values of shape {list(values.shape)}: one value per selected "
                "element is a count that depends on the data (only values broadcast over the selection are supported)")
    return None


# -- lowerings -------------------------------------------------------------------------------------------------

def _scatter(ctx: Builder, node: NodeView, reduce: str, include_self: bool = True) -> Tensor:
    """Each element of the index is a source: it sits at its own coordinates but along `dim`, where its
    value names the coordinate; src is read at the index's coordinates (it may be larger)."""
    x, index, src = node.args["self"], node.args["index"], node.args.get("src")
    dim = layout.normalize_dim(node.args["dim"], x.ndim)
    value = word_of(node.args["value"], x.dtype) if src is None else replace(src, shape=index.shape)
    out_dims = tuple(None if d == dim else d for d in range(x.ndim))
    sources = Sources(tuple(index.shape), out_dims, ((index, dim),), value, wrap=False)
    return scatter_into(ctx, x, sources, reduce, include_self)


@register("aten.scatter.src", "aten.scatter.value", check=_check_scatter, dynamic=True)
def scatter(ctx: Builder, node: NodeView) -> Tensor:
    return _scatter(ctx, node, "none")


@register("aten.scatter.reduce", "aten.scatter.value_reduce", check=_check_scatter, dynamic=True)
def scatter_reduce_legacy(ctx: Builder, node: NodeView) -> Tensor:
    return _scatter(ctx, node, REDUCE_NAMES[node.args["reduce"]])


@register("aten.scatter_add.default", check=_check_scatter, dynamic=True)
def scatter_add(ctx: Builder, node: NodeView) -> Tensor:
    return _scatter(ctx, node, "sum")


@register("aten.scatter_reduce.two", check=_check_scatter, dynamic=True)
def scatter_reduce(ctx: Builder, node: NodeView) -> Tensor:
    return _scatter(ctx, node, REDUCE_NAMES[node.args["reduce"]], node.args["include_self"])


def _check_index_reduce(node: NodeView) -> str | None:
    x, index = node.args["self"], node.args["index"]
    if x.ndim > MAX_DIMS:
        return f"input has {x.ndim} dims; at most {MAX_DIMS} are supported"
    if index.dtype not in ("int32", "int64") or index.ndim > 1:
        return f"index must be a 1-d int32 or int64 tensor, got {index.dtype}{list(index.shape)}"
    return None


@register("aten.index_reduce.default", check=_check_index_reduce)
def index_reduce(ctx: Builder, node: NodeView) -> Tensor:
    """Slice k of `source` along dim folds into slice index[k] of self: a scatter_reduce whose index is the 1-d
    index broadcast over source's shape (stride 0 off dim). A 0-d self (and source) is one of shape (1,)."""
    a = node.args
    x, index, source = (t if t.ndim else layout.view(t, (1,)) for t in (a["self"], a["index"], a["source"]))
    dim = layout.normalize_dim(a["dim"], x.ndim)
    strides = tuple(index.strides[0] if d == dim else 0 for d in range(x.ndim))
    over = replace(index, shape=source.shape, strides=strides)
    out_dims = tuple(None if d == dim else d for d in range(x.ndim))
    sources = Sources(tuple(source.shape), out_dims, ((over, dim),), source, wrap=False)
    out = scatter_into(ctx, x, sources, REDUCE_NAMES[a["reduce"]], a["include_self"])
    return layout.view(out, a["self"].shape)


def _check_put(node: NodeView) -> str | None:
    index = node.args["index"]
    if index.dtype not in ("int32", "int64"):
        return f"index must be int32 or int64, got {index.dtype}"
    return None


@register("aten.put.default", check=_check_put)
def put(ctx: Builder, node: NodeView) -> Tensor:
    """self.flatten()[index] = source (or += with accumulate), in row-major positions (negative ones count
    from the end): index_put's scan over the flattened self, index and source."""
    a = node.args
    x, index, source = a["self"], a["index"], a["source"]
    if index.numel == 0:
        return copy(ctx, x)
    flat = (x.numel,)
    line = ctx.reshaped(index, (index.numel,))
    sources = Sources((index.numel,), (None,), ((line, 0),), ctx.reshaped(source, (source.numel,)), wrap=True)
    out = scatter_into(ctx, ctx.reshaped(x, flat), sources, "sum" if a["accumulate"] else "none")
    return layout.view(out, x.shape)


@register("aten.index_put.default", check=_check_index_put, dynamic=True)
def index_put(ctx: Builder, node: NodeView) -> Tensor:
    """self[indices] = values (or += with accumulate). Integer index tensors broadcast together to B and scan
    B's positions in order; adjacent ones replace their dims in place in the selection's shape, separated ones
    move B to the front (torch's rule). A bool mask is an elementwise choice (scan of one). A state's update
    (node.in_place) without accumulate writes the values over the state itself, one thread per value
    (indexing.scatter_in_place): a KV cache's new row costs the row, not the cache."""
    x, given, values = node.args["self"], node.args["indices"], node.args["values"]
    reduce = "sum" if node.args["accumulate"] else "none"
    values = replace(values, dtype=x.dtype) if {values.dtype, x.dtype} == {"int32", "int64"} else values
    first = next(i for i, t in enumerate(given) if t is not None)
    if given[first].dtype == "bool":
        return _index_put_mask(ctx, x, first, given[first], values, reduce)
    dims = [i for i, t in enumerate(given) if t is not None]
    tensors = [given[d] for d in dims]
    batch = _broadcast_shape([t.shape for t in tensors])
    count = prod(batch)
    if count == 0:
        return x if node.in_place is not None else copy(ctx, x)
    adjacent = dims == list(range(first, first + len(dims)))
    rest = [d for d in range(x.ndim) if d not in dims]
    lead = first if adjacent else 0  # where the scan dim sits in the selection's shape
    outer = tuple(x.shape[d] for d in rest)
    shape = outer[:lead] + (count,) + outer[lead:]
    flat = ctx.reshaped(layout.broadcast_to(values, outer[:lead] + batch + outer[lead:]), shape)
    indices = []
    for d, t in zip(dims, tensors, strict=True):
        line = ctx.reshaped(layout.broadcast_to(t, batch), (count,))
        strides = (0,) * lead + line.strides + (0,) * (len(outer) - lead)
        indices.append((replace(line, shape=shape, strides=strides), d))
    out_dims = (*rest[:lead], None, *rest[lead:])
    if node.in_place is not None and reduce == "none":
        direct = [0 if d is None else x.strides[d] for d in out_dims]
        plural = "s" * (len(dims) > 1)
        where = f"dim{plural} {', '.join(map(str, dims))} of size{plural} {', '.join(str(x.shape[d]) for d in dims)}"
        return scatter_in_place(ctx, node.in_place, flat, direct, [(t, x.strides[d], x.shape[d]) for t, d in indices],
                                check=ctx.check(f"index out of range for {where}"))
    return scatter_into(ctx, x, Sources(shape, out_dims, tuple(indices), flat, wrap=True), reduce)


def _broadcast_shape(shapes: list[tuple]) -> tuple:
    """The shape index tensors broadcast to (export has checked they do; sizes may be dynamic)."""
    ndim = max(len(s) for s in shapes)
    padded = [(1,) * (ndim - len(s)) + tuple(s) for s in shapes]
    return tuple(next((n for n in sizes if n != 1), 1) for sizes in zip(*padded, strict=True))


def _index_put_mask(ctx: Builder, x: Tensor, first: int, mask: Tensor, values: Tensor, reduce: str) -> Tensor:
    """x[mask] = values over dims first .. first + mask.ndim: values broadcast over the selected elements, so
    each output is self or self (+) the value at its own position: a scan of one."""
    m = mask.ndim
    selection = x.shape[:first] + (1,) + x.shape[first + m:]
    v = layout.broadcast_to(values, selection)
    v = replace(v, shape=x.shape[:first] + (1,) * m + x.shape[first + m:],
                strides=v.strides[:first] + (0,) * m + v.strides[first + 1:])
    v = layout.broadcast_to(v, x.shape)
    over = replace(mask, shape=x.shape, strides=(0,) * first + mask.strides + (0,) * (x.ndim - first - m))
    return pull(ctx, x, [(over, 0, first)], 1, (v, 0), reduce=reduce, mask=True)


def _check_masked_scatter(node: NodeView) -> str | None:
    x = node.args["self"]
    if not 1 <= x.ndim <= MAX_DIMS:
        return f"input has {x.ndim} dims; 1 to {MAX_DIMS} are supported"
    return None


@register("aten.masked_scatter.default", check=_check_masked_scatter)
def masked_scatter(ctx: Builder, node: NodeView) -> Tensor:
    """The k-th true element of the mask (row-major over self's shape) takes the k-th source value: each
    element's rank among the true ones is an exclusive prefix sum of the mask (prefix_sum.py), then one pull
    of one position per element. A mask with more true elements than the source has values leaves the extra
    elements as they are."""
    x, mask, source = node.args["self"], node.args["mask"], node.args["source"]
    flat = ctx.contiguous(ctx.reshaped(layout.broadcast_to(mask, x.shape), (x.numel,)))
    over = [(layout.view(t, x.shape), 0, 0) for t in (flat, exclusive_sum(ctx, flat))]
    values = ctx.reshaped(source, (source.numel,))
    return pull(ctx, x, over, 1, (values, values.strides[0]), mask=True, ranked=True)


@register("aten.slice_scatter.default", dynamic=True)
def slice_scatter(ctx: Builder, node: NodeView) -> Tensor:
    """self with a strided slice replaced by src: a copy of self, then src copied over its slice."""
    a = node.args
    out = copy(ctx, a["self"])
    copy(ctx, a["src"], out=layout.slice_(out, a["dim"], a["start"], a["end"], a["step"]))
    return out


@register("aten.diagonal_scatter.default")
def diagonal_scatter(ctx: Builder, node: NodeView) -> Tensor:
    """self with a diagonal replaced by src: a copy of self, then src copied over its diagonal view."""
    a = node.args
    out = copy(ctx, a["self"])
    copy(ctx, a["src"], out=layout.diagonal(out, a["offset"], a["dim1"], a["dim2"]))
    return out


@register("aten.as_strided_scatter.default", check=as_strided_reach)
def as_strided_scatter(ctx: Builder, node: NodeView) -> Tensor:
    """self with an as_strided view of its storage replaced by src: a copy of self in torch's memory order
    (as_strided addresses that storage), src copied over the view, the copy seen in self's dim order."""
    a = node.args
    order = a["self_storage_order"]
    storage = copy(ctx, layout.permute(a["self"], order))
    view = replace(storage, shape=tuple(a["size"]), strides=tuple(a["stride"]),
                   offset=storage.offset + (a["storage_offset"] or 0))
    copy(ctx, a["src"], out=view)
    return layout.permute(storage, [order.index(d) for d in range(len(order))])


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def ints(shape, lo, hi, seed=0):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

    def perm(n, rows, seed=0):
        g = torch.Generator().manual_seed(seed)
        return lambda: torch.stack([torch.randperm(n, generator=g) for _ in range(rows)])

    def distinct(shape, n, shift=0, seed=0):
        """Distinct positions (no two index_put writes collide), shifted down to include negative ones."""
        g = torch.Generator().manual_seed(seed)
        return lambda: torch.randperm(n, generator=g)[:prod(shape)].view(shape) - shift

    def mask(shape, seed=0):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5

    def put(x, indices, v, accumulate=False):  # x[indices] = v (or +=), with None for a full slice
        return torch.ops.aten.index_put.default(x, list(indices), v, accumulate)

    def legacy_reduce(x, i, s):  # the scatter.reduce overloads torch deprecates (with a warning) but still has
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return x.scatter(1, i, s, reduce="add"), x.scatter(1, i, 2.0, reduce="multiply")

    def index_reduce(x, dim, i, s, reduce, include_self=True):  # torch warns that index_reduce is in beta
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return x.index_reduce(dim, i, s, reduce, include_self=include_self)

    cases = [
        # scatter without a reduction: distinct targets per row (torch leaves duplicates' order undefined).
        OpCase("scatter_src_permutation_rows", lambda x, i, s: x.scatter(1, i[:, :29], s),
               [(37, 41), perm(41, 37), (37, 29)]),
        OpCase("scatter_value_one_hot", lambda x, i: (x.scatter(1, i, 1.0), torch.zeros(37, 257).scatter(1, i, 1.0)),
               [(37, 257), ints((37, 1), 0, 257)]),
        OpCase("scatter_dim0_index_smaller_than_self", lambda x, i, s: x.scatter(0, i, s),
               [(41, 7, 3), perm(41, 1, seed=2)().t()[:23, :, None].expand(23, 5, 2).clone, (29, 6, 3)]),
        OpCase("scatter_int_and_bool", lambda x, i, s, m: (x.scatter(1, i, s), m.scatter(1, i, True),
                                                            x.scatter(1, i[:1], -3)),
               [ints((5, 37), -9, 9), perm(37, 5), ints((5, 37), -9, 9, seed=1), mask((5, 37))]),
        # Duplicates are the point of the reductions: 257 targets, 13 of them hit again and again.
        OpCase("scatter_add_duplicates", lambda x, i, s: (x.scatter_add(1, i, s), x.t().scatter_add(0, i.t(), s.t())),
               [(37, 13), ints((37, 257), 0, 13), (37, 257)]),
        OpCase("scatter_add_int_bool", lambda x, i, m: (x.scatter_add(0, i, x[:5]), m.scatter_add(0, i, m[:5])),
               [ints((41, 3), -9, 9), ints((5, 3), 0, 41), mask((41, 3))]),
        OpCase("scatter_legacy_reduce", legacy_reduce, [(7, 13), ints((7, 41), 0, 13), (7, 41)]),
        OpCase("scatter_reduce_float", lambda x, i, s: tuple(
            x.scatter_reduce(1, i, s, r, include_self=inc) for r in ("sum", "prod", "mean", "amax", "amin")
            for inc in (True, False)), [(7, 13), ints((7, 41), 0, 13), lambda: torch.rand(7, 41) + 0.5]),
        OpCase("scatter_reduce_int", lambda x, i, s: tuple(
            x.scatter_reduce(1, i, s, r, include_self=inc) for r in ("sum", "prod", "mean", "amax", "amin")
            for inc in (True, False)), [ints((7, 13), -9, 9), ints((7, 41), 0, 13), ints((7, 41), -3, 4, seed=1)]),
        OpCase("scatter_reduce_bool", lambda m, i, n: tuple(m.scatter_reduce(0, i, n, r, include_self=inc)
                                                            for r in ("sum", "prod", "amax", "amin")
                                                            for inc in (True, False)),
               [mask((13,)), ints((41,), 0, 13), mask((41,), seed=1)]),
        OpCase("index_put_rows_and_accumulate", lambda x, d, i, v: (put(x, (d,), v[:7]), put(x, (i,), v, True)),
               [(37, 5), distinct((7,), 37, shift=20), ints((89,), -37, 37), (89, 5)]),
        OpCase("index_put_broadcast_indices_adjacent", lambda x, i, j, v: (put(x, (None, i, j), v), put(
            x, (None, i, j), v, True)), [(3, 37, 41), distinct((5, 1), 37), distinct((1, 7), 41), (3, 5, 7)]),
        OpCase("index_put_separated_indices_scalar_value", lambda x, i, j, v: put(x, (i, None, j), v, True),
               [(13, 5, 11), ints((4, 3), 0, 13), ints((3,), 0, 11), lambda: torch.tensor(2.5)]),
        OpCase("index_put_three_indices_int", lambda x, i, j, k, v: put(x, (i, j, k), v, True),
               [ints((7, 11, 13), -5, 5), ints((41,), 0, 7), ints((41,), 0, 11, 1), ints((41,), 0, 13, 2),
                ints((41,), -9, 9, 3)]),
        OpCase("index_put_bool_mask", lambda x, m, n, v: (put(x, (m,), v), put(x, (None, n), torch.tensor(-1.0), True),
                                                          put(m.int(), (m,), torch.tensor(7, dtype=torch.int32)),
                                                          put(m, (m,), ~m[:1, 0])),
               [(37, 41), mask((37, 41)), mask((41,), 1), lambda: torch.tensor(3.0)]),
        OpCase("index_add_copy_fill", lambda x, i, v, d, w: (x.index_add(0, i, v), x.index_copy(1, d, w),
                                                              x.index_fill(1, i[:3], -2.0)),
               [(37, 41), ints((89,), 0, 37), (89, 41), distinct((5,), 41), (37, 5)]),
        OpCase("setitem_kv_cache_positions", lambda cache, pos, new: put(cache, (None, None, pos), new),
               [(2, 3, 37, 16), lambda: torch.tensor([5, 6, 7]), (2, 3, 3, 16)]),
        # A vision-language model's merge: image features into the positions of image tokens.
        OpCase("masked_scatter_token_embeddings", lambda e, ids, f: e.masked_scatter((ids == 3)[..., None], f),
               [(2, 37, 16), ints((2, 37), 0, 5), (89, 16)]),
        OpCase("masked_scatter_broadcast_int_bool_many_blocks", lambda x, m, i: (
            x.masked_scatter(m[:1], x.t().flip(0)), i.masked_scatter(m, i * 3),
            m.masked_scatter(~m, m[:, :1].expand(41, 1031))),
            [(41, 1031), mask((41, 1031)), ints((41, 1031), -99, 99)]),
        OpCase("slice_scatter_step_and_select_scatter", lambda x, s, t: (
            torch.slice_scatter(x, s, 1, 2, 39, 3), torch.select_scatter(x, t, 0, -2)), [(37, 41), (37, 13), (41,)]),
        OpCase("index_reduce_every_reduction", lambda x, i, s: tuple(
            index_reduce(x, 1, i, s, r, inc) for r in ("prod", "mean", "amax", "amin") for inc in (True, False)),
            [(7, 13), ints((41,), 0, 13), lambda: torch.rand(7, 41) + 0.5]),
        OpCase("index_reduce_int_dim0_and_0d", lambda x, i, s: (
            index_reduce(x, 0, i, s, "mean"), index_reduce(x, 0, i, s, "amax", False),
            index_reduce(x[0, 0], 0, i[:1] * 0, s[0, 0], "prod")),
            [ints((13, 5), -9, 9), ints((41,), 0, 13), ints((41, 5), -9, 9, 1)]),
        OpCase("put_flat_positions", lambda x, d, i, v: (x.put(d, v.flatten()[:7]), x.t().put(i, v, accumulate=True)),
               [(37, 5), distinct((7,), 185, shift=90), ints((3, 29), -185, 185), (3, 29)]),
        OpCase("as_strided_scatter_of_contiguous_and_transposed", lambda x, s: (
            torch.as_strided_scatter(x, s, (5, 7), (11, 1), 3),
            torch.as_strided_scatter(x.t(), s.t(), (7, 5), (1, 13), 2)), [(13, 11), (5, 7)]),
        OpCase("diagonal_scatter_offsets", lambda x, s, t: (
            torch.diagonal_scatter(x, s, 2), torch.diagonal_scatter(x.transpose(0, 1), t, -3, 1, 0)),
            [(37, 41), (37,), (34,)]),
        # Long scans, which the rule sends the segmented way: max_unpool's flat index_put, an MoE combine.
        OpCase("unpool_and_index_add_many_rows", lambda x, t, w, v: (
            F.max_unpool2d(*F.max_pool2d(x, 2, return_indices=True), 2, output_size=x.shape[-2:]),
            torch.zeros(89, 16).index_add(0, t.flatten(), v * w.flatten()[:, None])),
            [(2, 3, 37, 41), ints((1031, 2), 0, 89), lambda: torch.rand(1031, 2), (2062, 16)]),
    ]
    # The same scatters forced the segmented way (the pull is the rule's choice for most of them).
    routed = [c for c in cases if c.name.startswith(("scatter_", "index_", "setitem", "unpool"))
              and "bool_mask" not in c.name]
    return cases + [replace(c, name=f"{c.name}_segmented", kwargs={"scatter": "segmented"}) for c in routed]
