"""constant_pad_nd: padding (or, with negative amounts, cropping) any of the last dims with a constant.

Zero padding of a conv's input usually never reaches this kernel: conv_folding.py folds it into the conv.
"""

from __future__ import annotations

from ..builder import Builder, KernelSpec
from ..program import Tensor
from .registry import NodeView, OpCase, register

FILE = "pad.wgsl"
MAX_DIMS = 8
WORKGROUP = 256


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.dtype != "float32":
        return f"input is {x.dtype}; the pad kernel is float32 only"
    if x.ndim > MAX_DIMS:
        return f"input has {x.ndim} dims; at most {MAX_DIMS} are supported"
    return None


@register("aten.constant_pad_nd.default", check=_check)
def constant_pad(ctx: Builder, node: NodeView) -> Tensor:
    x, amounts = node.args["self"], node.args["pad"]
    before = [0] * x.ndim
    for i, n in enumerate(amounts[0::2]):  # (before, after) pairs, last dim first
        before[x.ndim - 1 - i] = n
    out = ctx.new(node.out.shape)
    params = {"numel": out.numel, "ndim": x.ndim, "x_offset": x.offset, "value": float(node.args["value"]),
              "out_shape": out.shape, "in_shape": x.shape, "before": before, "x_strides": x.strides}
    ctx.dispatch(KernelSpec.of(FILE, "constant_pad"), [x, out], params, -(-out.numel // WORKGROUP))
    return out


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional
    return [
        OpCase("pad_hw_asymmetric", lambda x: F.pad(x, (1, 2, 3, 0), value=0.5), [(3, 5, 13, 11)]),
        OpCase("pad_and_crop_three_dims", lambda x: F.pad(x, (-2, 3, 0, 1, 2, -1)), [(3, 5, 13, 11)]),
        OpCase("pad_of_transposed_1d", lambda x: F.pad(x.t(), (4, 0), value=-1.0), [(37, 5)]),
    ]
