"""Reductions over any set of dims: sum, mean, amax, amin, argmax, argmin, any, all, the 2-norm.

The input is read in place: its dims are split into kept and reduced ones, each with its own strides, so
reducing a transposed or sliced view needs no copy. The number of threads per output row follows the row's
length (a power of two up to 256), so a mean over 7×7 and an argmax over a 51,289-word vocabulary both keep
a workgroup busy. Integer results accumulate in i32 (exact: a sum of a mask counts it), float ones in f32.
"""

from __future__ import annotations

import re

from .. import dtypes, layout, wgsl
from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register
from .row import row_threads

FILE = "reduce.wgsl"
MAX_DIMS = 8
WORKGROUP = 256
# Reductions whose kernel gives the right value over an empty dim: its accumulator's start, 0 (false for any).
EMPTY_OK = ("aten.sum.", "aten.any.", "aten.linalg_vector_norm.")
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def _dims(dim, ndim: int) -> list[int]:
    if dim is None or (isinstance(dim, list) and not dim):
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else dim
    return sorted({layout.normalize_dim(d, ndim) for d in dims})


def reduce(ctx: Builder, op: str, x: Tensor, dims: list[int], out_shape: tuple[int, ...],
           out_dtype: str = "float32", out: Tensor | None = None) -> Tensor:
    """`op` over `dims` of `x`; the result is `out` or a fresh contiguous tensor of `out_shape` (keepdim or
    not)."""
    kept = [d for d in range(x.ndim) if d not in dims]
    reduce_size = 1
    for d in dims:
        reduce_size *= x.shape[d]
    out = out or ctx.new(out_shape, out_dtype)
    row = row_threads(reduce_size)
    params = {
        "num_out": out.numel, "reduce_size": reduce_size, "kept_ndim": len(kept), "red_ndim": len(dims),
        "offset": x.offset,
        "kept_shape": [x.shape[d] for d in kept], "kept_strides": [x.strides[d] for d in kept],
        "red_shape": [x.shape[d] for d in dims], "red_strides": [x.strides[d] for d in dims],
    }
    acc = "u32" if x.dtype == out_dtype == "bool" else "f32" if dtypes.category(out_dtype) == 2 else "i32"
    consts = {"InT": dtypes.dtype(x.dtype).wgsl, "AccT": "f32" if op.startswith("arg") else acc,
              "OutT": dtypes.dtype(out_dtype).wgsl}
    spec = KernelSpec.of(FILE, f"reduce[{op}]", consts=consts,
                         overrides={"OP": OP_CODES[op], "ROW": row})
    rows_per_wg = WORKGROUP // row
    ctx.dispatch(spec, [x, out], params, -(-out.numel // rows_per_wg))
    return out


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_DIMS:
        return f"input has {x.ndim} dims; at most {MAX_DIMS} are supported"
    if node.target.startswith(("aten.arg", "aten.amax", "aten.amin")) and x.dtype != "float32":
        return f"{node.target} takes float32 input, got {x.dtype}"
    if node.target == "aten.linalg_vector_norm.default" and (node.args["ord"] != 2 or x.dtype != "float32"):
        return f"vector norm of ord {node.args['ord']} over {x.dtype} is not supported (ord 2 of float32 only)"
    if x.numel == 0 and not node.target.startswith(EMPTY_OK):
        return "reducing over an empty dim is supported for sum, any and the 2-norm only"
    return None


def _lower(op: str, dim_arg: str | None):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        x = node.args["self"]
        if x.ndim == 0:  # a 0-d tensor reduces as one element along dim 0 (or -1), torch's rule
            x = layout.unsqueeze(x, 0)
        dims = _dims(node.args.get(dim_arg) if dim_arg else None, x.ndim)
        return reduce(ctx, op, x, dims, node.out.shape, node.out.dtype)

    return lower


for _target, _op, _dim in [
    ("aten.sum.dim_IntList", "sum", "dim"),
    ("aten.sum.default", "sum", None),
    ("aten.mean.dim", "mean", "dim"),
    ("aten.mean.default", "mean", None),
    ("aten.amax.default", "max", "dim"),
    ("aten.amin.default", "min", "dim"),
    ("aten.argmax.default", "argmax", "dim"),
    ("aten.argmin.default", "argmin", "dim"),
    ("aten.any.default", "max", None),
    ("aten.any.dim", "max", "dim"),
    ("aten.any.dims", "max", "dim"),
    ("aten.all.default", "min", None),
    ("aten.all.dim", "min", "dim"),
    ("aten.all.dims", "min", "dim"),
    ("aten.linalg_vector_norm.default", "norm2", "dim"),
]:
    register(_target, check=_check, dynamic=True)(_lower(_op, _dim))


def cases() -> list[OpCase]:
    import torch

    def ties(shape):
        return lambda: torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(5)).float()

    return [
        OpCase("mean_hw_keepdim", lambda x: x.mean(dim=(2, 3), keepdim=True), [(3, 37, 7, 7)]),
        OpCase("sum_middle_dim", lambda x: x.sum(dim=1), [(5, 89, 41)]),
        OpCase("sum_all", lambda x: x.sum(), [(37, 41, 3)]),
        OpCase("mean_all_of_transposed", lambda x: x.t().mean(), [(113, 37)]),
        OpCase("amax_last_long_row", lambda x: x.amax(dim=-1), [(3, 5003)]),
        OpCase("amin_two_dims", lambda x: x.amin(dim=(0, 2), keepdim=True), [(7, 37, 41)]),
        OpCase("argmax_vocab_row", lambda x: x.argmax(dim=-1), [(2, 51289)]),
        OpCase("argmax_ties_first_index", lambda x: x.argmax(dim=1), [ties((37, 113))]),
        OpCase("argmin_flat", lambda x: x.argmin(), [ties((37, 41))]),
        OpCase("mean_size_one_rows", lambda x: x.mean(dim=-1), [(1031, 1)]),
        OpCase("norm2_normalize_rows", lambda x: (torch.nn.functional.normalize(x, dim=1), x.norm(dim=(0, 2))),
               [(37, 384, 3)]),
        OpCase("any_all_of_masks", lambda m: (m.any(dim=-1), m.all(dim=0), m.any(), m[:, :3].all(1, keepdim=True)),
               [lambda: torch.rand(37, 41, generator=torch.Generator().manual_seed(2)) > 0.1]),
        OpCase("any_all_whole_and_over_dims", lambda m: (m.all(), m.all(dim=(0, 2)), m.any(dim=(1, 2))),
               [lambda: torch.rand(7, 37, 5, generator=torch.Generator().manual_seed(3)) > 0.05]),
        OpCase("sum_of_mask_and_ints", lambda m, i: (m.sum(-1), m.sum(), i.sum(0), m.sum(-1, dtype=torch.float32)),
               [lambda: torch.rand(37, 4001, generator=torch.Generator().manual_seed(4)) > 0.5,
                lambda: torch.randint(-2**20, 2**20, (89, 37), generator=torch.Generator().manual_seed(4))]),
    ]
