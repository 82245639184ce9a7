"""Elementwise ops with broadcasting: one strided kernel, the op an override constant, the dtypes aliases.

Arithmetic, activations, pow, the float functions (math.wgsl), rounding, comparisons, logical and bitwise
ops, clamp, `where` and casts all run through `emit`. Operands are read in place through their strides (a
transposed or broadcast operand costs no copy); adjacent dims that every operand and the output traverse
contiguously are merged first, so the common dense case indexes directly. Type promotion follows torch:
arithmetic computes in the result's dtype, comparisons in their inputs' promoted dtype (dtypes.promote).
Integers compute in i32 (int64 travels as int32); a Python number travels in Params as f32, or as a 0-d
constant where f32 cannot hold it exactly. NaN follows torch, not the GPU: it propagates through maximum,
minimum, clamp and the activations, counts as true, and is what the float functions give outside their domain.
"""

from __future__ import annotations

import math
import re
from dataclasses import replace
from numbers import Number

import numpy as np

from ...format import dtypes
from ...format.program import F16, Tensor
from ...format.symbolic import Expr
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from ..graph import Epilogue
from . import epilogue
from .registry import NodeView, OpCase, register

FILE = "elementwise.wgsl"
MAX_DIMS = 8
OP_CODES = {name.lower(): int(code) for name, code in
            re.findall(r"const OP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}
EXACT_F32_INT = 2**24  # integer scalars travel in Params as f32: exact up to this magnitude (larger: a constant)
INT32 = 2**31

# Binary arithmetic, a tensor and a tensor or a number (either side), computed in the result's dtype.
ARITHMETIC = {
    "aten.add.Tensor": "add", "aten.sub.Tensor": "sub", "aten.mul.Tensor": "mul", "aten.div.Tensor": "div",
    "aten.maximum.default": "maximum", "aten.minimum.default": "minimum", "aten.pow.Tensor_Tensor": "pow",
    "aten.add.Scalar": "add", "aten.sub.Scalar": "sub", "aten.mul.Scalar": "mul", "aten.div.Scalar": "div",
    "aten.rsub.Scalar": "rsub", "aten.pow.Tensor_Scalar": "pow",
    "aten.atan2.default": "atan2", "aten.hypot.default": "hypot",
    "aten.fmax.default": "fmax", "aten.fmin.default": "fmin",
    "aten.copysign.Tensor": "copysign", "aten.copysign.Scalar": "copysign",
    "aten.remainder.Tensor": "remainder", "aten.remainder.Scalar": "remainder",
    "aten.remainder.Scalar_Tensor": "remainder",
    "aten.fmod.Tensor": "fmod", "aten.fmod.Scalar": "fmod",
    "aten.bitwise_and.Tensor": "bitand", "aten.bitwise_and.Scalar": "bitand",
    "aten.bitwise_or.Tensor": "bitor", "aten.bitwise_or.Scalar": "bitor",
    "aten.bitwise_xor.Tensor": "bitxor", "aten.bitwise_xor.Scalar": "bitxor",
}
# Functions of one operand: neg and abs keep integers; the float functions convert an integer or bool operand
# (torch gives float32 for them).
UNARY = {f"aten.{name}.default": name for name in
         ("neg", "abs", "reciprocal", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "rsqrt", "sin",
          "cos", "tan", "asin", "acos", "atan", "sinh", "cosh", "asinh", "acosh", "atanh", "erf", "erfinv",
          "exp2", "erfc", "lgamma", "digamma", "angle")}
# Rounding: float only in the kernel; of an integer tensor, the tensor itself.
ROUNDING = {f"aten.{name}.default": name for name in ("ceil", "floor", "round", "trunc")}
COMPARISONS = {name: (f"aten.{name}.Tensor", f"aten.{name}.Scalar") for name in ("eq", "ne", "lt", "le", "gt", "ge")}
# Logical ops treat any nonzero (NaN too) as true.
LOGICAL = {"aten.logical_and.default": "and", "aten.logical_or.default": "or", "aten.logical_xor.default": "xor",
           "aten.logical_not.default": "not"}
# Ops the kernel computes in integer types too (the rest are float-only: their integer forms promote to float).
INTEGER_OPS = {"copy", "add", "sub", "rsub", "mul", "neg", "abs", "maximum", "minimum", "fmax", "fmin", "clamp",
               "remainder", "fmod", "div_floor", "div_trunc", "bitand", "bitor", "bitxor", "sign", "pow"}
# Ops on bools with a bool result (u32 0 and 1 in the kernel): add is `or`, the rest keep 0 and 1 as they are.
BOOL_OPS = {"add", "mul", "maximum", "minimum", "bitand", "bitor", "bitxor"}
DIV_MODES = {None: "div", "floor": "div_floor", "trunc": "div_trunc"}
ROPE = "webgpu.rope.default"  # what rope_fusion.py rewrites transformers' rotary embedding into
GATED = "webgpu.gated.default"  # what gated_products.py rewrites act(gate) * up into
# Activations run as a copy with the activation as its epilogue (ops/epilogue.py maps each to its code).
ACTIVATIONS = ("aten.relu.default", "aten.sigmoid.default", "aten.tanh.default", "aten.gelu.default",
               "aten.hardtanh.default", "aten.clamp.default", "aten.leaky_relu.default", "aten.silu.default")


def emit(ctx: Builder, op: str, operands: list[Tensor | Number], shape: tuple[int, ...], *,
         out_dtype: str = "float32", compute: str | None = None, alpha: float = 1.0, beta: float = 0.0,
         ep: Epilogue | None = None, out: Tensor | None = None, gate: Epilogue | None = None) -> Tensor:
    """act(op(*operands)) over `shape`, computed in dtype `compute` (default: `out_dtype`). Operands broadcast
    to `shape`; the second may be a Python number. The result is written to `out` (a view of `shape`, such
    as a slice of a concatenation) or to a fresh contiguous tensor, which is returned. `gate` is op "gated"'s
    activation of its first operand (its bounds travel as alpha and beta)."""
    if gate is not None:
        bounds = epilogue.params(gate)
        alpha, beta = bounds["act_lo"], bounds["act_hi"]
    out = ctx.new(shape, out_dtype) if out is None else out
    scalar = operands[1] if len(operands) > 1 and not isinstance(operands[1], Tensor) else None
    tensors = [layout.broadcast_to(t, shape) for t in operands if isinstance(t, Tensor)]
    slots = tensors + [tensors[0]] * (3 - len(tensors))  # a slot the op never reads gets a's view
    dims, strides = _merge_dims(shape, [t.strides for t in slots] + [out.strides])
    contiguous = len(dims) <= 1 and all(s == (1,) * len(dims) for s in strides)
    params = {"numel": out.numel, "ndim": len(dims), "a_offset": slots[0].offset, "b_offset": slots[1].offset,
              "c_offset": slots[2].offset, "out_offset": out.offset, "alpha": float(alpha),
              "beta": float(beta),
              "scalar": 0.0 if scalar is None else scalar if isinstance(scalar, Expr) else float(scalar),
              "shape": dims, "a_strides": strides[0],
              "b_strides": strides[1], "c_strides": strides[2], "out_strides": strides[3], **epilogue.params(ep)}
    types = {"A": slots[0].dtype, "B": slots[1].dtype, "C": slots[2].dtype, "T": compute or out_dtype,
             "Out": out_dtype}
    consts = {k: dtypes.dtype(v).wgsl for k, v in types.items()}  # float16 and bfloat16 compute as f32
    if consts["T"] == "f16":  # f16 is a storage form: arithmetic stays f32
        consts["T"] = "f32"
    tag = ",f16" if "f16" in consts.values() else ""  # f16 activations (half_storage.py)
    name = f"elementwise[{op}{tag}]" if op != "copy" or not ep else f"elementwise[{ep.activation}{tag}]"
    if gate is not None:
        name = f"elementwise[{gate.activation}*{tag}]"
    if op == "copy" and consts["A"] != consts["Out"]:
        name = f"elementwise[{types['A']}->{out_dtype}{tag}]"
    spec = KernelSpec.of(FILE, name + (epilogue.suffix(ep) if op != "copy" else ""), consts=consts,
                         requires=(F16,) if tag else (),
                         overrides={"OP": OP_CODES[op], "B_SCALAR": scalar is not None, "CONTIGUOUS": contiguous,
                                    **epilogue.overrides(ep),
                                    **({"GATE": epilogue.CODES[gate.activation]} if gate else {})})
    ctx.dispatch(spec, slots + [out], params, elements=out.numel)
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
    """Why a Python number cannot take part in `compute` arithmetic (None when it can): integer arithmetic is
    i32 arithmetic."""
    if not isinstance(value, Number) or dtypes.category(compute) == 2:
        return None
    if not math.isfinite(float(value)) or float(value) != int(value) or not -INT32 <= int(value) < INT32:
        return f"scalar {value} in {compute} arithmetic must be an integer that fits in int32"
    return None


def _check_arithmetic(op: str):
    def check(node: NodeView) -> str | None:
        out = node.out.dtype
        if out == "bool" and op not in BOOL_OPS:
            return f"{op} producing bool is not supported"
        if dtypes.category(out) == 1 and op not in INTEGER_OPS:
            return f"{op} producing {out} is not supported (integer {op} is float32 only here)"
        alpha = node.args.get("alpha", 1)
        if dtypes.category(out) < 2 and isinstance(alpha, Number) and abs(alpha) > EXACT_F32_INT:
            return f"alpha {alpha} in {out} arithmetic must have magnitude <= 2**24"
        scalars = (node.args.get("self"), node.args.get("other"), alpha)
        return _limits(node) or next(filter(None, (_scalar_fits(v, out) for v in scalars)), None)
    return check


def _dtype_of(v) -> object:
    """What dtypes.promote takes for an operand: a tensor's dtype, or the number itself (a dynamic size is an
    integer)."""
    return 0 if isinstance(v, Expr) else v if isinstance(v, Number) else v.dtype


def _check_comparison(node: NodeView) -> str | None:
    a, b = node.args["self"], node.args["other"]
    return _limits(node) or _scalar_fits(b, dtypes.promote(a.dtype, _dtype_of(b)))


def _check_where(node: NodeView) -> str | None:
    if node.args["condition"].dtype != "bool":
        return f"where's condition must be bool, got {node.args['condition'].dtype}"
    return _limits(node)


def _check_cast(node: NodeView) -> str | None:
    extra = {k: v for k, v in node.args.items() if k in ("layout", "pin_memory") and v not in (None, "torch.strided")}
    if extra:
        return f"_to_copy with {extra} is not supported"
    return _limits(node)


def _check_activation(node: NodeView) -> str | None:
    """Float results run as activations (any input dtype, converted on load); integer relu, clamp and hardtanh
    as integer maximum / minimum / clamp with integer bounds."""
    bounds = [node.args.get(k) for k in ("min", "max", "min_val", "max_val")]
    if any(isinstance(v, bool) for v in bounds):
        return f"{node.target} with boolean bounds is not supported"
    if not dtypes.is_float(node.out.dtype):
        if node.target not in ("aten.relu.default", "aten.clamp.default", "aten.hardtanh.default"):
            return f"{node.target} producing {node.out.dtype} is not supported"
        return _limits(node) or next(filter(None, (_scalar_fits(v, node.out.dtype) for v in bounds)), None)
    return _limits(node)


# -- lowerings -------------------------------------------------------------------------------------------------

def _number(ctx: Builder, node: NodeView, value: Number, dtype: str) -> Tensor | Number:
    """A Python number as an operand in `dtype` arithmetic: as itself (it travels in Params as f32) where f32
    holds it exactly, else as a 0-d constant."""
    if dtypes.category(dtype) == 2 or abs(value) <= EXACT_F32_INT:
        return value
    return ctx.constant(f"{node.name}_scalar", dtypes.scalar(value, dtype), dtype)


def _lower_binary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a, b = node.args["self"], node.args["other"] if "other" in node.args else node.args["exponent"]
        alpha = node.args.get("alpha", 1)
        out = node.out
        op_ = DIV_MODES[node.args["rounding_mode"]] if op == "div_mode" else op
        if op_ == "add" and out.dtype == "bool":
            op_, alpha = "or", 1
        if isinstance(b, Number):
            b = _number(ctx, node, b, out.dtype)
        if isinstance(a, Number):  # a scalar on the left: only add and mul are commutative
            if op_ in ("add", "mul"):
                a, b = b, a
            elif op_ == "sub":
                return emit(ctx, "rsub", [b, a], out.shape, out_dtype=node.storage(), alpha=alpha,
                            ep=node.epilogue)
            else:
                a = ctx.constant(f"{node.name}_scalar", dtypes.scalar(a, out.dtype), out.dtype)
        return emit(ctx, op_, [a, b], out.shape, out_dtype=node.storage(), alpha=alpha, ep=node.epilogue)

    return lower


def _lower_unary(op: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        return emit(ctx, op, [node.args["self"], 0.0], node.out.shape, out_dtype=node.storage(), ep=node.epilogue)

    return lower


def _lower_predicate(op: str):
    """Comparisons and logical ops: a bool result, computed in the inputs' promoted dtype."""
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        a, b = node.args["self"], node.args.get("other")
        if b is None:  # logical_not, isnan, isinf
            return emit(ctx, op, [a, 0], node.out.shape, out_dtype="bool", compute=a.dtype)
        compute = dtypes.promote(a.dtype, _dtype_of(b))
        if isinstance(b, Number):
            b = _number(ctx, node, b, compute)
        return emit(ctx, op, [a, b], node.out.shape, out_dtype="bool", compute=compute)

    return lower


def _bounds(node: NodeView) -> tuple:
    a = node.args
    if node.target == "aten.relu.default":
        return 0, None
    if node.target == "aten.hardtanh.default":
        return a["min_val"], a["max_val"]
    return a["min"], a["max"]


def _clamp(ctx: Builder, node: NodeView, lo, hi) -> Tensor:
    """x clamped to [lo, hi] (either may be None: unbounded), as maximum, minimum or clamp; bounds are tensors or
    numbers. NaN in x or a bound gives NaN."""
    x, out = node.args["self"], node.out
    lo, hi = (_number(ctx, node, v, out.dtype) if isinstance(v, Number) else v for v in (lo, hi))
    if lo is None or hi is None:
        op, bound = ("minimum", hi) if lo is None else ("maximum", lo)
        return emit(ctx, op, [x, bound] if bound is not None else [x], out.shape, out_dtype=node.storage())
    if isinstance(hi, Number):
        hi = ctx.constant(f"{node.name}_max", dtypes.scalar(hi, out.dtype), out.dtype)
    if isinstance(lo, Number):  # the kernel takes a scalar in b's slot only
        lo = ctx.constant(f"{node.name}_min", dtypes.scalar(lo, out.dtype), out.dtype)
    return emit(ctx, "clamp", [x, lo, hi], out.shape, out_dtype=node.storage())


@register(*ACTIVATIONS, check=_check_activation, dynamic=True, half=True)
def activation(ctx: Builder, node: NodeView) -> Tensor:
    if not dtypes.is_float(node.out.dtype):  # integer relu / clamp / hardtanh
        return _clamp(ctx, node, *_bounds(node))
    return emit(ctx, "copy", [node.args["self"]], node.out.shape, out_dtype=node.storage(),
                ep=epilogue.of_node(node.target, node.args))


def _check_rrelu(node: NodeView) -> str | None:
    if node.args["training"]:
        return ("rrelu in training mode draws a random slope per element (random number generation: a compiled "
                "program has no random state to match torch's generator); export the model in eval() mode")
    return _limits(node)


@register("aten.rrelu_with_noise_functional.default", check=_check_rrelu, dynamic=True)
def rrelu(ctx: Builder, node: NodeView) -> list[Tensor]:
    """Inference rrelu: leaky_relu with the slope (lower + upper) / 2; the noise comes back as it went in."""
    a = node.args
    slope = (float(a["lower"]) + float(a["upper"])) / 2
    out = emit(ctx, "copy", [a["self"]], node.outputs[0].shape, out_dtype=node.outputs[0].dtype,
               ep=Epilogue("leaky_relu", slope))
    return [out, a["noise"]]


@register("aten.clamp.Tensor", check=_limits, dynamic=True, half=True)
def clamp_tensor(ctx: Builder, node: NodeView) -> Tensor:
    return _clamp(ctx, node, node.args["min"], node.args["max"])


@register(*ROUNDING, check=_limits, dynamic=True, half=True)
def rounding(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    if not dtypes.is_float(node.out.dtype):  # integers are their own ceil, floor, round and trunc
        return x
    return emit(ctx, ROUNDING[node.target], [x, 0.0], x.shape, out_dtype=node.storage())


def _check_round_decimals(node: NodeView) -> str | None:
    if abs(node.args["decimals"]) > 38:
        return f"round with {node.args['decimals']} decimals is not supported (float32 spans 10**±38)"
    return _limits(node)


@register("aten.round.decimals", check=_check_round_decimals, dynamic=True, half=True)
def round_decimals(ctx: Builder, node: NodeView) -> Tensor:
    """torch's float32 formula: round(x * 10^d) / 10^d, or round(x / 10^-d) * 10^-d for d < 0."""
    d = node.args["decimals"]
    op = "round" if d >= 0 else "round_tens"
    return emit(ctx, op, [node.args["self"], 0.0], node.out.shape, out_dtype=node.storage(),
                alpha=float(np.float32(10.0 ** abs(d))))


@register("aten.sign.default", check=_limits, dynamic=True, half=True)
def sign(ctx: Builder, node: NodeView) -> Tensor:
    return emit(ctx, "sign", [node.args["self"], 0], node.out.shape, out_dtype=node.storage())


def _check_elu(node: NodeView) -> str | None:
    if not dtypes.is_float(node.out.dtype):
        return f"elu producing {node.out.dtype} is not supported"
    return _limits(node)


@register("aten.elu.default", check=_check_elu, epilogue=True, dynamic=True, half=True)
def elu(ctx: Builder, node: NodeView) -> Tensor:
    """scale * (x > 0 ? x : alpha * expm1(input_scale * x)); selu is elu with its constants."""
    a = node.args
    return emit(ctx, "elu", [a["self"], float(a["scale"])], node.out.shape, out_dtype=node.storage(),
                alpha=float(a["alpha"]), beta=float(a["input_scale"]), ep=node.epilogue)


@register("aten.bitwise_not.default", check=_limits, dynamic=True)
def bitwise_not(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    return emit(ctx, "not" if x.dtype == "bool" else "bitnot", [x, 0], x.shape, out_dtype=x.dtype)


def _check_creation(node: NodeView) -> str | None:
    if node.out.dtype not in (*dtypes.FLOATS, "int64", "int32"):
        return f"{node.target} of {node.out.dtype} is not supported"
    step = node.args.get("step", 1)
    if not isinstance(step, Number) or not math.isfinite(step):
        return f"{node.target} with step {step!r} is not supported"
    return _scalar_fits(node.args.get("start", 0), node.out.dtype) if isinstance(node.args.get("start"), Number) \
        else None


# Creation ops reach lowering only when their sizes or values are dynamic (otherwise they fold to constants).
@register("aten.arange.default", "aten.arange.start", "aten.arange.start_step", "aten.full.default",
          "aten.full_like.default", "aten.scalar_tensor.default", check=_check_creation, dynamic=True)
def arange_or_full(ctx: Builder, node: NodeView) -> Tensor:
    """arange: start + step * i; full and scalar_tensor: the value (a step of 0). No operand is read (a 0-d
    view of the dummy buffer stands in for one)."""
    a = node.args
    fill = a.get("fill_value", a.get("s"))
    start, step = (fill, 0) if fill is not None else (a.get("start", 0), a.get("step", 1))
    nothing = Tensor(ctx.dummy().buffer, (), (), 0, "float32")
    return emit(ctx, "arange", [nothing, start], node.out.shape, out_dtype=node.out.dtype, alpha=step)


@register("aten.where.self", check=_check_where, dynamic=True, half=True)
def where(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    return emit(ctx, "where", [a["condition"], a["self"], a["other"]], node.out.shape, out_dtype=node.storage())


@register(ROPE, check=_limits, dynamic=True, half=True)
def rope(ctx: Builder, node: NodeView) -> Tensor:
    """Rotary position embedding as transformers applies it (rope_fusion.py): x * cos + rotate_half(x) * sin,
    cos and sin broadcast to x, rotate_half over x's last dim."""
    a = node.args
    return emit(ctx, "rope", [a["input"], a["cos"], a["sin"]], node.out.shape, out_dtype=node.storage(),
                alpha=node.out.shape[-1] // 2)


@register(GATED, check=_limits, epilogue=True, dynamic=True, half=True)
def gated(ctx: Builder, node: NodeView) -> Tensor:
    """A gated product (gated_products.py): act(gate) * input, act an activation of ops/epilogue.py with its
    bounds, both operands broadcast to the output."""
    a = node.args
    gate = Epilogue(a["activation"], a["lo"], a["hi"])
    return emit(ctx, "gated", [a["gate"], a["input"]], node.out.shape, out_dtype=node.storage(), ep=node.epilogue,
                gate=gate)


@register("aten.pow.Scalar", check=_check_arithmetic("pow"), dynamic=True, half=True)
def pow_scalar_base(ctx: Builder, node: NodeView) -> Tensor:
    base = ctx.constant(f"{node.name}_base", np.full((), node.args["self"], np.float32))
    return emit(ctx, "pow", [base, node.args["exponent"]], node.out.shape, out_dtype=node.storage())


@register("aten._to_copy.default", check=_check_cast, dynamic=True)
def to_copy(ctx: Builder, node: NodeView) -> Tensor:
    """A cast. Where the device form holds every value of the source exactly in the target's (int64 and int32
    share i32; float16 and bfloat16 values are float32 values) it is a view; to bool is `!= 0`; to float16
    or bfloat16 rounds to nearest even (kept as f32); the others convert on store (float to int truncates
    toward zero, as torch does)."""
    x, want = node.args["self"], node.out.dtype
    if x.dtype == want or {x.dtype, want} == {"int32", "int64"} or (want == "float32" and dtypes.is_float(x.dtype)):
        return replace(x, dtype=want)
    if want == "bool":
        return emit(ctx, "ne", [x, 0], x.shape, out_dtype="bool", compute=x.dtype)
    if want in ROUND_TO and x.dtype != "bool":
        return emit(ctx, ROUND_TO[want], [x, 0.0], x.shape, out_dtype=want)
    return emit(ctx, "copy", [x], x.shape, out_dtype=want, compute=x.dtype)


ROUND_TO = {"float16": "round_f16", "bfloat16": "round_bf16"}  # the casts that round


_FUSES_ACTIVATION = {"add", "sub", "rsub", "mul", "div", "maximum", "minimum"}
for _target, _op in ARITHMETIC.items():
    register(_target, check=_check_arithmetic(_op), epilogue=_op in _FUSES_ACTIVATION, dynamic=True, half=True)(
        _lower_binary(_op))
for _target, _mode in [("aten.div.Tensor_mode", "div_mode"), ("aten.div.Scalar_mode", "div_mode")]:
    register(_target, check=lambda node: _check_arithmetic(DIV_MODES[node.args["rounding_mode"]])(node),
             dynamic=True, half=True)(_lower_binary(_mode))
for _target, _op in UNARY.items():
    register(_target, check=_check_arithmetic(_op), epilogue=True, dynamic=True, half=True)(_lower_unary(_op))
for _op, _targets in COMPARISONS.items():
    register(*_targets, check=_check_comparison, dynamic=True, half=True)(_lower_predicate(_op))
for _target, _op in [*LOGICAL.items(), ("aten.isnan.default", "isnan"), ("aten.isinf.default", "isinf"),
                     ("aten.signbit.default", "signbit")]:
    register(_target, check=_limits, dynamic=True, half=True)(_lower_predicate(_op))


def uniform_input(lo, hi, shape=(37, 41), seed=0, specials=()):
    """A case's input: uniform floats in [lo, hi), the `specials` (NaN, ±inf, ±0, domain edges) written over the
    first few."""
    def make():
        import torch

        x = lo + (hi - lo) * torch.rand(shape, generator=torch.Generator().manual_seed(seed))
        x.view(-1)[:len(specials)] = torch.tensor(specials, dtype=torch.float32)
        return x
    return make


def cases() -> list[OpCase]:
    import torch

    def ints(shape, lo=-50, hi=50, seed=0):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

    def mask(shape, seed=0):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(seed)) > 0.5

    uniform = uniform_input

    nan, inf = float("nan"), float("inf")
    below_one = [1.0 - 2.0**-k for k in (24, 20, 16, 12, 8, 4, 1)]  # float32 values approaching 1
    edges = [nan, inf, -inf, 0.0, -0.0, 1.0, -1.0, *below_one, *(-v for v in below_one)]
    halves = [0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.125, 1234.5678]
    F = torch.nn.functional
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
        OpCase("int_arithmetic", lambda i, j: (i + j * 3 - 7, (i - j).abs(), -i, torch.maximum(i, j), i ** 2,
                                               (i % 5) ** (j % 4), i.int() ** 3, torch.pow(i, j.abs() % 3 - 1)),
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
        # transformers' apply_rotary_pos_emb, rewritten into one webgpu.rope node (rope_fusion.py).
        OpCase("rope_transposed_broadcast", lambda q, cos, sin: (lambda x: x * cos[:, None] + torch.cat(
            (-x[..., 19:], x[..., :19]), dim=-1) * sin[:, None])(q.transpose(1, 2)), [(2, 7, 3, 38), (2, 7, 38),
                                                                                      (2, 7, 38)]),
        OpCase("rope_dynamic_positions", lambda x, cos, sin: x * cos + torch.cat((-x[..., 19:], x[..., :19]), dim=-1)
               * sin, [(1, 3, 23, 38), (23, 38), (23, 38)],
               dynamic_shapes=({2: (s := torch.export.Dim("s", min=2, max=64))}, {0: s}, {0: s})),
        OpCase("rope_half_width_one", lambda x, cos, sin: torch.cat((-x[..., 1:], x[..., :1]), dim=-1) * sin
               + cos * x, [(5, 3, 2), (2,), (3, 1)]),
        # act(gate) * up, rewritten into one webgpu.gated node (gated_products.py): either side, gelu in both
        # forms, a broadcast up, a bounded activation; beside them an activation read twice, which stays apart.
        OpCase("gated_products", lambda g, u, b: (F.silu(g) * u, u * F.gelu(g, approximate="tanh"),
                                                  F.gelu(g) * b, F.hardtanh(g, -0.5, 0.75) * u,
                                                  F.relu(g) * u + F.relu(g)), [(3, 37, 41), (3, 37, 41), (41,)]),
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
                          torch.full_like(a, 7.0), a * torch.scalar_tensor(a.shape[0])),
               [(37,)], dynamic_shapes=({0: torch.export.Dim("n", min=2, max=64)},)),
        OpCase("fill", lambda a: (a.clone().fill_(2.5) * a, torch.ops.aten.fill.Scalar(a, -1.0)), [(37, 41)]),
        OpCase("half_casts_of_0d", lambda x: (x.bfloat16(), x.half(), x.bfloat16() * 3), [()]),  # keep shape ()
        OpCase("cast_of_transposed", lambda i: i.t().float() * 0.5, [ints((37, 41))]),
        # Float functions: their domain edges, NaN and ±inf give torch's values; ints and bools promote to float.
        OpCase("inverse_trig", lambda x: (torch.asin(x), torch.acos(x), torch.atan(x * 5.0), torch.atanh(x)),
               [uniform(-1.1, 1.1, specials=edges)]),
        OpCase("hyperbolic", lambda x: (torch.sinh(x), torch.cosh(x), torch.asinh(x), torch.acosh(x.abs() + 1.0)),
               [uniform(-12.0, 12.0, specials=[nan, inf, -inf, 0.0, -0.0, 1e-30])]),
        OpCase("hyperbolic_extremes", lambda x: (torch.sinh(x), torch.cosh(x), torch.asinh(x), torch.acosh(x.abs())),
               [lambda: torch.tensor([88.5, -88.5, 89.0, -89.0, 3e38, -3e38, 1e20, -1e20, 5000.0, -4000.0, 1.0])]),
        # Near 0 (near 1 for the logs), where only relative accuracy tells a good implementation from WGSL's.
        OpCase("functions_near_zero", lambda x, y: (torch.sinh(x), torch.asinh(x), torch.atanh(x), torch.tan(x),
                                                    torch.asin(x), torch.atan(x), torch.log(y), torch.log2(y),
                                                    torch.log10(y)),
               [uniform(-1e-3, 1e-3), uniform(0.999, 1.001, seed=1)]),
        OpCase("tan_and_atan2_with_zeros", lambda x, y, z: (torch.tan(x), torch.atan2(y, z), torch.atan2(z, y)),
               [uniform(-1.4, 1.4), uniform(-3, 3, seed=1, specials=[0.0, -0.0, 0.0, -0.0, 1.0, -1.0, nan]),
                uniform(-3, 3, seed=2, specials=[0.0, 0.0, -0.0, -0.0, 0.0, -0.0, 1.0])]),
        OpCase("exp_log_family", lambda x: (torch.expm1(x), torch.log1p(x), torch.log2(x), torch.log10(x)),
               [uniform(-0.99, 4.0, specials=[nan, inf, -inf, 0.0, -1.0, -1.5, 1e-30, 1e30])]),
        OpCase("expm1_log1p_near_zero", lambda x: (torch.expm1(x), torch.log1p(x)), [uniform(-1e-4, 1e-4)]),
        OpCase("erf_and_erfinv", lambda x, y: (torch.erf(x), torch.erfinv(y)),
               [uniform(-4.0, 4.0, specials=[nan, inf, -inf, 1e-30]), uniform(-1.0, 1.0, seed=1, specials=edges)]),
        OpCase("erf_near_zero", lambda x: torch.erf(x), [uniform(-1e-4, 1e-4)]),
        OpCase("erfinv_near_one", lambda x: torch.erfinv(x), [uniform(0.999, 1.0, (1031,), specials=below_one)]),
        OpCase("float_functions_of_ints_and_bools",
               lambda i, m: (torch.atan2(i, i.t()), torch.sinh(i.clamp(-5, 5)), torch.erf(m), torch.log1p(m),
                             torch.sigmoid(i), torch.tanh(m)), [ints((37, 37), -9, 9), mask((37, 41))]),
        OpCase("rounding", lambda x, i: (torch.ceil(x), torch.floor(x), torch.round(x), torch.trunc(x),
                                         torch.round(i), torch.floor(i), torch.round(x, decimals=1),
                                         torch.round(i * 50.0, decimals=-2), torch.frac(x)),
               [uniform(-9.0, 9.0, (89,), specials=[*halves, nan, inf, -inf]), ints((89,))]),
        OpCase("sign_of_every_dtype", lambda x, i, m: (torch.sign(x), torch.sign(i), torch.sign(m), torch.sgn(x)),
               [uniform(-2, 2, specials=[nan, inf, -inf, 0.0, -0.0]), ints((37, 41), -2, 3), mask((37, 41))]),
        # NaN-ignoring max / min, copysign and signbit on bits (±0, -NaN), hypot past float32's squares, exp2.
        OpCase("fmax_fmin_of_floats_and_ints", lambda x, y, i, j: (torch.fmax(x, y), torch.fmin(x, y.t()),
                                                                   torch.fmax(i, j), torch.fmin(i, j.flip(0))),
               [uniform(-2, 2, (37, 37), specials=[nan, nan, 1.0, inf, -inf, 0.0]),
                uniform(-2, 2, (37, 37), seed=1, specials=[nan, 2.0, nan, -inf, nan, -0.0]),
                ints((37, 37)), ints((37,), seed=1)]),
        OpCase("copysign_signbit", lambda x, y, i: (torch.copysign(x, y), torch.copysign(x, -2.0), torch.signbit(x),
                                                    torch.signbit(i), torch.copysign(i, y)),
               [uniform(-3, 3, specials=[nan, inf, -inf, 0.0, -0.0, 5.0]),
                uniform(-3, 3, seed=1, specials=[-0.0, -1.0, 0.0, -nan, nan, -inf]), ints((37, 41))]),
        OpCase("hypot_exp2", lambda x, y: (torch.hypot(x, y), torch.hypot(x * 1e30, y * 1e30),
                                           torch.hypot(x * 1e-30, y), torch.exp2(x * 20.0)),
               [uniform(-3, 3, specials=[inf, nan, -inf, 0.0, nan, 3.0]),
                uniform(-3, 3, seed=1, specials=[nan, inf, 1.0, 0.0, nan, 4.0])]),
        # The gamma family at its poles, across the reflection point 0.5, for large and tiny arguments; erfc's tail.
        OpCase("lgamma_digamma_erfc_angle", lambda x, y, i: (torch.lgamma(x), torch.digamma(x), torch.erfc(y),
                                                             torch.angle(x), torch.lgamma(i), torch.digamma(i)),
               [uniform(-9.5, 9.5, specials=[nan, inf, -inf, 0.0, -0.0, -1.0, -2.0, 0.5, 1.0, 2.0, -7.5, 0.49999997]),
                uniform(-6.0, 12.0, seed=1, specials=[nan, inf, -inf, 0.0, 0.49999997, 0.5, 5.0, 9.0]),
                ints((37, 41), 1, 30)]),
        OpCase("lgamma_digamma_extremes", lambda x: (torch.lgamma(x), torch.digamma(x)),
               [lambda: torch.tensor([1e-30, -1e-30, 1e30, -1e6 - 0.5, 1e6 + 0.25, 3e-8, -3e-8, 100.5])]),
        OpCase("isnan_isinf_isfinite", lambda x, i: (torch.isnan(x), torch.isinf(x), torch.isfinite(x), torch.isnan(i),
                                                     torch.isinf(i), torch.nan_to_num(x, 9.0, 5.0, -5.0),
                                                     x != x, x != 1.0, x.bool(), x == x),
               [uniform(-2, 2, specials=[nan, inf, -inf, 0.0, 3e38, -nan]), ints((37, 41))]),
        OpCase("logical_xor_of_every_dtype", lambda x, i, m: (torch.logical_xor(x, i), torch.logical_xor(m, i),
                                                              torch.logical_xor(m, m.t())),
               [uniform(-1, 1, (37, 37), specials=[0.0, nan, 0.0]), ints((37, 37), -1, 2), mask((37, 37))]),
        OpCase("rrelu_in_eval_mode", lambda x: (F.rrelu(x), F.rrelu(x, 0.1, 0.6, training=False)), [(37, 41)]),
        OpCase("elu_selu_celu_leaky_relu", lambda x: (F.elu(x), F.selu(x), F.celu(x, 0.7), F.leaky_relu(x, 0.2),
                                                      F.elu(x, alpha=0.5), torch.ops.aten.elu(x, 1.3, 0.9, 2.0)),
               [uniform(-6, 6, specials=[nan, inf, -inf, -0.0])]),
        OpCase("bitwise_ints_and_bools", lambda i, j, m, n: (i & j, i | 5, i ^ j, ~i, j & 0x7FFFFFF0, 3 ^ i,
                                                             m ^ n, m & n, m | True, ~m, m ^ 1, i | m),
               [ints((37, 41), -2**20, 2**20), ints((41,), 0, 2**31 - 1, seed=1), mask((37, 41)),
                mask((41,), seed=1)]),
        OpCase("bitwise_int32", lambda i, j: (i & j, i | j, i ^ 7, ~j),
               [lambda: ints((37, 41), -2**31, 2**31 - 1)().int(), lambda: ints((41,), -99, 99, seed=1)().int()]),
        # remainder follows the divisor's sign, fmod the dividend's; both ways round for ints and floats.
        OpCase("remainder_and_fmod_signs", lambda x, y, i, j: (
            torch.remainder(x, y), torch.fmod(x, y), x % 1.5, torch.fmod(x, -1.5), 2.5 % y,
            torch.remainder(i, j), torch.fmod(i, j), i % 7, torch.fmod(i, -7), i % -7, 7 % j,
            torch.remainder(i, 2.5), torch.fmod(i.int(), j.int())),
            [uniform(-20, 20, specials=[-7.0, 7.0, -7.0, 7.0, 5.0, -0.0, 6.0]),
             uniform(-4, 4, seed=1, specials=[3.0, -3.0, -3.0, 3.0, 0.0, 2.0, 1.5]),
             ints((37, 41), -100, 100), lambda: ints((37, 41), 1, 9, seed=1)() * (1 - 2 * mask((37, 41))().long())]),
        OpCase("floor_and_trunc_division", lambda x, y, i, j: (
            torch.div(x, y, rounding_mode="floor"), torch.div(x, y, rounding_mode="trunc"), x // y, x // 0.75,
            torch.div(x, 3.0, rounding_mode="trunc"), i // j, torch.div(i, j, rounding_mode="trunc"),
            torch.div(i, -3, rounding_mode="floor"), i // 4, torch.div(i, 2.5, rounding_mode="floor"),
            torch.div(i, j, rounding_mode=None), torch.ops.aten.div.Scalar_mode(i, -3, rounding_mode="floor"),
            torch.ops.aten.div.Scalar_mode(x, 0.75, rounding_mode="trunc")),
            [uniform(-20, 20, specials=[-7.0, 7.0, -7.0, 7.0, 1.0, -0.0, 6.0]),
             uniform(-4, 4, seed=1, specials=[3.0, -3.0, -3.0, 3.0, 0.0, 2.0, 1.5]),
             ints((37, 41), -100, 100), lambda: ints((37, 41), 1, 9, seed=1)() * (1 - 2 * mask((37, 41))().long())]),
        OpCase("clamp_tensor_bounds_and_ints", lambda x, lo, hi, i, m: (
            torch.clamp(x, lo, hi), torch.clamp(x, max=hi), torch.clamp(x, min=lo.t()), torch.clamp(i, -3, 4),
            torch.clamp(i, min=2), torch.clamp_max(i, -1), torch.relu(i), F.hardtanh(i), torch.clamp(m, 0, 1),
            torch.clamp(i, -2.5, 2.5), torch.clamp(i, i.t() - 3, i.t() + 2), torch.clamp(i.int(), -2**30, 2**30)),
            [uniform(-3, 3, (37, 37), specials=[nan, 0.5, 0.5]), uniform(-2, 0, (37, 37), seed=1, specials=[0.0, nan]),
             uniform(0, 2, (37, 37), seed=2, specials=[1.0, 1.0, nan]), ints((37, 37), -9, 9), mask((37, 37))]),
        OpCase("where_mixed_dtypes", lambda m, x, i: (torch.where(m, x, i), torch.where(m, i, 7),
                                                      torch.where(m, x, 0.5), torch.where(m, i.int(), i)),
               [mask((37, 41)), (37, 41), ints((37, 41))]),
        # fill_ decomposes to full_like (folded at compile time); clamp_min / clamp_max to clamp.
        OpCase("fill_and_clamp_min_max", lambda x: (torch.zeros_like(x).fill_(3.0) + x, torch.clamp_min(x, 0.1),
                                                    torch.clamp_max(x, -0.2)), [(37, 41)]),
        OpCase("int_scalars_beyond_float_precision", lambda i: (i + 2**30, i * 40_000_001, i == 2**30 + 1, i - 2**29),
               [ints((37, 41), -9, 9)]),
        # NaN propagates as in torch (WGSL's max, clamp and tanh need not return it), huge values stay finite.
        OpCase("nan_through_activations", lambda x: (torch.relu(x), torch.clamp(x, -0.5, 0.5), F.relu6(x),
                                                     F.hardtanh(x), torch.tanh(x), torch.sigmoid(x), F.gelu(x),
                                                     F.gelu(x, approximate="tanh"), F.leaky_relu(x), F.silu(x)),
               [uniform(-3, 3, specials=[nan, -nan, 0.0, -0.0])]),
        OpCase("huge_through_activations", lambda x: (torch.relu(x), torch.tanh(x), torch.sigmoid(x), F.gelu(x),
                                                      F.gelu(x, approximate="tanh"), F.silu(x), F.elu(x)),
               [lambda: torch.tensor([1e30, -1e30, 3e38, -3e38, 1e20, -1e20, 100.0, -100.0, inf, -inf])]),
        OpCase("nan_through_maximum_minimum", lambda x, y: (torch.maximum(x, y), torch.minimum(x, y),
                                                            torch.clamp(x, min=y)),
               [uniform(-3, 3, specials=[nan, 1.0, nan, -inf]), uniform(-3, 3, seed=1, specials=[1.0, nan, nan, nan])]),
        OpCase("nan_through_fused_activation", lambda x, y: (torch.relu(x + y), torch.tanh(x * y)),
               [uniform(-3, 3, specials=[nan, 1.0]), uniform(-3, 3, seed=1, specials=[1.0, nan])]),
    ]
