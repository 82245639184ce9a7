"""The op registry: the single source of truth for which ATen overloads run on WebGPU.

Each op family module registers its lowerings with `@register(...)`, optionally with a `check` that returns
the reason a particular node cannot run (None when it can), and lists its test cases in a `cases()` function.
Registering one overload twice is an error. An op registered here is also kept whole by the frontend's
decomposition (a kernel for the fused op beats its decomposition). A family may also declare a compile option
that forces one of its kernels (`register_option`; compiler/options.py checks the value given).

An overload that will never have a kernel is declared refused (`refuse`) with the reason users then read in
the compile-time error, and in docs/ops.md: beside the family it concerns (batch norm in training mode, in
batch_norm.py), or, when the reason is a policy of the compiler as a whole (training-only ops, random numbers,
data-dependent sizes), in `ops/refused.py`. An overload is registered or refused, never both.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...format import dtypes
from ..graph import Epilogue, TensorMeta

# A check sees the node with tensor arguments as TensorMeta; a lowering sees them as program.Tensor.
# Both carry .shape and .dtype, so checks are written once against either.
Check = Callable[["NodeView"], "str | None"]
Lower = Callable[..., Any]


@dataclass(frozen=True)
class NodeView:
    name: str
    target: str
    args: dict[str, Any]
    outputs: tuple[TensorMeta | None, ...]
    epilogue: Epilogue | None = None  # what this node's kernel must apply to its result (args["residual"], activation)
    outputs_read: frozenset[int] = frozenset({0})  # which of its outputs the graph reads (by index)
    # The state buffer its result is the new value of, when its `self` is that state's value at the start of
    # the call and nothing else reads that: the lowering may update the state in place and return it.
    in_place: Any = None  # Tensor | None
    half: frozenset[int] = frozenset()  # outputs its kernels store as f16 activations (precision="float16")

    @property
    def out(self) -> TensorMeta:
        (meta,) = self.outputs
        return meta

    def storage(self, i: int = 0) -> str:
        """The dtype output i is stored in: "f16" where the planner of half activations chose it
        (half_storage.py), else the output's own."""
        return dtypes.F16.name if i in self.half else self.outputs[i].dtype


@dataclass(frozen=True)
class OpDef:
    target: str
    lower: Lower
    check: Check | None
    module: str
    view: bool  # costs no dispatch: the result is a strided view of an argument
    epilogue: bool  # its lowering applies node.epilogue's activation, so an activation of its result can fuse
    residual: bool  # … and its residual too, so an add of its result and another value can fuse
    dynamic: bool  # its lowering handles dynamic sizes (symbolic.Expr in shapes and arguments)
    # Under precision="float16": the arguments its kernels read f16 activations from (True: every tensor
    # argument), and then it stores the float outputs NodeView.half names as f16. Empty: it reads and writes
    # float activations in their model dtype (float32 on the device).
    half: tuple[str, ...] | bool
    # Its lowering reads dequantized weights packed where its kernels can (Builder.packed_view); for any other
    # op, lowering first computes the float32 values of every dequantized weight it reads.
    packed: bool = False


@dataclass(frozen=True)
class OpCase:
    """A test case: `fn` is traced by torch.export over seeded random inputs and compared against float64.

    inputs: one entry per positional input: a shape (float32 randn), or a zero-argument callable returning
    a torch tensor (for integer, boolean or specially distributed inputs).
    tol: replaces the dtype's tolerance; `reason` must then say why in one line.
    kwargs: compile options. dynamic_shapes: torch.export's, for the inputs (the case runs at their sizes).
    """

    name: str
    fn: Callable[..., Any]
    inputs: Sequence[Any]
    tol: float | None = None
    reason: str = ""
    marks: tuple[str, ...] = ()
    kwargs: dict = field(default_factory=dict)
    dynamic_shapes: Any = None

    def __post_init__(self):
        if self.tol is not None and not self.reason:
            raise ValueError(f"case {self.name}: a tolerance override needs a reason")

    def example_inputs(self) -> list:
        """The inputs, seeded by the case's name: the same in every run."""
        import torch

        gen = torch.Generator().manual_seed(zlib.crc32(self.name.encode()))
        return [spec() if callable(spec) else torch.randn(spec, generator=gen) for spec in self.inputs]


@dataclass(frozen=True)
class Refusal:
    reason: str  # what the compile-time error says, after the node's op and shapes
    inference: bool  # whether an exported inference graph can hold the op (False: training-only, out= forms)


OPS: dict[str, OpDef] = {}
REFUSED: dict[str, Refusal] = {}
# The families' kernel choices (`compile(ep, conv="direct")`): name -> its choices, the first being the default.
# options.parse rejects unknown names and values.
OPTIONS: dict[str, tuple[str, ...]] = {}


@dataclass(frozen=True)
class CompileOption:
    """A family's kernel choice: read it with `of(ctx.options)`, which gives the default when it was not set."""

    name: str
    choices: tuple[str, ...]  # the first is the default

    def of(self, options) -> str:
        return options.kernels.get(self.name, self.choices[0])


def register_option(name: str, *choices: str) -> CompileOption:
    if name in OPTIONS:
        raise RuntimeError(f"compile option {name!r} is registered twice")
    OPTIONS[name] = choices
    return CompileOption(name, choices)


def refuse(*targets: str, reason: str, inference: bool = True) -> None:
    """Declare `targets` as overloads no kernel runs, with the reason every node of them is refused for."""
    for target in targets:
        if target in REFUSED or target in OPS:
            raise RuntimeError(f"{target} is refused twice, or both registered and refused")
        REFUSED[target] = Refusal(reason, inference)


def register(*targets: str, check: Check | None = None, view: bool = False, epilogue: bool = False,
             residual: bool = False, dynamic: bool = False, half: tuple[str, ...] | bool = (),
             packed: bool = False) -> Callable[[Lower], Lower]:
    def deco(fn: Lower) -> Lower:
        for target in targets:
            if target in REFUSED:
                raise RuntimeError(f"{target} is registered in {fn.__module__} but refused: {REFUSED[target].reason}")
            if target in OPS:
                raise RuntimeError(f"{target} is registered twice ({OPS[target].module} and {fn.__module__})")
            OPS[target] = OpDef(target, fn, check, fn.__module__, view, epilogue, residual, dynamic, half,
                                packed)
        return fn

    return deco
