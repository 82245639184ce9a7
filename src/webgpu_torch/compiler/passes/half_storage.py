"""Which activations a program stores in float16 (compile option precision="float16").

Under precision="float16" a float32 or float16 activation between two kernels is stored as f16 — half the
bytes a memory-bound kernel moves — where its producer writes f16 and every reader takes it. An op registered with
`half` (ops/registry.py) names the arguments its kernels read f16 from and stores the float outputs chosen
here as f16 (`NodeView.half`, `NodeView.storage`); a view registered with `half` passes f16 through (its
output is f16 where its input is). Never f16: the program's inputs, constants and outputs (outputs are
read back in their model dtype's device form), and whatever an op or argument without `half` reads — so no
conversion dispatch is ever needed (lowering.py widens one as a safety net, should a lowering hand an f16
tensor to such an argument). Arithmetic stays float32: kernels widen f16 as they load it and round as they
store (reductions, norms and softmax accumulate in f32). Kernels that touch f16 require shader-f16 and have
a float32 fallback, and an f16 scratch buffer is sized for float32, so the same file runs without the
feature (docs/artifact.md, Float16).
"""

from __future__ import annotations

from collections import defaultdict

from ..graph import Graph, Node, outputs_read, refs_in
from ..ops import OPS
from ..options import Options

# The model dtypes whose activations may be stored as f16: not bfloat16, whose range (to 3.4e38) f16's (to
# 65504) does not hold.
STORED_HALF = ("float32", "float16")


def plan(graph: Graph, options: Options) -> Graph:
    """Under precision="float16", each node's `half`: the indices of its outputs to store as f16."""
    if not options.half_activations:
        return graph
    read = outputs_read(graph)
    readers: dict[tuple[str, int], list[tuple[Node, str]]] = defaultdict(list)
    for node in graph.nodes:
        for arg, value in node.args.items():
            for r in refs_in(value):
                readers[(r.node, r.index or 0)].append((node, arg))
    returned = {(r.node, r.index or 0) for r in graph.outputs}
    chosen: dict[str, frozenset[int]] = {}

    def takes(reader: Node, arg: str) -> bool:
        op = OPS.get(reader.target)
        if op is None or not (op.half is True or arg in op.half):
            return False
        return not op.view or read[reader.name] <= chosen.get(reader.name, frozenset())

    for node in reversed(graph.nodes):  # readers before the nodes they read
        op = OPS.get(node.target)
        if op is None or not op.half:
            continue
        half = frozenset(i for i, m in enumerate(node.outputs)
                         if m is not None and m.dtype in STORED_HALF and (node.name, i) not in returned
                         and readers[(node.name, i)] and all(takes(r, a) for r, a in readers[(node.name, i)]))
        if half:
            chosen[node.name] = node.half = half
    return graph
