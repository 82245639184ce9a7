"""Reductions over any set of dims: sum, mean, prod, amax, amin, max / min (values and indices), argmax,
argmin, any, all, vector norms (of every order), var, std, var_mean, logsumexp.

The input is read in place: its dims are split into kept and reduced ones, each with its own strides, so
reducing a transposed or sliced view needs no copy. The number of threads per output row follows the row's
length (a power of two up to 256), so a mean over 7×7 and an argmax over a 51,289-word vocabulary both keep
a workgroup busy. A few long rows of a single-pass op (a greedy argmax over a vocabulary, a sum over
everything) are split across workgroups, then each row's slices combined: one workgroup per row would leave a
GPU idle. Tuning may run them unsplit instead (the choice CPU adapters make), the same two dispatches with one
slice. Integer results accumulate in i32 (exact: a sum of a mask counts it; int64 sums and
products are exact while they stay within int32, as all int64 arithmetic here), float ones in f32. NaN
follows torch: max, min, amax, amin and the arg ops return it (argmax / argmin: the index of the first NaN).
"""

from __future__ import annotations

import math
import re

from ...format import dtypes
from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register
from .row import row_threads, split_slices

FILE = "reduce.wgsl"
MAX_DIMS = 8
# Reductions whose kernel gives the right value over an empty dim: its accumulator's start, 0 (false for any).
EMPTY_OK = ("aten.sum.", "aten.any.", "aten.linalg_vector_norm.")
# Ops taking one pass over a row (reduce.wgsl's single_pass): those a split row can compute.
SINGLE_PASS = ("sum", "mean", "prod", "max", "min", "any", "all", "norm2", "norm1", "norm_inf", "norm_neg_inf",
               "norm0")
WORKGROUP = wgsl.constant(wgsl.kernel_source(FILE), "WORKGROUP")  # a split's slice: one workgroup
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def _dims(dim, ndim: int) -> list[int]:
    if dim is None or (isinstance(dim, list) and not dim):
        return list(range(ndim))
    dims = [dim] if isinstance(dim, int) else dim
    return sorted({layout.normalize_dim(d, ndim) for d in dims})


def reduce(ctx: Builder, op: str, x: Tensor, dims: list[int], out_shape: tuple[int, ...],
           out_dtype: str | None = "float32", aux_dtype: str | None = None, correction: float = 0.0,
           out: Tensor | None = None, ord: float = 0.0) -> list[Tensor | None]:
    """`op` over `dims` of `x`: [its value (None when out_dtype is None), its second result (the winner's index
    for max / min, the mean for var / std; None when aux_dtype is None)], each a fresh contiguous tensor of
    `out_shape` (keepdim or not); the value goes to `out` instead when given."""
    kept = [d for d in range(x.ndim) if d not in dims]
    reduce_size = 1
    for d in dims:
        reduce_size *= x.shape[d]
    x = ctx.walkable(x, reduce_size)
    value = out or (ctx.new(out_shape, out_dtype) if out_dtype else None)
    second = ctx.new(out_shape, aux_dtype) if aux_dtype else None
    row = row_threads(reduce_size, FILE)
    params = {
        "num_out": (value or second).numel, "reduce_size": reduce_size, "kept_ndim": len(kept),
        "red_ndim": len(dims), "offset": x.offset, "correction": float(correction),
        "ord": float(ord), "slices": 1,
        "kept_shape": [x.shape[d] for d in kept], "kept_strides": [x.strides[d] for d in kept],
        "red_shape": [x.shape[d] for d in dims], "red_strides": [x.strides[d] for d in dims],
    }
    result = out_dtype or x.dtype
    acc = "f32" if dtypes.category(result) == 2 else "u32" if result == "bool" else "i32"
    consts = {"InT": dtypes.dtype(x.dtype).wgsl, "AccT": acc, "OutT": dtypes.dtype(result).wgsl,
              "AuxT": dtypes.dtype(aux_dtype or "int32").wgsl}
    name = f"reduce[{op}{'+index' if aux_dtype and op in ('max', 'min') else ''}]"
    overrides = {"OP": OP_CODES[op], "ROW": row, "WRITE_OUT": value is not None, "WRITE_AUX": second is not None}
    spec = KernelSpec.of(FILE, name, consts=consts, overrides=overrides)
    unwritten = ctx.new((1,), "int32") if value is None or second is None else None  # binds the other slot
    slices = split_slices(params["num_out"], reduce_size) if op in SINGLE_PASS else 1
    if slices == 1:
        ctx.dispatch(spec, [x, value or unwritten, second or unwritten], params, elements=params["num_out"] * row)
        return [value, second]
    pairs = ctx.new((params["num_out"], slices, 2), "int32")

    def split(n: int, targets: tuple[str, ...]) -> None:
        """Rows in n slices, then each row's n pairs combined (reduce.wgsl's `split`, `combine`)."""
        ctx.dispatch(KernelSpec.of(FILE, f"{name[:-1]},{n} slices]", entry="split", targets=targets,
                                   consts={**consts, "OutT": "u32"}, overrides={**overrides, "ROW": WORKGROUP}),
                     [x, pairs, unwritten or second], {**params, "slices": n}, workgroups=params["num_out"] * n)
        combine_row = row_threads(n, FILE)
        ctx.dispatch(KernelSpec.of(FILE, f"{name[:-1]},combine {n}]", entry="combine", targets=targets,
                                   consts={**consts, "InT": "u32"}, overrides={**overrides, "ROW": combine_row}),
                     [pairs, value or unwritten, second or unwritten], {**params, "slices": n},
                     elements=params["num_out"] * combine_row)

    ctx.alternatives([lambda: split(slices, ()), lambda: split(1, ("cpu",))],
                     tuple(t for t in (value, second) if t is not None))
    return [value, second]


# -- checks ----------------------------------------------------------------------------------------------------

FLOAT_ONLY = ("aten.mean", "aten.var", "aten.std", "aten.linalg_vector_norm")


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_DIMS:
        return f"input has {x.ndim} dims; at most {MAX_DIMS} are supported"
    if node.target.startswith(FLOAT_ONLY) and not dtypes.is_float(node.outputs[0].dtype):
        return f"{node.target} producing {node.outputs[0].dtype} is not supported (floating point only)"
    is_norm = node.target == "aten.linalg_vector_norm.default"
    if is_norm and (_norm_op(node.args["ord"]) is None or not dtypes.is_float(x.dtype)):
        return f"vector norm of ord {node.args['ord']} over {x.dtype} is not supported (floating point only)"
    if x.numel == 0 and not node.target.startswith(EMPTY_OK):
        return "reducing over an empty dim is supported for sum, any and the 2-norm only"
    correction = node.args.get("correction")
    if correction is not None and not isinstance(correction, (int, float)):
        return f"correction {correction!r} is not supported"
    return None


# -- lowerings -------------------------------------------------------------------------------------------------

def _lower(op: str, dim_arg: str | None):
    """A reduction with one result, the value (sum, mean, prod, amax, amin, any, all, norm, logsumexp,
    max / min over everything), or the index (argmax, argmin)."""
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        x = node.args["self"]
        if x.ndim == 0:  # a 0-d tensor reduces as one element along dim 0 (or -1), torch's rule
            x = layout.unsqueeze(x, 0)
        dims = _dims(node.args.get(dim_arg) if dim_arg else None, x.ndim)
        if op.startswith("arg"):
            return reduce(ctx, op[3:], x, dims, node.out.shape, out_dtype=None, aux_dtype=node.out.dtype)[1]
        return reduce(ctx, op, x, dims, node.out.shape, node.out.dtype)[0]

    return lower


def _norm_op(ord) -> str | None:
    """The kernel op of linalg_vector_norm's `ord` (a number; None for anything else)."""
    named = {2: "norm2", 1: "norm1", 0: "norm0", float("inf"): "norm_inf", float("-inf"): "norm_neg_inf"}
    return named.get(ord, "norm_p" if isinstance(ord, (int, float)) and math.isfinite(ord) else None)


@register("aten.linalg_vector_norm.default", check=_check, dynamic=True)
def vector_norm(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    if x.ndim == 0:
        x = layout.unsqueeze(x, 0)
    return reduce(ctx, _norm_op(node.args["ord"]), x, _dims(node.args["dim"], x.ndim), node.out.shape,
                  node.out.dtype, ord=node.args["ord"])[0]


@register("aten.max.dim", "aten.min.dim", check=_check, dynamic=True)
def max_min_dim(ctx: Builder, node: NodeView) -> list[Tensor | None]:
    """Values and indices, each computed only where the graph reads it."""
    x, (values, indices) = node.args["self"], node.outputs
    op = node.target.split(".")[1]
    return reduce(ctx, op, x, _dims(node.args["dim"], x.ndim), values.shape,
                  out_dtype=values.dtype if 0 in node.outputs_read else None,
                  aux_dtype=indices.dtype if 1 in node.outputs_read or 0 not in node.outputs_read else None)


@register("aten.var.correction", "aten.std.correction", check=_check, dynamic=True)
def var_std(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    correction = 1 if node.args["correction"] is None else node.args["correction"]
    return reduce(ctx, node.target.split(".")[1], x, _dims(node.args["dim"], x.ndim), node.out.shape,
                  correction=correction)[0]


@register("aten.var_mean.correction", check=_check, dynamic=True)
def var_mean(ctx: Builder, node: NodeView) -> list[Tensor]:
    x = node.args["self"]
    correction = 1 if node.args["correction"] is None else node.args["correction"]
    return reduce(ctx, "var", x, _dims(node.args["dim"], x.ndim), node.outputs[0].shape, aux_dtype="float32",
                  correction=correction)


for _target, _op, _dim in [
    ("aten.sum.dim_IntList", "sum", "dim"),
    ("aten.sum.default", "sum", None),
    ("aten.mean.dim", "mean", "dim"),
    ("aten.mean.default", "mean", None),
    ("aten.prod.default", "prod", None),
    ("aten.prod.dim_int", "prod", "dim"),
    ("aten.amax.default", "max", "dim"),
    ("aten.amin.default", "min", "dim"),
    ("aten.max.default", "max", None),
    ("aten.min.default", "min", None),
    ("aten.argmax.default", "argmax", "dim"),
    ("aten.argmin.default", "argmin", "dim"),
    ("aten.any.default", "any", None),
    ("aten.any.dim", "any", "dim"),
    ("aten.any.dims", "any", "dim"),
    ("aten.all.default", "all", None),
    ("aten.all.dim", "all", "dim"),
    ("aten.all.dims", "all", "dim"),
    ("aten.logsumexp.default", "logsumexp", "dim"),
]:
    register(_target, check=_check, dynamic=True)(_lower(_op, _dim))


def cases() -> list[OpCase]:
    import torch

    def ties(shape):
        return lambda: torch.randint(0, 3, shape, generator=torch.Generator().manual_seed(5)).float()

    def ints(shape, lo, hi, seed=0):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

    def mask(shape, seed=0):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5

    nan, inf = float("nan"), float("inf")

    def nan_rows():
        x = torch.randn(37, 41, generator=torch.Generator().manual_seed(7))
        x[0, 5] = x[0, 9] = x[3, 0] = x[4, 40] = x[5, 20] = nan  # NaN first, last, twice in a row
        x[6, :] = 0.0
        x[7, :] = -inf
        return x

    def inf_rows():
        x = torch.randn(5, 13, generator=torch.Generator().manual_seed(8))
        x[0, :] = -inf
        x[1, 3] = inf
        x[2, 4] = nan
        x[3, 7] = 3e38
        return x

    def long_rows():  # rows of 17,527: winners far apart, in different threads' shares
        x = torch.randint(-50, 50, (4, 17527), generator=torch.Generator().manual_seed(9)).float()
        x[0, 7] = x[0, 16000] = 99.0  # a tie: the first wins
        x[1, 12000] = x[1, 17000] = x[1, 2] = nan  # the first NaN
        x[2, :] = -0.0
        x[3, 17526] = 99.0  # the last element
        return x

    return [
        OpCase("long_rows_arg_ops_ties_nan_signed_zero", lambda x: (x.argmax(-1), x.argmin(-1), x.amax(-1),
                                                                     x.sum(-1), *torch.max(x, -1),
                                                                     x[:1].argmax(-1, keepdim=True)),
               [long_rows]),
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
        OpCase("norms_of_every_order", lambda x: tuple(torch.linalg.vector_norm(x, o, dim=d) for o, d in [
            (1, 1), (float("inf"), (0, 2)), (float("-inf"), -1), (0, 1), (3, 1), (0.5, None), (6, 2), (-1, 1),
            (-2.5, 2)]),
               [(5, 89, 41)]),
        # Rows of -inf, with an inf, with a NaN, with 3e38 (its cube overflows: the p-norm scales first), zeros.
        OpCase("norms_nan_inf_huge_zero_rows", lambda x: tuple(torch.linalg.vector_norm(x, o, dim=1)
                                                               for o in (1, float("inf"), float("-inf"), 0, 3,
                                                                         -2)),
               [lambda: torch.cat([inf_rows(), torch.zeros(1, 13)])]),
        OpCase("any_all_of_masks", lambda m: (m.any(dim=-1), m.all(dim=0), m.any(), m[:, :3].all(1, keepdim=True)),
               [lambda: torch.rand(37, 41, generator=torch.Generator().manual_seed(2)) > 0.1]),
        OpCase("any_all_whole_and_over_dims", lambda m: (m.all(), m.all(dim=(0, 2)), m.any(dim=(1, 2))),
               [lambda: torch.rand(7, 37, 5, generator=torch.Generator().manual_seed(3)) > 0.05]),
        OpCase("sum_of_mask_and_ints", lambda m, i: (m.sum(-1), m.sum(), i.sum(0), m.sum(-1, dtype=torch.float32)),
               [lambda: torch.rand(37, 4001, generator=torch.Generator().manual_seed(4)) > 0.5,
                lambda: torch.randint(-2**20, 2**20, (89, 37), generator=torch.Generator().manual_seed(4))]),
        OpCase("int_and_bool_reductions", lambda i, m: (
            i.sum(1), i.int().sum(), m.prod(1), i.clamp(-2, 2).prod(1), i.amax(1), i.int().amin(0), m.amax(1),
            m.amin(), i.argmax(1), i.int().argmin(0), i.max(), m.min(), i.any(1), i.all(0),
            i.mean(0, dtype=torch.float32), m.sum(0, dtype=torch.int32), i.prod(dtype=torch.float32)),
            [ints((37, 13), -9, 9), mask((37, 13))]),
        OpCase("max_min_dim_values_and_indices", lambda x, i, m: (
            x.max(1), x.min(0, keepdim=True), x.t().max(0).values, i.min(1).indices, i.int().max(0), m.max(1),
            m.min(0)), [ties((37, 113)), ints((37, 113), -3, 3), mask((37, 113))]),
        OpCase("prod_float", lambda x: (x.prod(1), (x + 1.0).prod(), x.prod(0, keepdim=True)),
               [lambda: 0.6 + 0.8 * torch.rand(37, 41, generator=torch.Generator().manual_seed(6))]),
        # NaN is the max and the min, at its first index; any / all count it as true.
        OpCase("nan_through_max_min_and_arg", lambda x: (
            x.amax(1), x.amin(0), x.max(1), x.min(0), x.argmax(1), x.argmin(0), x.max(), x.min(), x.argmax(),
            x.sum(1), x.any(1), x.all(1), torch.aminmax(x, dim=1)), [nan_rows]),
        OpCase("var_std_dims_and_corrections", lambda x: (
            x.var(1), x.var(1, unbiased=False), x.std(0), x.var(), torch.var_mean(x, (0, 2)),
            x.std(2, correction=0, keepdim=True), torch.std_mean(x, 1), x.var(2, correction=2)), [(5, 89, 41)]),
        OpCase("std_and_var_of_huge_rows", lambda x: ((x * 1e30).std(1), (x * 1e18).var(1), (x * 1e30).mean(1),
                                                      torch.var_mean(x * 3e18, 0)), [(3, 1031)]),
        OpCase("logsumexp", lambda x: (torch.logsumexp(x * 30.0, 1), torch.logsumexp(x, (0, 2), keepdim=True),
                                       torch.logsumexp(x * 3e37, 2)), [(5, 89, 41)]),
        OpCase("logsumexp_of_infinite_and_nan_rows", lambda x, i: (torch.logsumexp(x, 1), torch.logsumexp(i, 1)),
               [inf_rows, ints((5, 13), -9, 9)]),
    ]
