"""Graph rewrites on the imported graph (plain data, no torch): epilogues.

A node whose only reader is an add or an activation can absorb that reader, which then disappears:
- residual: `add(y, r)` (alpha 1, all floating point, the sum shaped like y) where y comes from an op registered with
  `residual=True` and r is computed before y's node: y's node gains `args["residual"] = r`.
  `linear(x, w, b) + x` is one GEMM dispatch, also through an eval-mode dropout (a `clone`).
- activation (relu, clamp, hardtanh, sigmoid, tanh, gelu, silu) of a result of an op registered with
  `epilogue=True`, applied after any residual: `relu(conv(x) + identity)` is one conv dispatch,
  `relu(add(x, identity))` one elementwise dispatch.
An activation already fused stays last: `gelu(linear(x)) + r` keeps its add.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

from ...format import dtypes
from ..graph import Epilogue, Graph, Node, Ref, drop_dead, map_refs, readers
from ..ops import OPS, epilogue
from ..options import Options

_ADD = "aten.add.Tensor"
_IDENTITY = ("aten.clone.default", "aten.alias.default")


def fuse_epilogues(graph: Graph, options: Options) -> Graph:
    users = readers(graph)
    metas = graph.metas()
    by_name: dict[str, Node] = {}
    position: dict[str, int] = {}  # kept nodes, in order; inputs and constants come before all of them
    renamed: dict[str, str] = {}  # a removed node -> the node that now produces its value
    kept = []
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda r: Ref(renamed.get(r.node, r.node), r.index))
        fused = _fuse_residual(node, by_name, position, users, metas) or _fuse_activation(node, by_name, users)
        if fused is not None:
            renamed[node.name] = fused.name
            continue
        position[node.name] = len(kept)
        by_name[node.name] = node
        kept.append(node)
    graph.outputs = [Ref(renamed.get(r.node, r.node), r.index) for r in graph.outputs]
    graph.nodes = drop_dead(kept, graph.outputs)  # the identities _sole_producer looked through
    return graph


def _sole_producer(src, node: Node, by_name: dict[str, Node], users: Counter) -> Node | None:
    """The node producing `src` when `node` is its only reader and has the same single float output. An
    identity in between (`clone`, `alias`: eval-mode dropout exports as a clone) that nothing else reads is
    looked through, and dropped once nothing reads it."""
    while True:
        if not isinstance(src, Ref) or src.index is not None or src.node not in by_name or users[src.node] != 1:
            return None
        producer = by_name[src.node]
        if producer.target not in _IDENTITY or producer.outputs != node.outputs:
            break
        src = producer.args["self"]
    same = len(producer.outputs) == 1 and producer.outputs == node.outputs and dtypes.is_float(node.outputs[0].dtype)
    return producer if same else None


def _fuse_residual(node: Node, by_name: dict[str, Node], position: dict[str, int], users: Counter,
                   metas: dict) -> Node | None:
    if node.target != _ADD or node.args.get("alpha", 1) != 1:
        return None
    a, b = node.args["self"], node.args["other"]
    for y, r in ((a, b), (b, a)):
        producer = _sole_producer(y, node, by_name, users)
        op = producer and OPS.get(producer.target)
        if (op and op.residual and producer.epilogue is None and isinstance(r, Ref)
                and dtypes.is_float(metas[r].dtype) and position.get(r.node, -1) < position[producer.name]):
            producer.args["residual"] = r
            producer.epilogue = Epilogue(residual=True)
            return producer
    return None


def _fuse_activation(node: Node, by_name: dict[str, Node], users: Counter) -> Node | None:
    ep = epilogue.of_node(node.target, node.args)
    producer = _sole_producer(node.args.get("self"), node, by_name, users) if ep else None
    op = producer and OPS.get(producer.target)
    if not (op and op.epilogue) or (producer.epilogue and producer.epilogue.activation != "none"):
        return None
    producer.epilogue = replace(ep, residual=producer.epilogue.residual) if producer.epilogue else ep
    return producer
