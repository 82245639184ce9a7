"""Graph rewrites on the imported graph (plain data, no torch): activation epilogues.

An activation node (relu, clamp, hardtanh, sigmoid, tanh, gelu) whose input is produced by an op registered
with `epilogue=True`, where nothing else reads that input, becomes the producer's `epilogue` and disappears:
`relu(addmm(b, x, w))` is one GEMM dispatch, `relu(add(x, identity))` one elementwise dispatch.
"""

from __future__ import annotations

from collections import Counter

from .graph import Graph, Node, Ref, map_refs, refs_in
from .ops import OPS, epilogue


def fuse_epilogues(graph: Graph) -> Graph:
    users = Counter(r.node for node in graph.nodes for r in refs_in(node.args))
    users.update(r.node for r in graph.outputs)
    by_name: dict[str, Node] = {}
    renamed: dict[str, str] = {}  # a removed activation -> the node that now produces its value
    kept = []
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda r: Ref(renamed.get(r.node, r.node), r.index))
        producer = _fusable_producer(node, by_name, users)
        if producer is not None:
            producer.epilogue = epilogue.of_node(node.target, node.args)
            renamed[node.name] = producer.name
            continue
        by_name[node.name] = node
        kept.append(node)
    graph.nodes = kept
    graph.outputs = [Ref(renamed.get(r.node, r.node), r.index) for r in graph.outputs]
    return graph


def _fusable_producer(node: Node, by_name: dict[str, Node], users: Counter) -> Node | None:
    ep = epilogue.of_node(node.target, node.args)
    src = node.args.get("self") if ep else None
    if not isinstance(src, Ref) or src.index is not None or src.node not in by_name:
        return None
    producer = by_name[src.node]
    op = OPS.get(producer.target)
    ok = (op is not None and op.epilogue and producer.epilogue is None and users[src.node] == 1
          and len(producer.outputs) == 1 and producer.outputs == node.outputs
          and node.outputs[0].dtype == "float32")
    return producer if ok else None

