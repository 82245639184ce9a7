"""cumsum, cumprod, logcumsumexp, and cummax / cummin (values and int64 indices) along any dim, of float,
integer or bool input (HF derives position ids from a mask by a cumsum). Integer and bool sums and products
give int64 (i32 on the device: exact while the running value fits); cummax and cummin keep the dtype. A few
long rows (a sampler's cumulative probabilities over a vocabulary) are split across workgroups (row.py's
`dispatch_rows`): each slice's total, then a workgroup per slice scans it from the fold of the
totals before it."""

from __future__ import annotations

import re

from ...format import dtypes
from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder
from .registry import NodeView, OpCase, register
from .row import dispatch_rows, row_params
from .softmax import MAX_ROW_DIMS

FILE = "scan.wgsl"
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_ROW_DIMS + 1:
        return f"input has {x.ndim} dims; at most {MAX_ROW_DIMS + 1} are supported"
    if node.outputs[0].dtype == "bool" and node.target in ("aten.cumsum.default", "aten.cumprod.default"):
        return f"{node.target} to bool is not supported"
    return None


def _lower(op: str):
    indexed = op in ("max", "min")

    def lower(ctx: Builder, node: NodeView) -> Tensor | list[Tensor]:
        x, out_dtype = node.args["self"], node.outputs[0].dtype
        out = ctx.new(x.shape, out_dtype)
        out_idx = ctx.new(x.shape, "int64") if indexed else ctx.sink()
        dim = layout.normalize_dim(node.args["dim"], max(x.ndim, 1))
        x = ctx.walkable(x, x.shape[dim] if x.ndim else 1)
        acc = "f32" if dtypes.category(out_dtype) == 2 else "i32"
        consts = {"InT": dtypes.dtype(x.dtype).wgsl, "AccT": acc, "OutT": dtypes.dtype(out_dtype).wgsl}
        dispatch_rows(ctx, FILE, f"scan[{op}", "slice_totals", [x, out, out_idx], row_params(x, dim),
                      consts=consts, overrides={"OP": OP_CODES[op]})
        return [out, out_idx] if indexed else out

    return lower


register("aten.cumsum.default", check=_check)(_lower("sum"))
register("aten.cumprod.default", check=_check)(_lower("prod"))
register("aten.logcumsumexp.default", check=_check)(_lower("logsumexp"))
register("aten.cummax.default", check=_check)(_lower("max"))
register("aten.cummin.default", check=_check)(_lower("min"))


def cases() -> list[OpCase]:
    import torch

    def mask():
        m = torch.ones(3, 41, dtype=torch.int64)
        m[1, 30:] = 0
        m[2, :7] = 0  # left padding
        return m

    def ints(shape, lo, hi):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(3))

    return [
        OpCase("cumsum_hf_position_ids", lambda m: (m.cumsum(-1) - 1) * m, [mask]),
        OpCase("cumsum_float_dims", lambda x: (x.cumsum(0), x.transpose(1, 2).cumsum(1)), [(37, 5, 7)]),
        OpCase("cumsum_bool_to_int", lambda x: (x > 0).cumsum(dim=1), [(5, 89)]),
        OpCase("cumsum_long_rows", lambda x, i: (x.cumsum(-1), i.cumsum(0), i.int().cumsum(-1, dtype=torch.int32)),
               [(3, 5003), ints((1031, 7), -99, 99)]),
        OpCase("cumprod_float_int_bool", lambda x, i, m: (x.cumprod(1), i.cumprod(1), m.cumprod(0), x.cumprod(0),
                                                          i.int().cumprod(0, dtype=torch.float32)),
               [lambda: 0.5 + torch.rand(37, 41, generator=torch.Generator().manual_seed(9)),
                ints((37, 19), -2, 3), lambda: torch.rand(37, 41, generator=torch.Generator().manual_seed(2)) > 0.05]),
        OpCase("logcumsumexp_dims_long_rows", lambda x, y: (torch.logcumsumexp(x, 1), torch.logcumsumexp(x, 0),
                                                            torch.logcumsumexp(y, -1)), [(37, 41), (3, 5003)]),
        OpCase("logcumsumexp_nan_and_inf", lambda x: torch.logcumsumexp(x, 1), [lambda: torch.tensor(
            [[float("-inf"), float("-inf"), 1.0, float("inf"), 2.0], [1.0, float("nan"), 2.0, 3.0, float("-inf")],
             [-1e30, 3.0, float("-inf"), -2.0, 88.0]])]),
        OpCase("cummax_cummin_ties_nan_long_rows", lambda x, t, y: (
            torch.cummax(x, 1), torch.cummin(x, 1), torch.cummax(t, 1), torch.cummin(t, 0), torch.cummax(y, -1),
            torch.cummin(y, -1), torch.cummax(x[0, 0], 0)),
            [lambda: torch.tensor([[1.0, float("nan"), 2.0, float("nan"), 0.5, 3.0], [2.0, 1.0, 2.0, -0.0, 0.0, 1.0],
                                   [-1.0, -1.0, float("inf"), float("-inf"), float("inf"), float("nan")]]),
             lambda: torch.randint(0, 4, (37, 41), generator=torch.Generator().manual_seed(5)).float(),
             (3, 5003)]),
        OpCase("cummax_cummin_int_bool", lambda i, m: (torch.cummax(i, 1), torch.cummin(i.int(), 0),
                                                       torch.cummax(m, 1), torch.cummin(m, 1)),
               [ints((37, 1031), -5, 5), lambda: torch.rand(5, 41, generator=torch.Generator().manual_seed(6)) > 0.5]),
        # Split: 6 slices a row; a NaN in the third, ties of integers across slices.
        OpCase("scan_split_long_rows", lambda x, i: (x.cumsum(-1), torch.cummax(x, -1), torch.cummin(i, -1),
                                                     i.cumsum(-1), torch.logcumsumexp(x, -1)),
               [lambda: torch.randn(2, 6007, generator=torch.Generator().manual_seed(4)).index_fill(1, torch.tensor(
                   [2500]), float("nan")), ints((3, 6007), -9, 9)]),
        OpCase("cumsum_with_nan_and_inf", lambda x: x.cumsum(1), [lambda: torch.tensor(
            [[1.0, float("nan"), 2.0, 3.0], [float("inf"), 1.0, float("-inf"), 2.0]])]),
    ]
