"""cumsum and cumprod along any dim, of float, integer or bool input (HF derives position ids from a mask by a
cumsum). Integer and bool inputs give int64 (i32 on the device: exact while the running value fits)."""

from __future__ import annotations

import re

from .. import dtypes, layout, wgsl
from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register
from .row import row_params, row_threads
from .softmax import MAX_ROW_DIMS

FILE = "scan.wgsl"
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_ROW_DIMS + 1:
        return f"input has {x.ndim} dims; at most {MAX_ROW_DIMS + 1} are supported"
    if node.out.dtype == "bool":
        return f"{node.target} to bool is not supported"
    return None


def _lower(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        x, out_dtype = node.args["self"], node.out.dtype
        out = ctx.new(x.shape, out_dtype)
        dim = layout.normalize_dim(node.args["dim"], max(x.ndim, 1))
        x = ctx.walkable(x, x.shape[dim] if x.ndim else 1)
        params = row_params(x, dim)
        row = row_threads(params["n"], FILE)
        acc = "f32" if dtypes.category(out_dtype) == 2 else "i32"
        spec = KernelSpec.of(FILE, f"scan[{op}]", consts={
            "InT": dtypes.dtype(x.dtype).wgsl, "AccT": acc, "OutT": dtypes.dtype(out_dtype).wgsl},
            overrides={"OP": OP_CODES[op], "ROW": row})
        ctx.dispatch(spec, [x, out], params, elements=params["rows"] * row)
        return out

    return lower


register("aten.cumsum.default", check=_check)(_lower("sum"))
register("aten.cumprod.default", check=_check)(_lower("prod"))


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
        OpCase("cumsum_with_nan_and_inf", lambda x: x.cumsum(1), [lambda: torch.tensor(
            [[1.0, float("nan"), 2.0, 3.0], [float("inf"), 1.0, float("-inf"), 2.0]])]),
    ]
