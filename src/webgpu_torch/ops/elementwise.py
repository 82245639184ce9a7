"""Elementwise arithmetic and activations with broadcasting: one strided kernel, the op an override constant.

Operands are read in place through their strides (a transposed or broadcast operand costs no copy); adjacent
dims that every operand traverses contiguously are merged first, so the common dense case indexes directly.
"""

from __future__ import annotations

import re
from numbers import Number

import numpy as np

from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from ..graph import Epilogue
from ..program import Tensor
from . import epilogue
from .registry import NodeView, OpCase, register

FILE = "elementwise.wgsl"
MAX_DIMS = 8
WORKGROUP = 256
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}

BINARY = {"add": "aten.add.Tensor", "sub": "aten.sub.Tensor", "mul": "aten.mul.Tensor",
          "div": "aten.div.Tensor"}
WITH_SCALAR = {"add": "aten.add.Scalar", "sub": "aten.sub.Scalar", "mul": "aten.mul.Scalar",
               "div": "aten.div.Scalar", "rsub": "aten.rsub.Scalar"}
UNARY = {name: f"aten.{name}.default" for name in
         ("neg", "abs", "reciprocal", "exp", "log", "sqrt", "rsqrt", "sin", "cos")}
# Activations run as a copy with the activation as its epilogue (ops/epilogue.py maps each to its code).
ACTIVATIONS = ("aten.relu.default", "aten.sigmoid.default", "aten.tanh.default", "aten.gelu.default",
               "aten.hardtanh.default", "aten.clamp.default")


def _float32_only(node: NodeView) -> str | None:
    for name, v in node.args.items():
        if hasattr(v, "dtype") and v.dtype != "float32":
            return f"argument {name} is {v.dtype}; elementwise kernels are float32 only"
        if hasattr(v, "ndim") and v.ndim > MAX_DIMS:
            return f"argument {name} has {v.ndim} dims; at most {MAX_DIMS} are supported"
    if node.out.dtype != "float32":
        return f"result is {node.out.dtype}; elementwise kernels are float32 only"
    return None


def _check_div(node: NodeView) -> str | None:
    mode = node.args.get("rounding_mode")
    return f"div with rounding_mode={mode!r} is not supported" if mode else _float32_only(node)


def emit(ctx: Builder, op: str, a: Tensor, b: Tensor | float, shape: tuple[int, ...],
         alpha: float = 1.0, ep: Epilogue | None = None) -> Tensor:
    """out = act(op(a, b)) over `shape`; `b` is a tensor or a Python number; both broadcast to `shape`."""
    out = ctx.new(shape, "float32")
    operands = [layout.broadcast_to(a, shape)]
    if isinstance(b, Tensor):
        operands.append(layout.broadcast_to(b, shape))
    dims, strides = _merge_dims(shape, [t.strides for t in operands])
    contiguous = all(s == (1,) * len(dims) and len(dims) <= 1 for s in strides)
    b_strides = strides[1] if len(strides) > 1 else strides[0]
    b_offset = operands[1].offset if len(operands) > 1 else 0
    params = {"numel": out.numel, "ndim": len(dims), "a_offset": a.offset, "b_offset": b_offset,
              "alpha": float(alpha), "scalar": float(b) if not isinstance(b, Tensor) else 0.0,
              "shape": dims, "a_strides": strides[0], "b_strides": b_strides, **epilogue.params(ep)}
    name = f"elementwise[{op}]" if op != "copy" or not ep else f"elementwise[{ep.activation}]"
    spec = KernelSpec.of(FILE, name + (epilogue.suffix(ep) if op != "copy" else ""), overrides={
        "OP": OP_CODES[op], "B_SCALAR": not isinstance(b, Tensor), "CONTIGUOUS": contiguous,
        **epilogue.overrides(ep)})
    second = operands[1] if len(operands) > 1 else a
    ctx.dispatch(spec, [a, second, out], params, -(-out.numel // WORKGROUP))
    return out


def _merge_dims(shape, strides_list):
    """Drop size-1 dims and merge neighbours that every operand steps through contiguously."""
    dims: list[int] = []
    merged: list[list[int]] = [[] for _ in strides_list]
    for d, n in enumerate(shape):
        if n == 1:
            continue
        if dims and all(m[-1] == s[d] * n for m, s in zip(merged, strides_list, strict=True)):
            dims[-1] *= n
            for m, s in zip(merged, strides_list, strict=True):
                m[-1] = s[d]
        else:
            dims.append(n)
            for m, s in zip(merged, strides_list, strict=True):
                m.append(s[d])
    return tuple(dims), [tuple(m) for m in merged]


def copy(ctx: Builder, t: Tensor) -> Tensor:
    """A contiguous copy of a strided view."""
    return emit(ctx, "copy", t, 0.0, t.shape)


def _lower_binary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a, b = node.args["self"], node.args["other"]
        alpha = node.args.get("alpha", 1)
        if isinstance(a, Number):  # a scalar on the left: only add and mul are commutative
            if op in ("add", "mul"):
                a, b = b, a
            elif op == "sub":
                return emit(ctx, "rsub", b, a, node.out.shape, alpha, node.epilogue)
            else:
                a = ctx.constant(f"{node.name}_scalar", np.full((), a, np.float32))
        return emit(ctx, op, a, b, node.out.shape, alpha, node.epilogue)

    return lower


def _lower_unary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        return emit(ctx, op, node.args["self"], 0.0, node.out.shape, ep=node.epilogue)

    return lower


def _check_activation(node: NodeView) -> str | None:
    if node.target == "aten.clamp.default" and any(isinstance(node.args[k], bool) for k in ("min", "max")):
        return "clamp with boolean bounds is not supported"
    return _float32_only(node)


@register(*ACTIVATIONS, check=_check_activation)
def activation(ctx: Builder, node: NodeView) -> Tensor:
    return emit(ctx, "copy", node.args["self"], 0.0, node.out.shape, ep=epilogue.of_node(node.target, node.args))


for _op, _target in [*BINARY.items(), *WITH_SCALAR.items()]:
    register(_target, check=_check_div if _op == "div" else _float32_only, epilogue=True)(_lower_binary(_op))
for _op, _target in UNARY.items():
    register(_target, check=_float32_only, epilogue=True)(_lower_unary(_op))


def cases() -> list[OpCase]:
    import torch

    return [
        OpCase("add_broadcast_row", lambda a, b: a + b, [(37, 41), (41,)]),
        OpCase("add_alpha_col", lambda a, b: torch.add(a, b, alpha=-2.5), [(3, 37, 41), (37, 1)]),
        OpCase("sub_scalar_left", lambda a: 1.5 - a, [(89,)]),
        OpCase("sub_transposed", lambda a, b: a.t() - b, [(41, 37), (37, 41)]),
        OpCase("mul_3d_broadcast", lambda a, b: a * b, [(1, 37, 1), (3, 1, 41)]),
        OpCase("mul_scalar", lambda a: a * 3.0, [(113,)]),
        OpCase("div", lambda a, b: a / (b.abs() + 0.5), [(37, 41), (37, 41)]),
        OpCase("div_scalar_left", lambda a: 2.0 / (a.abs() + 0.5), [(41,)]),
        OpCase("neg_abs", lambda a: -a.abs(), [(3, 37)]),
        OpCase("exp_log", lambda a: torch.exp(a) + torch.log(a.abs() + 0.1), [(37, 41)]),
        OpCase("sqrt_rsqrt", lambda a: torch.sqrt(a.abs()) * torch.rsqrt(a.abs() + 0.5), [(37, 41)]),
        OpCase("sin_cos", lambda a: torch.sin(a * 3.0) - torch.cos(a * 3.0), [(37, 41)]),
        OpCase("relu_permuted", lambda a: torch.relu(a.permute(2, 0, 1)), [(5, 7, 3)]),
        OpCase("sigmoid_wide_range", lambda a: torch.sigmoid(a * 60.0), [(1031,)]),
        OpCase("tanh_wide_range", lambda a: torch.tanh(a * 30.0), [(1031,)]),
        OpCase("add_many_workgroups", lambda a, b: a + b, [(66_001 * 256 + 3,), (1,)]),
        OpCase("add_8d", lambda a, b: a + b, [(2, 1, 3, 1, 2, 3, 1, 2), (1, 2, 3, 1, 1, 3, 2, 1)]),
        OpCase("gelu_erf_and_tanh", lambda a: (torch.nn.functional.gelu(a * 4.0),
                                                torch.nn.functional.gelu(a * 4.0, approximate="tanh")), [(37, 41)]),
        OpCase("relu6_hardtanh_clamp", lambda a: torch.nn.functional.relu6(a * 5.0) + torch.clamp(a, min=-0.5)
               + torch.clamp(a, -0.25, 0.75) + torch.nn.functional.hardtanh(a), [(37, 41)]),
        OpCase("fused_add_relu", lambda a, b: torch.relu(a + b), [(37, 41), (41,)]),
        OpCase("fused_mul_sigmoid_and_unfused_reuse", lambda a, b: (torch.sigmoid(a * b), a * b),
               [(37, 41), (37, 41)]),
    ]
