"""sort (both overloads: values and int64 indices, stable either way, ascending or descending, any dim),
topk (largest or smallest), kthvalue, median and nanmedian, of float32, int64, int32 and bool rows of any
length.

Design (sort.wgsl): rows are cut into blocks of up to BLOCK = 2048 elements, each sorted in workgroup memory
by a bitonic network (rows of up to 2048 elements take that one dispatch, several short rows to a
workgroup); longer rows are then merged pass by pass, runs doubling each pass, every element placing itself
by a binary search in the other run (log2(n / 2048) more dispatches: 5 for a 51,289-word vocabulary).
topk with k <= 1024 runs a tournament instead: each block keeps its first k, and the candidates are
re-blocked until one block remains (two dispatches for k = 50 over that vocabulary); a larger k takes the
full sort and keeps k. kthvalue keeps the k smallest and takes the last; median and nanmedian sort rows
whole, then pick one element of each by torch's NaN rules.
Order is torch's stable sort: by key, NaN above every number, equal keys by index. torch leaves the order
of equal keys to unstable sorts and to topk; these give the stable one. topk with sorted=False returns them
sorted too (any order is allowed).
"""

from __future__ import annotations

from math import prod

from ...format import dtypes
from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register
from .row import row_params
from .softmax import MAX_ROW_DIMS

FILE = "sort.wgsl"
BLOCK = wgsl.constant(wgsl.kernel_source(FILE), "BLOCK")


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class _Sorter:
    """Emits the passes of one sort or topk of `x` along `dim`, each reading what the previous one wrote (the
    first reads x itself, its indices the positions) and the last writing the outputs."""

    def __init__(self, ctx: Builder, x: Tensor, dim: int, descending: bool, k_out: int):
        self.ctx, self.descending = ctx, descending
        self.keys, self.dim, self.ids = x, dim, None  # what the next pass reads
        shape = x.shape[:dim] + (k_out,) + x.shape[dim + 1:]
        self.values, self.indices = ctx.new(shape, x.dtype), ctx.new(shape, "int64")
        self.rows = x.numel // x.shape[dim]
        self.inner = prod(x.shape[dim + 1:])

    def sort_blocks(self, m: int, keep: int | None, final: bool, out_n: int) -> None:
        """Rows of m elements in blocks, each sorted and cut to its first `keep` (None: all of it)."""
        segment = min(BLOCK, _pow2_at_least(m))
        blocks = -(-m // segment)
        self._emit("sort_blocks", segment, final, out_n, {"workgroups": -(-self.rows * blocks // (BLOCK // segment))},
                   n=m, blocks=blocks, keep=keep or segment)

    def merge(self, n: int, run: int, final: bool, out_n: int) -> None:
        """Rows of n elements made of sorted runs of `run`, merged pairwise."""
        self._emit("merge", 0, final, out_n, {"elements": self.rows * n}, n=n, run=run)  # one thread per element

    def pick(self, entry: str) -> None:
        """One element per sorted row, chosen by `entry` (one thread per row), into the outputs."""
        self._emit(entry, 0, True, 1, {"elements": self.rows}, n=self.keys.shape[self.dim])

    def _emit(self, entry: str, segment: int, final: bool, out_n: int, grid: dict, **params) -> None:
        """One pass; `grid` is ctx.dispatch's `workgroups=` or `elements=`."""
        ctx = self.ctx
        if final:
            values, indices, inner = self.values, self.indices, self.inner
        else:
            values, indices = ctx.new((self.rows, out_n), self.keys.dtype), ctx.new((self.rows, out_n), "int32")
            inner = 1
        rp = row_params(self.keys, self.dim)
        spec = KernelSpec.of(FILE, f"sort[{entry}]", entry=entry,
                             consts={"KeyT": dtypes.dtype(self.keys.dtype).wgsl},
                             overrides={"SEGMENT": segment, "DESCENDING": self.descending, "FIRST": self.ids is None})
        ctx.dispatch(spec, [self.keys, self.ids or ctx.dummy(), values, indices], {
            "rows": self.rows, "out_n": out_n, "inner": inner, "blocks": 1, "keep": 0, "run": 0,
            **{k: rp[k] for k in ("offset", "stride", "kept_ndim", "kept_shape", "kept_strides")}, **params},
            **grid)
        self.keys, self.dim = layout.view(values, (self.rows, out_n)), 1
        self.ids = layout.view(indices, (self.rows, out_n))


def sort_rows(ctx: Builder, x: Tensor, dim: int, descending: bool, k: int | None = None) -> list[Tensor]:
    """[values, int64 indices] of x sorted along `dim`, or of its first k in that order."""
    flat = layout.view(x, (1,)) if x.ndim == 0 else x
    dim = layout.normalize_dim(dim, flat.ndim)
    n = flat.shape[dim]
    sorter = _Sorter(ctx, flat, dim, descending, n if k is None else k)
    if k is not None and k <= BLOCK // 2:  # tournament: blocks keep their first k until one block is left
        m = n
        while (blocks := -(-m // min(BLOCK, _pow2_at_least(m)))) > 1:
            sorter.sort_blocks(m, k, False, blocks * k)
            m = blocks * k
        sorter.sort_blocks(m, k, True, k)
    else:
        _sort_passes(sorter, n, n if k is None else k, to_outputs=True)
    outs = [sorter.values, sorter.indices]
    return [layout.view(t, ()) for t in outs] if x.ndim == 0 else outs


def _sort_passes(sorter: _Sorter, n: int, k: int, to_outputs: bool) -> None:
    """Rows of n elements sorted whole: blocks, then merges; the last pass writes the op's outputs (each row's
    first k) when `to_outputs`, else [rows, n] scratch for a pass that picks from the sorted rows."""
    merges = [BLOCK << i for i in range(max(0, (n - 1) // BLOCK).bit_length())]
    sorter.sort_blocks(n, None, to_outputs and not merges, k if to_outputs and not merges else n)
    for run in merges:
        final = to_outputs and run == merges[-1]
        sorter.merge(n, run, final, k if final else n)


def median_rows(ctx: Builder, x: Tensor, dim: int, ignore_nan: bool) -> list[Tensor]:
    """[values, int64 indices] of the lower median along `dim` (kept, of size 1): sorted rows, then one thread
    per row picks (sort.wgsl's median entries: torch's NaN rules)."""
    flat = layout.view(x, (1,)) if x.ndim == 0 else x
    dim = layout.normalize_dim(dim, flat.ndim)
    sorter = _Sorter(ctx, flat, dim, False, 1)
    _sort_passes(sorter, flat.shape[dim], 1, to_outputs=False)
    sorter.pick("nanmedian" if ignore_nan else "median")
    return [sorter.values, sorter.indices]


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_ROW_DIMS + 1:
        return f"input has {x.ndim} dims; at most {MAX_ROW_DIMS + 1} are supported"
    if x.numel == 0 or (node.target == "aten.topk.default" and node.args["k"] == 0):
        return f"{node.target} of an empty tensor is not supported"
    if x.numel >= 2**31:
        return f"{node.target} of {x.numel:,} elements is not supported (indices are 32-bit)"
    return None


@register("aten.sort.default", "aten.sort.stable", check=_check)
def sort(ctx: Builder, node: NodeView) -> list[Tensor]:
    a = node.args
    return sort_rows(ctx, a["self"], a["dim"], bool(a["descending"]))


@register("aten.topk.default", check=_check)
def topk(ctx: Builder, node: NodeView) -> list[Tensor]:
    a = node.args
    return sort_rows(ctx, a["self"], a["dim"], bool(a["largest"]), a["k"])


@register("aten.kthvalue.default", check=_check)
def kthvalue(ctx: Builder, node: NodeView) -> list[Tensor]:
    """The k-th smallest along `dim` and its index: the last of the k smallest (NaN counts as the largest)."""
    a = node.args
    x = a["self"]
    dim = layout.normalize_dim(a["dim"], max(x.ndim, 1))
    smallest = sort_rows(ctx, x, dim, False, a["k"])
    if x.ndim == 0:
        return smallest
    picked = [layout.select(t, dim, a["k"] - 1) for t in smallest]
    return [layout.unsqueeze(t, dim) for t in picked] if a["keepdim"] else picked


@register("aten.median.default", "aten.nanmedian.default", check=_check)
def median_all(ctx: Builder, node: NodeView) -> Tensor:
    """The lower median of all elements (nanmedian: of the numbers among them)."""
    x = node.args["self"]
    values = median_rows(ctx, ctx.reshaped(x, (x.numel,)), 0, node.target.startswith("aten.nan"))[0]
    return layout.view(values, ())


@register("aten.median.dim", "aten.nanmedian.dim", check=_check)
def median(ctx: Builder, node: NodeView) -> list[Tensor]:
    """The lower median along `dim` and its index (median: NaN and the first NaN's index where the row has one;
    nanmedian: of the row's numbers, NaN where it has none)."""
    outs = median_rows(ctx, node.args["self"], node.args["dim"], node.target.startswith("aten.nan"))
    return [layout.view(t, meta.shape) for t, meta in zip(outs, node.outputs, strict=True)]  # keepdim or not


def cases() -> list[OpCase]:
    import torch

    def gen(seed):
        return torch.Generator().manual_seed(seed)

    def distinct(shape, seed=0):
        """Integers without repeats along the last dim (torch orders the equal keys of unstable sorts and topk
        its own way)."""
        return lambda: torch.argsort(torch.rand(shape, generator=gen(seed)), dim=-1) - shape[-1] // 2

    def ties(shape, seed=0):
        return lambda: torch.randint(0, 5, shape, generator=gen(seed)).float()

    def with_nan(shape, seed=0, nans=(3, 17)):
        def make():
            x = torch.randn(shape, generator=gen(seed))
            x[..., list(nans)] = float("nan")
            x[..., 5] = float("inf")
            x[..., 6] = float("-inf")
            x[..., 7] = -0.0
            x[..., 8] = 0.0
            return x
        return make

    return [
        OpCase("sort_rows_of_every_length", lambda a, b, c: (a.sort(-1), b.sort(0, descending=True), c.sort(1)),
               [(89, 7), (37, 13), (3, 2053)]),
        OpCase("sort_long_rows_merged",
               lambda x: (torch.sort(x, stable=True), torch.sort(x, descending=True, stable=True)), [(2, 9001)]),
        OpCase("sort_stable_ties_both_ways", lambda x: (torch.sort(x, dim=1, stable=True),
                                                       torch.sort(x, dim=1, descending=True, stable=True),
                                                       torch.sort(x, dim=0, stable=True)), [ties((37, 4099))]),
        OpCase("sort_middle_dim_of_transposed", lambda x: torch.sort(x.transpose(0, 2), dim=1, stable=True),
               [(5, 37, 7)]),
        OpCase("sort_nan_largest", lambda x: (torch.sort(x, stable=True), torch.sort(x, descending=True, stable=True),
                                              torch.argsort(x, stable=True)), [with_nan((5, 41))]),
        OpCase("sort_ints_and_bools", lambda i, j, m: (i.sort(-1), j.int().sort(-1, descending=True),
                                                       torch.sort(m, stable=True), torch.sort(i, stable=True)),
               [distinct((7, 3001)), distinct((41, 37), 1), lambda: torch.rand(5, 101, generator=gen(2)) > 0.5]),
        OpCase("topk_largest_and_smallest", lambda x: (x.topk(5), x.topk(3, dim=0, largest=False), x.topk(41)),
               [(37, 41)]),
        OpCase("topk_vocab_tournament", lambda x: (x.topk(50), x.topk(1024, largest=False), x.topk(1031)),
               [(2, 51289)]),
        OpCase("topk_ints_nan_and_unsorted", lambda i, x: (i.topk(7), i.int().topk(2, largest=False),
                                                           x.topk(4), x.topk(4, largest=False),
                                                           torch.topk(x, 3, sorted=False).values.sort().values),
               [distinct((37, 3001)), with_nan((5, 41), nans=(3,))]),
        OpCase("kthvalue_dims_keepdim_nan", lambda x, y, i: (torch.kthvalue(x, 7), torch.kthvalue(x, 37, 0, True),
                                                             torch.kthvalue(y, 40, -1), torch.kthvalue(i, 2, 1),
                                                             torch.kthvalue(x[0, 0], 1)),
               [(37, 41), with_nan((5, 41), nans=(3,)), distinct((13, 1031))]),
        OpCase("median_and_nanmedian_dims_nan_rows", lambda x, y, i: (
            torch.median(x, 1), torch.nanmedian(x, 0, True), torch.median(y, -1), torch.nanmedian(y, -1),
            torch.median(y), torch.nanmedian(y), torch.median(i, 0), torch.median(x[0, 0], 0)),
            [(37, 41), with_nan((5, 41), nans=(3, 17, 20)), distinct((13, 1031))]),
        # An all-NaN row's nanmedian index is whatever torch's partition leaves: only its value is compared.
        OpCase("median_long_rows_all_nan_row", lambda x: (torch.median(x, -1), torch.nanmedian(x, -1).values,
                                                          torch.nanmedian(x, -1).indices[:2], torch.nanmedian(x)),
               [lambda: torch.cat([torch.randn(2, 4099, generator=gen(4)), torch.full((1, 4099), float("nan"))])]),
    ]
