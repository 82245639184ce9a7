"""Batch norm in inference (`_native_batch_norm_legit_no_training`), where it was not folded into a conv.

conv_folding.py folds a BN into the conv before it whenever that conv and every BN parameter are constants;
what reaches this kernel is a BN of an input, of a value other nodes also read, or with parameters that are
inputs. Only output 0 (the normalised tensor) is produced: outputs 1 and 2 are empty in inference.
Batch statistics (`_native_batch_norm_legit.no_stats`: InstanceNorm, BatchNorm without running statistics)
are group_norm.py's; batch norm that updates its running statistics is training, refused.
"""

from __future__ import annotations

from math import prod

from ...format import dtypes
from ...format.program import Tensor
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, refuse, register

FILE = "batch_norm.wgsl"

refuse("aten._native_batch_norm_legit.default", inference=False,
       reason="batch norm in training mode (it updates its running statistics from the batch); WebGPU programs "
              "run inference: call model.eval() before torch.export")


def _check(node: NodeView) -> str | None:
    x = node.args["input"]
    if x.ndim < 2:
        return f"batch norm needs an input of >= 2 dims [N, C, ...], got {list(x.shape)}"
    for name in ("input", "weight", "bias", "running_mean", "running_var"):
        t = node.args[name]
        if t is not None and not dtypes.is_float(t.dtype):
            return f"{name} is {t.dtype}; batch norm is floating point only"
    if node.outputs_read - {0}:
        return "only output 0 (the normalised tensor) is supported; outputs 1 and 2 are read"
    return None


@register("aten._native_batch_norm_legit_no_training.default", check=_check)
def batch_norm(ctx: Builder, node: NodeView) -> tuple[Tensor, None, None]:
    a = node.args
    x = ctx.contiguous(a["input"])
    weight, bias = a["weight"], a["bias"]
    out = ctx.new(x.shape)
    spec = KernelSpec.of(FILE, "batch_norm", overrides={"HAS_WEIGHT": weight is not None, "HAS_BIAS": bias is not None})
    per_channel = [ctx.contiguous(t) if t is not None else ctx.dummy()
                   for t in (a["running_mean"], a["running_var"], weight, bias)]
    params = {"numel": out.numel, "C": x.shape[1], "inner": prod(x.shape[2:]), "eps": float(a["eps"])}
    ctx.dispatch(spec, [x, *per_channel, out], params, elements=out.numel)
    return out, None, None


def cases() -> list[OpCase]:
    import torch

    def bn(x, mean, var, w, b):
        return torch.nn.functional.batch_norm(x, mean, var.abs() + 0.1, w, b, training=False, eps=1e-3)

    return [
        OpCase("batch_norm_4d_batch3", bn, [(3, 13, 7, 11), (13,), (13,), (13,), (13,)]),
        OpCase("batch_norm_no_affine_1d", lambda x, mean, var: torch.nn.functional.batch_norm(
            x, mean, var.abs() + 0.1, training=False), [(5, 37, 41), (37,), (37,)]),
        OpCase("batch_norm_2d_transposed_input", lambda x, mean, var, w, b: bn(x.t(), mean, var, w, b),
               [(37, 41), (37,), (37,), (37,), (37,)]),
    ]
