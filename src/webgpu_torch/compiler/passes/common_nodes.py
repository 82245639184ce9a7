"""Graph rewrite: a node that computes what an earlier node computes — the same op, epilogue and outputs over the
same values — is dropped, its readers reading the earlier node instead (common subexpression elimination).

Values are the same when they are the same input, state or node output, or constants of equal dtype, shape and
bytes up to SMALL bytes (an index or a position a model builds again per layer: transformers' StaticCache adds
the cache's length to an `arange` in every layer's update; weights are compared by name only). Effectful nodes
and `empty` (whose contents are undefined: two are not one value) are never merged. The graph is functional
(torch.export's), so a value is the same wherever it is read; where a buffer may be written in place is
decided later, over the merged graph's readers (planner.py).

A product by the number 1 of a node's output shaped and typed like the product is that output (x · 1 = x for every
float, -0, inf and NaN included): its readers read the operand (transformers' rotary embedding multiplies its
cos and sin by an `attention_scaling` of 1.0, two dispatches a step).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..graph import Graph, Ref, drop_dead, drop_unread_constants, map_refs
from ..options import Options

MUL = "aten.mul.Tensor"
SMALL = 1 << 16  # bytes: constants up to this size are compared by value
_NEVER = ("aten.empty.memory_format", "aten.empty_strided.default", "aten.empty_permuted.default")


def merge_common(graph: Graph, options: Options) -> Graph:
    same = _same_constants(graph.constants)  # a constant -> the first constant equal to it
    first: dict[Any, str] = {}  # a node's key -> the first node with that key
    renamed: dict[str, str] = {}  # a dropped node -> the node whose value it was
    metas, computed = graph.metas(), {n.name for n in graph.nodes}
    kept = []
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda r: Ref(renamed.get(r.node, same.get(r.node, r.node)), r.index))
        identity = _identity_of(node, metas, computed)
        key = None if node.effect or node.target in _NEVER else _key(node)
        if identity is not None or (key is not None and key in first):
            renamed[node.name] = identity or first[key]
            continue
        if key is not None:
            first[key] = node.name
        kept.append(node)
    graph.outputs = [Ref(renamed.get(r.node, same.get(r.node, r.node)), r.index) for r in graph.outputs]
    graph.nodes = drop_dead(kept, graph.outputs)
    drop_unread_constants(graph)
    return graph


def _same_constants(constants: dict[str, np.ndarray]) -> dict[str, str]:
    """Each small constant equal to an earlier one (dtype, shape, bytes), mapped to that one."""
    first: dict[tuple, str] = {}
    same = {}
    for name, value in constants.items():
        if value.nbytes > SMALL:
            continue
        key = (value.dtype.str, value.shape, np.ascontiguousarray(value).tobytes())
        same[name] = first.setdefault(key, name)
    return {name: to for name, to in same.items() if name != to}


def _identity_of(node, metas: dict, computed: set[str]) -> str | None:
    """The node whose output `node` passes through unchanged, when it is `x · 1` (x a whole node output, no
    epilogue; over an input or a constant it stays, so that no output aliases an input)."""
    x, one = node.args.get("self"), node.args.get("other")
    if node.target != MUL or node.epilogue is not None or not isinstance(x, Ref) or x.index is not None \
            or x.node not in computed or type(one) not in (int, float) or one != 1:
        return None
    return x.node if metas.get(x) == node.outputs[0] else None


def _key(node) -> tuple:
    return node.target, _frozen(node.args), node.outputs, node.epilogue


def _frozen(value: Any) -> Any:
    """An argument value as a hashable key: containers as tuples, a scalar with its type (True, 1 and 1.0 are
    three keys), a float by its repr (0.0 and -0.0 differ, a NaN equals a NaN)."""
    if isinstance(value, dict):
        return tuple((k, _frozen(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return type(value).__name__, tuple(_frozen(v) for v in value)
    if isinstance(value, (bool, int, float, str)):
        return type(value).__name__, repr(value)
    return value  # a Ref, an Expr, None, a dtype name's enum …: hashable
