"""The imported graph: core-ATen nodes as plain data, produced by the frontend and consumed by lowering.

Arguments are normalised by the op's schema into a dict in schema order with defaults filled in, so a lowering
reads `node.args["mat1"]` whatever way the call was spelled. Tensor arguments are `Ref`s to graph values.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from math import prod
from typing import Any

import numpy as np

from ..format.symbolic import Expr, Symbol


@dataclass(frozen=True)
class TensorMeta:
    shape: tuple[int | Expr, ...]  # an Expr (symbolic.py) for a dynamic dimension
    dtype: str

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def __str__(self) -> str:
        return f"{self.dtype}[{', '.join(map(str, self.shape))}]"

    @property
    def dynamic(self) -> bool:
        return any(isinstance(s, Expr) for s in self.shape)


@dataclass(frozen=True)
class Ref:
    """A graph value: the output of node `node` (output `index` of a node that returns several)."""

    node: str
    index: int | None = None


@dataclass(frozen=True)
class Epilogue:
    """What the producing kernel applies to its result (see ops/epilogue.py): result + residual, then the
    activation."""

    activation: str = "none"  # an ACT_* name from activation.wgsl: "none", "relu", "clamp", "gelu", ...
    lo: float = 0.0  # clamp bounds
    hi: float = 0.0
    residual: bool = False  # the node's args hold "residual": a value it adds (broadcast to its output)


@dataclass(frozen=True)
class StateSpec:
    """A model buffer the program updates in place (torch.export's buffer mutation): the graph reads its value
    at the start of a call as the value `input`; what the call leaves in it is one of the graph's outputs."""

    name: str  # the buffer's name in the model, e.g. "key_cache_0"
    input: str  # the graph value holding it at the start of a call
    meta: TensorMeta


@dataclass
class Node:
    name: str
    target: str  # e.g. "aten.addmm.default"
    args: dict[str, object]  # by schema name, in schema order, defaults filled in
    outputs: tuple[TensorMeta | None, ...]  # one entry per output; None for a non-tensor output
    source: str = ""  # the user's line that produced it, for error messages
    epilogue: Epilogue | None = None  # set by fusion.py: a residual add and/or activation folded into this node
    effect: bool = False  # an effectful op (torch.export's with_effects): it acts beyond its outputs, never dead
    half: frozenset[int] = frozenset()  # set by passes/half_storage.py: the outputs stored as f16 activations


@dataclass
class Graph:
    inputs: list[tuple[str, TensorMeta]]  # user inputs, in flattened order
    constants: dict[str, np.ndarray]  # parameters, buffers and folded constants (host dtype)
    constant_meta: dict[str, TensorMeta]
    nodes: list[Node]
    # The flattened user outputs, then each state's value at the end of the call (in `states` order): the
    # rewrites keep and rename both alike.
    outputs: list[Ref]
    input_tree: dict
    output_tree: dict
    meta: dict = field(default_factory=dict)
    symbols: dict[str, Symbol] = field(default_factory=dict)  # the dynamic dimensions, by name
    states: list[StateSpec] = field(default_factory=list)  # buffers the program updates in place

    @property
    def user_outputs(self) -> list[Ref]:
        return self.outputs[:len(self.outputs) - len(self.states)]

    @property
    def state_values(self) -> list[Ref]:
        return self.outputs[len(self.outputs) - len(self.states):]

    def meta_of(self, ref: Ref) -> TensorMeta | None:
        """The TensorMeta of a value (input, constant or node output); use metas() for many lookups."""
        return self.metas()[ref]

    def metas(self) -> dict[Ref, TensorMeta | None]:
        metas: dict[Ref, TensorMeta | None] = {Ref(n): m for n, m in self.inputs}
        metas.update({Ref(s.input): s.meta for s in self.states})
        metas.update({Ref(n): m for n, m in self.constant_meta.items()})
        for node in self.nodes:
            if len(node.outputs) == 1:
                metas[Ref(node.name)] = node.outputs[0]
            for i, m in enumerate(node.outputs):
                metas[Ref(node.name, i)] = m
        return metas

    def describe(self, node: Node, reason: str) -> str:
        """`node 'addmm_1' (aten.addmm.default) at model.py:12: float32[5, 41], float32[41, 3] -> float32[5, 3]`
        followed by the reason, indented."""
        def show(v) -> str | None:
            if isinstance(v, Ref):
                m = self.meta_of(v)
                return str(m) if m is not None else v.node
            if isinstance(v, (list, tuple)) and any(isinstance(x, Ref) for x in v):
                return "[" + ", ".join(s for s in map(show, v) if s) + "]"
            return None

        tensors = [f"{k}={s}" for k, v in node.args.items() if (s := show(v))]
        scalars = [f"{k}={v!r}" for k, v in node.args.items() if show(v) is None]
        outs = ", ".join(str(m) for m in node.outputs if m is not None) or "nothing"
        where = f" at {node.source}" if node.source else ""
        return (f"  node {node.name!r} ({node.target}){where}\n"
                f"    inputs: {', '.join(tensors + scalars) or 'none'} -> {outs}\n"
                f"    reason: {reason}")


def outputs_read(graph: Graph) -> dict[str, frozenset[int]]:
    """For each node, the indices of its outputs that other nodes or the graph's outputs read."""
    read: dict[str, set[int]] = {n.name: set() for n in graph.nodes}
    for r in reads(graph):
        if r.node in read:
            read[r.node].add(r.index or 0)
    return {name: frozenset(ix) for name, ix in read.items()}


def refs_in(value: Any) -> Iterator[Ref]:
    """Every Ref inside an argument value (nested lists, tuples and dicts)."""
    return (v for v in values_in(value) if isinstance(v, Ref))


def reads(graph: Graph) -> list[Ref]:
    """Every read of a value: by nodes' arguments and by the graph's outputs."""
    return [*(r for node in graph.nodes for r in refs_in(node.args)), *graph.outputs]


def readers(graph: Graph) -> Counter:
    """How often each value is read, by name (reads())."""
    return Counter(r.node for r in reads(graph))


def drop_unread_constants(graph: Graph) -> None:
    """Forget the constants nothing reads any more (a rewrite folded or replaced their readers)."""
    read = {r.node for r in reads(graph)}
    for name in [c for c in graph.constants if c not in read]:
        del graph.constants[name], graph.constant_meta[name]


def sole_producer(ref: Any, by_name: dict[str, Node], readers: Counter, target: str) -> Node | None:
    """The node of `target` making `ref` (a whole-node Ref), when nothing else reads it; else None."""
    node = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
    return node if node is not None and node.target == target and readers[node.name] == 1 else None


def drop_dead(nodes: list[Node], outputs: list[Ref]) -> list[Node]:
    """`nodes` without those whose values nothing reads (assertion-only ops such as `_assert_tensor_metadata`
    go too: export already checked them), in their order. Effectful nodes stay."""
    live = {r.node for r in outputs}
    kept = []
    for node in reversed(nodes):
        if node.name in live or node.effect:
            kept.append(node)
            live.update(r.node for r in refs_in(node.args))
    return kept[::-1]


def map_refs(value: Any, fn: Callable[[Ref], Any]) -> Any:
    """An argument value with every Ref inside it (nested lists, tuples and dicts) replaced by fn(ref)."""
    if isinstance(value, Ref):
        return fn(value)
    if isinstance(value, dict):
        return {k: map_refs(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return type(value)(map_refs(v, fn) for v in value)
    return value


def values_in(value: Any) -> Iterator[Any]:
    """Every leaf of an argument value (nested lists, tuples and dicts): Refs, numbers, Exprs, strings …"""
    if isinstance(value, dict):
        for v in value.values():
            yield from values_in(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from values_in(v)
    else:
        yield value
