"""cumsum along any dim, of float, integer or bool input (HF derives position ids from a mask this way)."""

from __future__ import annotations

from .. import dtypes, layout
from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register
from .row import row_params
from .softmax import MAX_ROW_DIMS

FILE = "scan.wgsl"
WORKGROUP = 64


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_ROW_DIMS + 1:
        return f"input has {x.ndim} dims; at most {MAX_ROW_DIMS + 1} are supported"
    if node.out.dtype == "bool":
        return "cumsum to bool is not supported"
    return None


@register("aten.cumsum.default", check=_check)
def cumsum(ctx: Builder, node: NodeView) -> Tensor:
    x, out_dtype = node.args["self"], node.out.dtype
    out = ctx.new(x.shape, out_dtype)
    params = row_params(x, layout.normalize_dim(node.args["dim"], max(x.ndim, 1)))
    acc = "f32" if dtypes.category(out_dtype) == 2 else "i32"
    spec = KernelSpec.of(FILE, f"cumsum[{out_dtype}]", consts={
        "InT": dtypes.dtype(x.dtype).wgsl, "AccT": acc, "OutT": dtypes.dtype(out_dtype).wgsl})
    ctx.dispatch(spec, [x, out], params, -(-params["rows"] // WORKGROUP))
    return out


def cases() -> list[OpCase]:
    import torch

    def mask():
        m = torch.ones(3, 41, dtype=torch.int64)
        m[1, 30:] = 0
        m[2, :7] = 0  # left padding
        return m

    return [
        OpCase("cumsum_hf_position_ids", lambda m: (m.cumsum(-1) - 1) * m, [mask]),
        OpCase("cumsum_float_dims", lambda x: (x.cumsum(0), x.transpose(1, 2).cumsum(1)), [(37, 5, 7)]),
        OpCase("cumsum_bool_to_int", lambda x: (x > 0).cumsum(dim=1), [(5, 89)]),
    ]
