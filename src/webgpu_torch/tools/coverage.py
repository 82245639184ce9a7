"""How much of PyTorch's core ATen opset compiles, and which overloads the op families' test cases exercise.

Every core overload gets one status: lowered (a kernel or a view; with the dtypes its test cases run, and
those torch takes that its check refuses), decomposed by torch.export into ops that lower (shown by a test
case that compiles through the decomposition), computed at compile time (size computations and creation
ops, which the frontend folds), refused with a declared reason (ops.refuse), or not lowered yet.

The evidence is the test cases themselves: each family's cases are exported together and imported as
`compile` does (compiler.import_graph), recording the overloads that reach lowering and the core overloads
torch.export decomposed on the way. Needs torch; docs/ops.md (opsdoc.py) and tests/test_coverage.py read it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any

import torch

from ..compiler.graph import Graph, TensorMeta, map_refs, values_in
from ..compiler.ops import OPS, REFUSED, NodeView, OpCase, all_cases
from ..format import dtypes

EXAMPLES_PER_OP = 3  # nodes kept per overload for the dtype probe


def core_overloads() -> list[str]:
    """Every ATen overload torch tags core (the opset torch.export decomposes to), as "aten.name.overload"."""
    names = {(s.name.removeprefix("aten::"), s.overload_name or "default")
             for s in torch._C._jit_get_all_schemas() if s.name.startswith("aten::")}
    return sorted(f"aten.{name}.{overload}" for name, overload in names
                  if torch.Tag.core in getattr(getattr(torch.ops.aten, name), overload).tags)


@dataclass
class Trace:
    """What the test cases exercise: the nodes that reach lowering, by overload (a few each), and the core
    overloads torch.export decomposed while importing them, with the families whose cases did."""

    reached: dict[str, list[NodeView]] = field(default_factory=dict)
    decomposed: dict[str, set[str]] = field(default_factory=dict)


@cache
def trace() -> Trace:
    """Every family's cases, exported in one program per family (cases with dynamic shapes alone)."""
    out = Trace()
    for family, cases in all_cases().items():
        static = [c for c in cases if c.dynamic_shapes is None]
        for batch in ([static] if static else []) + [[c] for c in cases if c.dynamic_shapes is not None]:
            graph, seen = _import(batch)
            _record(out, graph)
            for target in seen:
                out.decomposed.setdefault(target, set()).add(family)
    return out


class _Cases(torch.nn.Module):
    """Several cases as one program: each case's fn on its own slice of the inputs."""

    def __init__(self, cases: list[OpCase]):
        super().__init__()
        self.cases = cases

    def forward(self, *inputs):
        outs, at = [], 0
        for case in self.cases:
            outs.append(case.fn(*inputs[at:at + len(case.inputs)]))
            at += len(case.inputs)
        return outs


def _import(cases: list[OpCase]) -> tuple[Graph, set[str]]:
    from ..compiler import frontend, import_graph

    inputs = tuple(x for case in cases for x in case.example_inputs())
    dynamic = None if len(cases) > 1 or cases[0].dynamic_shapes is None else (cases[0].dynamic_shapes,)  # *inputs
    try:
        with frontend.recording_decompositions() as seen:
            return import_graph(torch.export.export(_Cases(cases), inputs, dynamic_shapes=dynamic)), seen
    except Exception as e:
        if len(cases) == 1:
            raise RuntimeError(f"case {cases[0].name} does not import: {e}") from e
        for case in cases:  # name the case that fails
            _import([case])
        raise


def _record(out: Trace, graph: Graph) -> None:
    from ..compiler.lowering import outputs_read

    metas, read = graph.metas(), outputs_read(graph)
    for node in graph.nodes:
        examples = out.reached.setdefault(node.target, [])
        if len(examples) < EXAMPLES_PER_OP:
            examples.append(NodeView(node.name, node.target, map_refs(node.args, metas.__getitem__), node.outputs,
                                     outputs_read=read[node.name]))


# -- statuses ------------------------------------------------------------------------------------------------------

LOWERED, PARTIAL, DECOMPOSED, FOLDED, REFUSED_, MISSING = (
    "lowered", "lowered for some dtypes", "decomposed by torch.export", "computed at compile time", "refused",
    "not lowered yet")
KINDS = (LOWERED, PARTIAL, DECOMPOSED, FOLDED, REFUSED_, MISSING)
COMPILES = KINDS[:4]


@dataclass(frozen=True)
class Status:
    target: str
    kind: str  # one of LOWERED … MISSING
    detail: str  # dtypes, the case family, the reason
    inference: bool = True  # whether an exported inference graph can hold the overload


def statuses() -> list[Status]:
    """One Status per core overload, in name order."""
    return [status(target) for target in core_overloads()]


def status(target: str) -> Status:
    if target in OPS:
        return _lowered(target)
    if target in REFUSED:
        return Status(target, REFUSED_, REFUSED[target].reason, REFUSED[target].inference)
    op = _op(target)
    if op._schema.returns and all(_is_size(r.type) for r in op._schema.returns):
        return Status(target, FOLDED, "a size computation: the frontend evaluates it (symbolically for dynamic sizes)")
    families = trace().decomposed.get(target)
    if families:
        where = ", ".join(f"`ops/{f}.py`" for f in sorted(families))
        return Status(target, DECOMPOSED, f"compiles in the cases of {where}")
    if not any(_is_tensor(a.type) for a in op._schema.arguments) and \
            torch.Tag.nondeterministic_seeded not in op.tags:
        return Status(target, FOLDED, "a creation op: folded into a constant (static sizes)")
    if op in _export_decomposes():
        return Status(target, MISSING, "torch.export decomposes it, but no test case shows its decomposition compiles")
    return Status(target, MISSING, f"no WebGPU kernel for {target}")


@cache
def _export_decomposes() -> frozenset:
    return frozenset(torch.export.default_decompositions())


def _op(target: str):
    _, name, overload = target.split(".")
    return getattr(getattr(torch.ops.aten, name), overload)


def _is_size(t) -> bool:
    return str(t) in ("SymInt", "int", "SymBool", "bool")


def _is_tensor(t) -> bool:
    return "Tensor" in str(t)


def _lowered(target: str) -> Status:
    examples = trace().reached.get(target, [])
    if OPS[target].view:
        return Status(target, LOWERED, "view (no dispatch)")
    tested = sorted({m.dtype for node in examples for m in _operands(node) or node.outputs if m},
                    key=list(dtypes.DTYPES).index)
    refused = _refused_dtypes(target, examples)
    if refused:
        not_for = ", ".join(refused)
        return Status(target, PARTIAL, f"{', '.join(tested)}; not {not_for} (torch takes {_them(refused)}): "
                                       f"{next(iter(refused.values()))}")
    return Status(target, LOWERED, ", ".join(tested))


def _them(refused: dict) -> str:
    return "it" if len(refused) == 1 else "them"


def _operands(node: NodeView) -> list[TensorMeta]:
    return [v for v in values_in(node.args) if isinstance(v, TensorMeta)]


def _tensors(node: NodeView) -> list[TensorMeta]:
    return _operands(node) + [m for m in node.outputs if m]


# -- the dtype probe -----------------------------------------------------------------------------------------------

def _refused_dtypes(target: str, examples: list[NodeView]) -> dict[str, str]:
    """Device dtypes that torch's CPU kernel takes in place of an example's float32 operands and the overload's
    check refuses, each with the check's reason."""
    refused: dict[str, str] = {}
    for node in examples:
        if not any(m.dtype == "float32" for m in _tensors(node)) or any(
                not isinstance(s, int) for m in _tensors(node) for s in m.shape):
            continue
        for dtype in dtypes.DTYPES:
            if dtype == "float32" or dtype in refused:
                continue
            variant = _as_dtype(node, dtype)
            if variant is not None and (reason := _reason(variant)):
                refused[dtype] = reason
    return {d: refused[d] for d in dtypes.DTYPES if d in refused}


def _as_dtype(node: NodeView, dtype: str) -> NodeView | None:
    """The node with its float32 tensor operands in `dtype` and its outputs as torch computes them; None when
    torch's CPU kernel refuses that."""
    def swapped(m: TensorMeta) -> TensorMeta:
        return TensorMeta(m.shape, dtype) if m.dtype == "float32" else m

    def value(m: TensorMeta) -> torch.Tensor:  # indices 0 (in range), other operands 1 (never a zero divisor)
        fill = 0 if dtypes.category(m.dtype) == 1 and m.dtype != dtype else 1
        return torch.full(m.shape, fill, dtype=getattr(torch, swapped(m).dtype))

    names = {a.name for a in _op(node.target)._schema.arguments}
    try:
        with torch.no_grad():
            result = _op(node.target)(**{k: _torch_value(_map_metas(v, value)) for k, v in node.args.items()
                                         if k in names})
    except Exception:  # torch does not take this dtype here
        return None
    results = result if isinstance(result, (tuple, list)) else (result,)
    outs = tuple(TensorMeta(tuple(t.shape), str(t.dtype).removeprefix("torch.")) if isinstance(t, torch.Tensor)
                 else None for t in results)
    return NodeView(node.name, node.target, _map_metas(node.args, swapped), outs, outputs_read=node.outputs_read)


def _map_metas(value: Any, fn) -> Any:
    """An argument value with every TensorMeta inside it replaced by fn(meta)."""
    if isinstance(value, TensorMeta):
        return fn(value)
    if isinstance(value, dict):
        return {k: _map_metas(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(_map_metas(v, fn) for v in value)
    return value


def _torch_value(v: Any) -> Any:
    """A node argument as torch takes it: "float32" as torch.float32, "torch.strided" as torch.strided."""
    if isinstance(v, (list, tuple)):
        return type(v)(_torch_value(x) for x in v)
    if isinstance(v, str):
        named = getattr(torch, v.removeprefix("torch."), None)
        if isinstance(named, (torch.dtype, torch.layout, torch.memory_format)):
            return named
    return v


def _reason(node: NodeView) -> str | None:
    """Why lowering refuses the node (its dtypes, then its family's check), or None."""
    for m in _tensors(node):
        if m.dtype not in dtypes.DTYPES:
            return f"dtype {m.dtype} is not supported on WebGPU"
    check = OPS[node.target].check
    return check(node) if check else None


__all__ = ["COMPILES", "KINDS", "Status", "Trace", "core_overloads", "status", "statuses", "trace"]
