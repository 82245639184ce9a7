"""_softmax, _log_softmax and _safe_softmax (the masked form attention decomposes to) along any one dim.

The input is read in place through its strides; the dims other than the softmax dim enumerate rows. A few
long rows (a sampler's over a 128,256-token vocabulary: one workgroup took 0.32 ms of an H100's time) are
split across workgroups (row.py's `dispatch_rows`): each slice's max and sum of exponentials,
then a workgroup per slice joins its row's and writes the slice.
"""

from __future__ import annotations

import re

from ...format import dtypes
from ...format.program import F16, Tensor
from .. import layout, wgsl
from ..builder import Builder
from .registry import NodeView, OpCase, register
from .row import dispatch_rows, row_params

FILE = "softmax.wgsl"
MAX_ROW_DIMS = 7
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def softmax(ctx: Builder, op: str, x: Tensor, dim: int, out_dtype: str = "float32") -> Tensor:
    """`op` ("softmax", "log_softmax", "safe_softmax") of `x` along `dim`; a fresh contiguous tensor of
    `out_dtype` (f16: an activation stored in half precision)."""
    out = ctx.new(x.shape, out_dtype)
    dim = layout.normalize_dim(dim, max(x.ndim, 1))
    x = ctx.walkable(x, x.shape[dim] if x.ndim else 1)
    stored = {"In": dtypes.dtype(x.dtype).wgsl, "Out": dtypes.dtype(out_dtype).wgsl}
    half = "f16" in stored.values()
    dispatch_rows(ctx, FILE, f"softmax[{op}{',f16' if half else ''}", "slice_stats", [x, out], row_params(x, dim),
                  pairs="float32", consts=stored, requires=(F16,) if half else (), overrides={"OP": OP_CODES[op]})
    return out


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if not dtypes.is_float(x.dtype) or not dtypes.is_float(node.out.dtype):
        return f"softmax of {x.dtype} to {node.out.dtype} is not supported (floating point only)"
    if x.ndim > MAX_ROW_DIMS + 1:
        return f"input has {x.ndim} dims; at most {MAX_ROW_DIMS + 1} are supported"
    if x.numel == 0:
        return "softmax of an empty tensor is not supported"
    return None


def _lower(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        return softmax(ctx, op, node.args["self"], node.args["dim"], node.storage())

    return lower


for _target, _op in [("aten._softmax.default", "softmax"), ("aten._log_softmax.default", "log_softmax"),
                     ("aten._safe_softmax.default", "safe_softmax")]:
    register(_target, check=_check, dynamic=True, half=("self",))(_lower(_op))


def cases() -> list[OpCase]:
    import torch

    def masked_rows():
        x = torch.randn(3, 37, 41, generator=torch.Generator().manual_seed(8))
        x[0, :, 5:] = float("-inf")
        x[1, 3] = float("-inf")  # a fully masked row
        return x

    def nan_and_inf_rows():
        x = torch.randn(7, 41, generator=torch.Generator().manual_seed(9))
        x[1, 3] = float("nan")
        x[2, 0] = float("inf")
        x[3, 7] = float("-inf")
        return x

    def long_rows():  # split: 6 slices a row; a row masked over whole slices, one masked whole, one with a NaN
        x = torch.randn(4, 6007, generator=torch.Generator().manual_seed(10))
        x[1, :3000] = float("-inf")
        x[2] = float("-inf")
        x[3, 4500] = float("nan")
        return x

    return [
        OpCase("softmax_last", lambda x: torch.softmax(x * 10.0, dim=-1), [(3, 37, 41)]),
        OpCase("softmax_split_long_rows", lambda x: (torch.softmax(x * 5.0, -1), torch.log_softmax(x, -1),
                                                     torch.ops.aten._safe_softmax.default(x, -1)), [long_rows]),
        OpCase("softmax_middle_of_transposed", lambda x: torch.softmax(x.transpose(0, 2), dim=1), [(5, 37, 7)]),
        OpCase("softmax_first_dim", lambda x: torch.softmax(x, dim=0), [(89, 3, 5)]),
        OpCase("log_softmax_vocab_row", lambda x: torch.log_softmax(x * 30.0, dim=-1), [(2, 5003)]),
        OpCase("softmax_masked_rows", lambda x: torch.softmax(x[:, :, :] + 0.0, dim=-1), [masked_rows]),
        OpCase("safe_softmax_masked_rows", lambda x: torch.ops.aten._safe_softmax.default(x, -1), [masked_rows]),
        OpCase("softmax_single_element_rows", lambda x: torch.softmax(x, dim=-1), [(1031, 1)]),
        # Finite wherever eager float32 is: rows of huge values; NaN (and +inf, whose x - max is NaN) as torch.
        OpCase("softmax_huge_rows", lambda x: (torch.softmax(x * 1e30, -1), torch.log_softmax(x * 1e30, -1),
                                               torch.softmax(x.clamp(-3, 3) * 1e38, 0),
                                               torch.log_softmax(x * 3e37, 0)),
               [(37, 41)]),
        OpCase("softmax_nan_and_inf_rows", lambda x: (torch.softmax(x, -1), torch.log_softmax(x, -1)),
               [nan_and_inf_rows]),
    ]
