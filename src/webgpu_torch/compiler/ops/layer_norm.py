"""native_layer_norm over the trailing dims, with its mean and rstd outputs (cheap to write, so computed), and
rms_norm (which norm_fusion.py also makes of transformers' RMSNorm) on the same kernel without the mean.

The input is read in place as a [rows, N] view (a copy only where its strides do not allow that view);
weight and bias likewise as [N] views.
"""

from __future__ import annotations

from math import prod

import numpy as np

from ...format import dtypes, symbolic
from ...format.program import F16, Tensor
from ..builder import Builder, KernelSpec
from .registry import NodeView, OpCase, register
from .row import row_threads

FILE = "layer_norm.wgsl"
MAX_UNROLL = 8


def _check(node: NodeView) -> str | None:
    x = node.args["input"]
    for name in ("input", "weight", "bias"):
        v = node.args.get(name)
        if v is not None and not dtypes.is_float(v.dtype):
            return f"{name} is {v.dtype}; {node.target.split('.')[1]} is floating point only"
    if prod(node.args["normalized_shape"]) == 0 or x.numel == 0:
        return "layer_norm over an empty tensor is not supported"
    return None


@register("aten.native_layer_norm.default", check=_check, dynamic=True, half=("input",))
def native_layer_norm(ctx: Builder, node: NodeView) -> list[Tensor]:
    a = node.args
    out, mean, rstd = (ctx.new(m.shape, node.storage(i) if i == 0 else "float32") for i, m in enumerate(node.outputs))
    _normalize(ctx, a["input"], a["weight"], a["bias"], prod(a["normalized_shape"]), float(a["eps"]),
               [out, mean, rstd], rms=False)
    return [out, mean, rstd]


@register("aten.rms_norm.default", check=_check, dynamic=True)
def rms_norm(ctx: Builder, node: NodeView) -> Tensor:
    """x / sqrt(mean(x²) + eps) · weight over the trailing dims; eps None is the float32 machine epsilon, as
    torch's default."""
    a = node.args
    x, n = a["input"], prod(a["normalized_shape"])
    eps = float(a["eps"]) if a["eps"] is not None else float(np.finfo(np.float32).eps)
    return rms_rows(ctx, x, a["weight"], eps, n=n, out_dtype=node.storage())


def rms_rows(ctx: Builder, x: Tensor, weight: Tensor | None, eps: float, *, n=None,
             out_dtype: str = "float32") -> Tensor:
    """rms_norm of x over its trailing `n` elements (its last dim by default), times `weight`: a fresh contiguous
    tensor of x's shape (also the norm a GEMM folded in, norm_prologues.py, where its kernel cannot take it)."""
    n = x.shape[-1] if n is None else n
    rows = x.numel // n
    out = ctx.new(x.shape, out_dtype)
    _normalize(ctx, x, weight, None, n, eps, [out, ctx.new((rows,)), ctx.new((rows,))], rms=True)
    return out


def _normalize(ctx: Builder, x: Tensor, w: Tensor | None, b: Tensor | None, n, eps: float, outputs: list[Tensor],
               *, rms: bool) -> None:
    rows = x.numel // n
    x2 = ctx.walkable(ctx.reshaped(x, (rows, n)), n)
    w1 = ctx.reshaped(w, (n,)) if w is not None else ctx.dummy()
    b1 = ctx.reshaped(b, (n,)) if b is not None else ctx.dummy()
    row = row_threads(n, FILE)
    params = {"rows": rows, "n": n, "x_offset": x2.offset, "row_stride": x2.strides[0], "col_stride": x2.strides[1],
              "w_offset": w1.offset, "w_stride": w1.strides[0] if w is not None else 0,
              "b_offset": b1.offset, "b_stride": b1.strides[0] if b is not None else 0, "eps": eps}
    unroll = min(MAX_UNROLL, -(-symbolic.hint(n) // row))  # a thread's share of the row, loaded at once
    stored = {"In": dtypes.dtype(x2.dtype).wgsl, "Out": dtypes.dtype(outputs[0].dtype).wgsl, "UNROLL": unroll}
    half = "f16" in stored.values()
    name = ("rms_norm" if rms else "layer_norm") + (",f16" if half else "")
    spec = KernelSpec.of(FILE, name, consts=stored, requires=(F16,) if half else (), overrides={
        "ROW": row, "HAS_WEIGHT": w is not None, "HAS_BIAS": b is not None, "RMS": rms})
    ctx.dispatch(spec, [x2, w1, b1, *outputs], params, elements=rows * row)


def cases() -> list[OpCase]:
    import torch

    ln = torch.nn.functional.layer_norm

    def nan_row():
        x = torch.randn(7, 41, generator=torch.Generator().manual_seed(1))
        x[2, 5] = float("nan")
        return x

    return [
        OpCase("layer_norm_rows", lambda x, w, b: ln(x, (384,), w, b, 1e-12), [(3, 37, 384), (384,), (384,)]),
        OpCase("layer_norm_two_dims_no_affine", lambda x: ln(x, (7, 41)), [(5, 7, 41)]),
        OpCase("layer_norm_transposed_and_offset", lambda x, w: (ln(x.t(), (37,), w), ln(x * 3.0 + 100.0, (89,))),
               [(37, 89), (37,)]),
        OpCase("layer_norm_wide_row_and_stats",
               lambda x: torch.ops.aten.native_layer_norm.default(x, [5003], None, None, 1e-5), [(3, 5003)]),
        OpCase("layer_norm_tiny_rows", lambda x, w, b: ln(x, (3,), w, b), [(1031, 3), (3,), (3,)]),
        # Rows whose squares overflow float32 normalise as in float64; constant rows give rstd = 1/sqrt(eps).
        OpCase("layer_norm_huge_rows_and_stats", lambda x, c: (
            torch.ops.aten.native_layer_norm.default(x * 1e30, [384], None, None, 1e-5),
            ln(x * 3e35, (384,)), ln(x * 1e-30, (384,), eps=1e-12), ln(c, (384,)), ln(c * 1e35, (384,))),
            [(5, 384), lambda: torch.full((3, 384), 7.0)]),
        OpCase("layer_norm_nan_row", lambda x: ln(x, (41,)), [nan_row]),
        # eps None is the dtype's epsilon (float64's in the reference: rows of unit scale tell no difference).
        OpCase("rms_norm_rows_and_default_eps", lambda x, w: (torch.nn.functional.rms_norm(x, (383,), w, 1e-6),
                                                              torch.nn.functional.rms_norm(x, (383,))),
               [(3, 37, 383), (383,)]),
        OpCase("rms_norm_huge_rows_transposed", lambda x: torch.nn.functional.rms_norm(x.t() * 1e30, (41,)),
               [(41, 97)]),
        OpCase("rms_norm_as_transformers_writes_it", _llama_rms_norm, [(2, 7, 67), (67,)]),
    ]


def _llama_rms_norm(x, w):
    """LlamaRMSNorm's forward, which norm_fusion.py rewrites into rms_norm (a model's constant weight folds in too;
    this input one stays a multiply)."""
    import torch

    variance = x.pow(2).mean(-1, keepdim=True)
    return w * (x * torch.rsqrt(variance + 1e-6))
