"""sort (both overloads: values and int64 indices, stable either way, ascending or descending, any dim) and
topk (largest or smallest), of float32, int64, int32 and bool rows of any length.

Design (sort.wgsl): rows are cut into blocks of up to BLOCK = 2048 elements, each sorted in workgroup memory
by a bitonic network (rows of up to 2048 elements take that one dispatch, several short rows to a
workgroup); longer rows are then merged pass by pass, runs doubling each pass, every element placing itself
by a binary search in the other run (log2(n / 2048) more dispatches: 5 for a 51,289-word vocabulary).
topk with k <= 1024 runs a tournament instead: each block keeps its first k, and the candidates are
re-blocked until one block remains (two dispatches for k = 50 over that vocabulary); a larger k takes the
full sort and keeps k.
Order is torch's stable sort: by key, NaN above every number, equal keys by index. torch leaves the order
of equal keys to unstable sorts and to topk; these give the stable one. topk with sorted=False returns them
sorted too (any order is allowed).
"""

from __future__ import annotations

import re

from .. import dtypes, layout, wgsl
from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register
from .row import row_params
from .softmax import MAX_ROW_DIMS

FILE = "sort.wgsl"
BLOCK = int(re.search(r"const BLOCK: u32 = (\d+)u;", wgsl.kernel_source(FILE)).group(1))
WORKGROUP = 256


def _pow2_at_least(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


class _Pass:
    """One dispatch's input (a row view and its indices, None for the op's own input) and output."""

    def __init__(self, ctx: Builder, x: Tensor, dim: int, descending: bool):
        self.ctx, self.descending = ctx, descending
        self.rows_src, self.dim = x, dim
        self.src_idx: Tensor | None = None

    def params(self, n: int, out_n: int, inner: int, **extra) -> dict:
        rp = row_params(self.rows_src, self.dim)
        return {"rows": rp["rows"], "n": n, "out_n": out_n, "inner": inner, "offset": rp["offset"],
                "stride": rp["stride"], "kept_ndim": rp["kept_ndim"], "kept_shape": rp["kept_shape"],
                "kept_strides": rp["kept_strides"], "blocks": 1, "keep": 0, "run": 0, **extra}

    def run(self, entry: str, params: dict, values: Tensor, indices: Tensor, segment: int, workgroups: int):
        dtype = self.rows_src.dtype
        spec = KernelSpec.of(FILE, f"sort[{entry}]", entry=entry, consts={"KeyT": dtypes.dtype(dtype).wgsl},
                             overrides={"SEGMENT": segment, "DESCENDING": self.descending,
                                        "FIRST": self.src_idx is None})
        self.ctx.dispatch(spec, [self.rows_src, self.src_idx or self.ctx.dummy(), values, indices], params,
                          workgroups)
        rows = params["rows"]
        self.rows_src, self.dim, self.src_idx = (layout.view(values, (rows, params["out_n"])), 1,
                                                 layout.view(indices, (rows, params["out_n"])))


def sort_rows(ctx: Builder, x: Tensor, dim: int, descending: bool, k: int | None = None) -> list[Tensor]:
    """[values, int64 indices] of x sorted along `dim`, or of its first k in that order."""
    dim = layout.normalize_dim(dim, max(x.ndim, 1))
    x = x if x.ndim else layout.view(x, (1,))
    n = x.shape[dim]
    k_out = n if k is None else k
    shape = x.shape[:dim] + (k_out,) + x.shape[dim + 1:]
    inner = 1
    for s in x.shape[dim + 1:]:
        inner *= s
    rows = x.numel // n
    values, indices = ctx.new(shape, x.dtype), ctx.new(shape, "int64")
    step = _Pass(ctx, x, dim, descending)

    def outputs(final: bool, out_n: int) -> tuple[Tensor, Tensor, int]:
        if final:
            return values, indices, inner
        return ctx.new((rows, out_n), x.dtype), ctx.new((rows, out_n), "int32"), 1

    def sort_blocks(m: int, keep: int | None, final: bool, out_n: int) -> None:
        segment = min(BLOCK, _pow2_at_least(m))
        blocks = -(-m // segment)
        v, i, at = outputs(final, out_n)
        params = step.params(m, out_n, at, blocks=blocks, keep=keep or segment)
        step.run("sort_blocks", params, v, i, segment, -(-rows * blocks // (BLOCK // segment)))

    if k is not None and k <= BLOCK // 2:  # tournament: blocks keep their first k until one block is left
        m = n
        while True:
            blocks = -(-m // min(BLOCK, _pow2_at_least(m)))
            final = blocks == 1
            sort_blocks(m, k, final, k if final else blocks * k)
            if final:
                return [values, indices]
            m = blocks * k
    sort_blocks(n, None, n <= BLOCK, k_out if n <= BLOCK else n)
    run = BLOCK
    while run < n:
        final = 2 * run >= n
        v, i, at = outputs(final, k_out if final else n)
        step.run("merge", step.params(n, k_out if final else n, at, run=run), v, i, 0, -(-rows * n // WORKGROUP))
        run *= 2
    return [values, indices]


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
    ]
