"""Elementwise ops with broadcasting: one strided kernel, the op an override constant, the dtypes aliases.

Arithmetic, activations, pow, comparisons, logical ops, `where` and casts all run through `emit`. Operands
are read in place through their strides (a transposed or broadcast operand costs no copy); adjacent dims that
every operand and the output traverse contiguously are merged first, so the common dense case indexes
directly. Type promotion follows torch: arithmetic computes in the result's dtype, comparisons in their
inputs' promoted dtype (dtypes.promote). Integers compute in i32 (int64 travels as int32).
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from numbers import Number

import numpy as np

from .. import dtypes, layout, wgsl
from ..builder import Builder, KernelSpec
from ..graph import Epilogue
from ..program import Tensor
from ..symbolic import Expr
from . import epilogue
from .registry import NodeView, OpCase, register

FILE = "elementwise.wgsl"
MAX_DIMS = 8
WORKGROUP = 256
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}
EXACT_F32_INT = 2**24  # integer scalars travel in Params as f32: exact up to this magnitude

BINARY = {"add": "aten.add.Tensor", "sub": "aten.sub.Tensor", "mul": "aten.mul.Tensor",
          "div": "aten.div.Tensor", "maximum": "aten.maximum.default", "minimum": "aten.minimum.default",
          "pow": "aten.pow.Tensor_Tensor"}
WITH_SCALAR = {"add": "aten.add.Scalar", "sub": "aten.sub.Scalar", "mul": "aten.mul.Scalar",
               "div": "aten.div.Scalar", "rsub": "aten.rsub.Scalar", "pow": "aten.pow.Tensor_Scalar"}
UNARY = {name: f"aten.{name}.default" for name in
         ("neg", "abs", "reciprocal", "exp", "log", "sqrt", "rsqrt", "sin", "cos")}
COMPARISONS = {name: (f"aten.{name}.Tensor", f"aten.{name}.Scalar") for name in ("eq", "ne", "lt", "le", "gt", "ge")}
# Logical ops treat any nonzero as true; the bitwise ones equal them on bool, the only dtype they accept here.
LOGICAL = {"aten.logical_and.default": "and", "aten.logical_or.default": "or", "aten.logical_not.default": "not",
           "aten.bitwise_and.Tensor": "and", "aten.bitwise_or.Tensor": "or", "aten.bitwise_not.default": "not"}
INTEGER_OPS = {"copy", "add", "sub", "rsub", "mul", "neg", "abs", "maximum", "minimum"}
# Activations run as a copy with the activation as its epilogue (ops/epilogue.py maps each to its code).
ACTIVATIONS = ("aten.relu.default", "aten.sigmoid.default", "aten.tanh.default", "aten.gelu.default",
               "aten.hardtanh.default", "aten.clamp.default")


def emit(ctx: Builder, op: str, operands: list[Tensor | Number], shape: tuple[int, ...], *,
         out_dtype: str = "float32", compute: str | None = None, alpha: float = 1.0,
         ep: Epilogue | None = None, out: Tensor | None = None) -> Tensor:
    """act(op(*operands)) over `shape`, computed in dtype `compute` (default: `out_dtype`). Operands broadcast
    to `shape`; the second may be a Python number. The result is written to `out` (a view of `shape`, such
    as a slice of a concatenation) or to a fresh contiguous tensor, which is returned."""
    out = ctx.new(shape, out_dtype) if out is None else out
    scalar = operands[1] if len(operands) > 1 and not isinstance(operands[1], Tensor) else None
    tensors = [layout.broadcast_to(t, shape) for t in operands if isinstance(t, Tensor)]
    slots = tensors + [tensors[0]] * (3 - len(tensors))  # a slot the op never reads gets a's view
    dims, strides = _merge_dims(shape, [t.strides for t in slots] + [out.strides])
    contiguous = len(dims) <= 1 and all(s == (1,) * len(dims) for s in strides)
    params = {"numel": out.numel, "ndim": len(dims), "a_offset": slots[0].offset, "b_offset": slots[1].offset,
              "c_offset": slots[2].offset, "out_offset": out.offset, "alpha": float(alpha),
              "scalar": 0.0 if scalar is None else scalar if isinstance(scalar, Expr) else float(scalar),
              "shape": dims, "a_strides": strides[0],
              "b_strides": strides[1], "c_strides": strides[2], "out_strides": strides[3], **epilogue.params(ep)}
    types = {"A": slots[0].dtype, "B": slots[1].dtype, "C": slots[2].dtype, "T": compute or out_dtype,
             "Out": out_dtype}
    name = f"elementwise[{op}]" if op != "copy" or not ep else f"elementwise[{ep.activation}]"
    if op == "copy" and types["A"] != out_dtype:
        name = f"elementwise[{types['A']}->{out_dtype}]"
    spec = KernelSpec.of(FILE, name + (epilogue.suffix(ep) if op != "copy" else ""),
                         consts={k: dtypes.dtype(v).wgsl for k, v in types.items()},
                         overrides={"OP": OP_CODES[op], "B_SCALAR": scalar is not None, "CONTIGUOUS": contiguous,
                                    **epilogue.overrides(ep)})
    ctx.dispatch(spec, slots + [out], params, -(-out.numel // WORKGROUP))
    return out


def _merge_dims(shape, strides_list):
    """Drop size-1 dims and merge neighbours that every view steps through contiguously."""
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


def copy(ctx: Builder, t: Tensor, out: Tensor | None = None) -> Tensor:
    """A contiguous copy of a strided view, or a copy into the view `out` (converted to its dtype)."""
    return emit(ctx, "copy", [t], t.shape, out_dtype=(out or t).dtype, compute=t.dtype, out=out)


# -- checks ----------------------------------------------------------------------------------------------------

def _limits(node: NodeView) -> str | None:
    for name, v in node.args.items():
        if hasattr(v, "ndim") and v.ndim > MAX_DIMS:
            return f"argument {name} has {v.ndim} dims; at most {MAX_DIMS} are supported"
    return None


def _scalar_fits(value: object, compute: str) -> str | None:
    if not isinstance(value, Number) or dtypes.category(compute) == 2:
        return None
    if not math.isfinite(float(value)) or float(value) != int(value) or abs(int(value)) > EXACT_F32_INT:
        return f"scalar {value} in {compute} arithmetic must be an integer of magnitude <= 2**24"
    return None


def _check_arithmetic(op: str):
    def check(node: NodeView) -> str | None:
        out = node.out.dtype
        if out == "bool":
            return f"{op} producing bool is not supported"
        if dtypes.category(out) == 1 and op not in INTEGER_OPS:
            return f"{op} producing {out} is not supported (integer {op} is float32 only here)"
        scalars = (node.args.get("other"), node.args.get("alpha"))
        return _limits(node) or next(filter(None, (_scalar_fits(v, out) for v in scalars)), None)
    return check


def _float32_only(node: NodeView) -> str | None:
    for name, v in node.args.items():
        if hasattr(v, "dtype") and v.dtype != "float32":
            return f"argument {name} is {v.dtype}; activations are float32 only"
    return _limits(node)


def _dtype_of(v) -> object:
    """What dtypes.promote takes for an operand: a tensor's dtype, or the number itself (a dynamic size is an
    integer)."""
    return 0 if isinstance(v, Expr) else v if isinstance(v, Number) else v.dtype


def _check_comparison(node: NodeView) -> str | None:
    a, b = node.args["self"], node.args["other"]
    return _limits(node) or _scalar_fits(b, dtypes.promote(a.dtype, _dtype_of(b)))


def _check_logical(node: NodeView) -> str | None:
    if node.target.startswith("aten.bitwise"):
        bad = [n for n, v in node.args.items() if hasattr(v, "dtype") and v.dtype != "bool"]
        if bad:
            return f"{node.target} on {node.args[bad[0]].dtype} is not supported (bool only)"
    return _limits(node)


def _check_where(node: NodeView) -> str | None:
    if node.args["condition"].dtype != "bool":
        return f"where's condition must be bool, got {node.args['condition'].dtype}"
    return _limits(node)


def _check_cast(node: NodeView) -> str | None:
    extra = {k: v for k, v in node.args.items() if k in ("layout", "pin_memory") and v not in (None, "torch.strided")}
    if extra:
        return f"_to_copy with {extra} is not supported"
    return _limits(node)


# -- lowerings -------------------------------------------------------------------------------------------------

def _lower_binary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a, b = node.args["self"], node.args["other"] if "other" in node.args else node.args["exponent"]
        alpha = node.args.get("alpha", 1)
        out = node.out
        if isinstance(a, Number):  # a scalar on the left: only add and mul are commutative
            if op in ("add", "mul"):
                a, b = b, a
            elif op == "sub":
                return emit(ctx, "rsub", [b, a], out.shape, out_dtype=out.dtype, alpha=alpha, ep=node.epilogue)
            else:
                a = ctx.constant(f"{node.name}_scalar", np.full((), a, dtypes.dtype(out.dtype).host), out.dtype)
        return emit(ctx, op, [a, b], out.shape, out_dtype=out.dtype, alpha=alpha, ep=node.epilogue)

    return lower


def _lower_unary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        return emit(ctx, op, [node.args["self"], 0.0], node.out.shape, out_dtype=node.out.dtype, ep=node.epilogue)

    return lower


def _lower_predicate(op: str):
    """Comparisons and logical ops: a bool result, computed in the inputs' promoted dtype."""
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a, b = node.args["self"], node.args.get("other")
        if b is None:  # logical_not
            return emit(ctx, op, [a, 0], node.out.shape, out_dtype="bool", compute=a.dtype)
        compute = dtypes.promote(a.dtype, _dtype_of(b))
        return emit(ctx, op, [a, b], node.out.shape, out_dtype="bool", compute=compute)

    return lower


def _check_activation(node: NodeView) -> str | None:
    if node.target == "aten.clamp.default" and any(isinstance(node.args[k], bool) for k in ("min", "max")):
        return "clamp with boolean bounds is not supported"
    return _float32_only(node)


@register(*ACTIVATIONS, check=_check_activation, dynamic=True)
def activation(ctx: Builder, node: NodeView) -> Tensor:
    return emit(ctx, "copy", [node.args["self"]], node.out.shape, ep=epilogue.of_node(node.target, node.args))


def _check_creation(node: NodeView) -> str | None:
    if node.out.dtype not in ("float32", "int64", "int32"):
        return f"{node.target} of {node.out.dtype} is not supported"
    step = node.args.get("step", 1)
    if not isinstance(step, Number) or not math.isfinite(step):
        return f"{node.target} with step {step!r} is not supported"
    return _scalar_fits(node.args.get("start", 0), node.out.dtype) if isinstance(node.args.get("start"), Number) \
        else None


# Creation ops reach lowering only when their sizes or values are dynamic (otherwise they fold to constants).
@register("aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.full.default",
          "aten.full_like.default", check=_check_creation, dynamic=True)
def arange_or_full(ctx: Builder, node: NodeView) -> Tensor:
    """arange: start + step * i; full: fill_value (a step of 0). No operand is read (a 0-d view of the dummy
    buffer stands in for one)."""
    a = node.args
    fill = a.get("fill_value")
    start, step = (fill, 0) if "fill_value" in a else (a.get("start", 0), a.get("step", 1))
    nothing = Tensor(ctx.dummy().buffer, (), (), 0, "float32")
    return emit(ctx, "arange", [nothing, start], node.out.shape, out_dtype=node.out.dtype, alpha=step)


@register("aten.where.self", check=_check_where, dynamic=True)
def where(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return emit(ctx, "where", [a["condition"], a["self"], a["other"]], node.out.shape, out_dtype=node.out.dtype)


@register("aten.pow.Scalar", check=_check_arithmetic("pow"), dynamic=True)
def pow_scalar_base(ctx: Builder, node: NodeView) -> Tensor:
    base = ctx.constant(f"{node.name}_base", np.full((), node.args["self"], np.float32))
    return emit(ctx, "pow", [base, node.args["exponent"]], node.out.shape)


@register("aten._to_copy.default", check=_check_cast, dynamic=True)
def to_copy(ctx: Builder, node: NodeView) -> Tensor:
    """A cast. int64 and int32 share their device form (i32), so a cast between them is a view; to bool is
    `!= 0`; the others convert on store (float to int truncates toward zero, as torch does)."""
    x, want = node.args["self"], node.out.dtype
    if x.dtype == want or {x.dtype, want} == {"int32", "int64"}:
        return replace(x, dtype=want)
    if want == "bool":
        return emit(ctx, "ne", [x, 0], x.shape, out_dtype="bool", compute=x.dtype)
    return emit(ctx, "copy", [x], x.shape, out_dtype=want, compute=x.dtype)


for _op, _target in [*BINARY.items(), *WITH_SCALAR.items()]:
    register(_target, check=_check_arithmetic(_op), epilogue=_op != "pow", dynamic=True)(_lower_binary(_op))
for _op, _target in UNARY.items():
    register(_target, check=_check_arithmetic(_op), epilogue=True, dynamic=True)(_lower_unary(_op))
for _op, _targets in COMPARISONS.items():
    register(*_targets, check=_check_comparison, dynamic=True)(_lower_predicate(_op))
for _target, _op in LOGICAL.items():
    register(_target, check=_check_logical, dynamic=True)(_lower_predicate(_op))


def cases() -> list[OpCase]:
    import torch

    def ints(shape, lo=-50, hi=50, seed=0):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

    def mask(shape, seed=0):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5

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
        # An activation of an input has no producer to fuse into: its own lowering runs.
        OpCase("activations_unfused", lambda a: (torch.sigmoid(a), torch.tanh(a), torch.nn.functional.gelu(a)),
               [(37, 41)]),
        OpCase("add_many_workgroups", lambda a, b: a + b, [(66_001 * 256 + 3,), (1,)]),
        OpCase("add_8d", lambda a, b: a + b, [(2, 1, 3, 1, 2, 3, 1, 2), (1, 2, 3, 1, 1, 3, 2, 1)]),
        OpCase("gelu_erf_and_tanh", lambda a: (torch.nn.functional.gelu(a * 4.0),
                                                torch.nn.functional.gelu(a * 4.0, approximate="tanh")), [(37, 41)]),
        OpCase("relu6_hardtanh_clamp", lambda a: torch.nn.functional.relu6(a * 5.0) + torch.clamp(a, min=-0.5)
               + torch.clamp(a, -0.25, 0.75) + torch.nn.functional.hardtanh(a), [(37, 41)]),
        OpCase("fused_add_relu", lambda a, b: torch.relu(a + b), [(37, 41), (41,)]),
        OpCase("fused_mul_sigmoid_and_unfused_reuse", lambda a, b: (torch.sigmoid(a * b), a * b),
               [(37, 41), (37, 41)]),
        OpCase("maximum_minimum", lambda a, b: torch.maximum(a, b) - torch.minimum(a, b.t()), [(37, 37), (37, 37)]),
        # pow: negative bases with integer exponents, 0 ** 0, squares (RMSNorm), scalar ** tensor, tensor ** tensor.
        OpCase("pow_tensor_scalar", lambda a: (a.pow(2), a.pow(3), a.pow(-1.0), a.abs().pow(0.37), (a * 0).pow(0)),
               [(37, 41)]),
        OpCase("pow_scalar_tensor_and_tensor_tensor", lambda a, b: (torch.pow(2.0, a), a.abs().pow(b)),
               [(37, 41), (37, 41)]),
        # Integer arithmetic stays exact in int32 (int64 on the host).
        OpCase("int_arithmetic", lambda i, j: (i + j * 3 - 7, (i - j).abs(), -i, torch.maximum(i, j)),
               [ints((37, 41)), ints((41,), seed=1)]),
        OpCase("int_plus_float_promotes", lambda i, x: i + x, [ints((37, 41)), (37, 41)]),
        OpCase("int_true_divide", lambda i: i / 4, [ints((89,))]),
        OpCase("comparisons", lambda a, b: (a < b, a <= 1.0, a > b.t(), a >= b, a == b, a != b, a == 2),
               [lambda: ints((37, 37), 0, 3)().float(), lambda: ints((37, 37), 0, 3, seed=1)().float()]),
        OpCase("scalar_overloads", lambda a: (torch.ops.aten.add.Scalar(a, 2.5), torch.ops.aten.sub.Scalar(a, 0.5),
                                              torch.ops.aten.mul.Scalar(a, -3.0), torch.ops.aten.div.Scalar(a, 7.0)),
               [(37, 41)]),
        OpCase("comparisons_tensor_le_scalar_lt", lambda a, b: (a <= b, a < 0.5), [(37, 41), (41,)]),
        OpCase("int_comparisons", lambda i, j: (i == j, i != 3, i < j, i >= 0), [ints((37, 41), 0, 4),
                                                                                   ints((37, 41), 0, 4, seed=1)]),
        OpCase("logical_and_bitwise_on_masks", lambda m, n: (m & n, m | n, ~m, torch.logical_and(m, n.t()),
                                                             torch.logical_not(m), torch.logical_or(m, n)),
               [mask((37, 37)), mask((37, 37), seed=1)]),
        OpCase("where_broadcast", lambda m, a, b: torch.where(m, a, b), [mask((37, 1)), (37, 41), (41,)]),
        OpCase("where_int_and_bool", lambda m, i, j: (torch.where(m, i, j), torch.where(m, m, ~m)),
               [mask((37, 41)), ints((37, 41)), ints((41,), seed=1)]),
        OpCase("where_mask_fill", lambda m, a: a.masked_fill(m, -1e9), [mask((3, 1, 41)), (3, 37, 41)]),
        OpCase("casts", lambda x, i, m: (x.to(torch.int64), (x * 3).to(torch.int32), i.float(), m.float(),
                                         m.long(), x.bool(), i.bool(), i.to(torch.int32)),
               [(37, 41), ints((37, 41)), mask((37, 41))]),
        # Creation ops reach their kernel only with dynamic sizes (static ones fold into constants).
        OpCase("arange_and_full_of_dynamic_size",
               lambda a: (a + torch.arange(a.shape[0]), torch.arange(3, a.shape[0] + 3, dtype=torch.float32) * a,
                          torch.arange(1, 2 * a.shape[0] + 1, 2) + a, torch.full((a.shape[0],), 2.5) * a,
                          torch.full_like(a, 7.0)),
               [(37,)], dynamic_shapes=({0: torch.export.Dim("n", min=2, max=64)},)),
        OpCase("fill", lambda a: (a.clone().fill_(2.5) * a, torch.ops.aten.fill.Scalar(a, -1.0)), [(37, 41)]),
        OpCase("cast_of_transposed", lambda i: i.t().float() * 0.5, [ints((37, 41))]),
    ]
