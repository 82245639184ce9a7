"""Graph rewrite: linears that read the same input with constant weights become one linear over their weights
stacked (attention's query, key and value projections; a gated MLP's gate and up projections once
gated_products.py has taken the gate's activation), each original output a slice of its columns.

    q = linear(x, Wq, bq); k = linear(x, Wk, bk); v = linear(x, Wv, bv)
 →  qkv = linear(x, [Wq; Wk; Wv], [bq; bk; bv]);  q, k, v = qkv[..., :Nq], qkv[..., Nq:Nq+Nk], qkv[..., Nq+Nk:]

The slices are views (no dispatch): three GEMMs (GEMVs in a decode step) become one. Merged only where every
weight is a float constant of the same dtype and width and either every linear has a constant bias or none
has, none read by an add or an activation (fusion.py folds those into the linear, which it could not into a
slice), and only while the stack, as the kernels store it (the `weights=` format), binds whole
(Options.max_binding): a larger constant would be split into row chunks, one GEMM each, again.
"""

from __future__ import annotations

import numpy as np

from ...format import dtypes
from ...format.packing import Packing
from ..graph import Graph, Node, Ref, TensorMeta, drop_unread_constants, refs_in
from ..ops import epilogue
from ..options import Options

LINEAR, ADD = "aten.linear.default", "aten.add.Tensor"


def merge_linears(graph: Graph, options: Options) -> Graph:
    fusible = _epilogue_inputs(graph)
    groups: dict[tuple, list[Node]] = {}
    for node in graph.nodes:
        key = _key(graph, node) if node.name not in fusible else None
        if key is not None:
            groups.setdefault(key, []).append(node)
    replaced: dict[str, list[Node]] = {}
    for members in groups.values():
        weights = [graph.constants[m.args["weight"].node] for m in members]
        if len(members) > 1 and sum(_stored_bytes(w, options) for w in weights) <= options.max_binding:
            merged, slices = _merge(graph, members)
            replaced[members[0].name] = [merged, slices[0]]
            replaced.update({m.name: [s] for m, s in zip(members[1:], slices[1:], strict=True)})
    if replaced:
        graph.nodes = [new for n in graph.nodes for new in replaced.get(n.name, [n])]
        drop_unread_constants(graph)  # the weights stacked, where nothing else reads them
    return graph


def _stored_bytes(weight: np.ndarray, options: Options) -> int:
    """The bytes of a weight [N, K] as the GEMM kernels bind it: a float32 one in the `weights=` format (packed
    codes with their groups' scales: format/packing.py; or 16 bits), a 16-bit one as it is."""
    w = options.weights
    if weight.dtype != np.float32 or w.bits == 32 or weight.size == 0:
        return weight.nbytes
    if not w.packed:
        return weight.size * w.bits // 8
    n, k = weight.shape
    return Packing(w.bits, n, k, min(w.group_along(k), k), False).nbytes


def _epilogue_inputs(graph: Graph) -> set[str]:
    """The nodes an add or an activation reads: fusion.py may fold those readers into them, which a slice of a
    merged output could not take."""
    return {r.node for n in graph.nodes if n.target == ADD or epilogue.of_node(n.target, n.args) is not None
            for r in refs_in(n.args)}


def _key(graph: Graph, node: Node) -> tuple | None:
    """What linears must share to merge (input, weight dtype and width, whether biased), or None for one that
    cannot merge."""
    if node.target != LINEAR or node.epilogue is not None or not isinstance(node.args["input"], Ref):
        return None
    weight, bias = node.args["weight"], node.args.get("bias")
    w_meta = _constant_meta(graph, weight)
    if w_meta is None or len(w_meta.shape) != 2 or not dtypes.is_float(w_meta.dtype):
        return None
    b_meta = _constant_meta(graph, bias)
    if bias is not None and (b_meta is None or b_meta.dtype != w_meta.dtype):
        return None
    return node.args["input"], w_meta.dtype, w_meta.shape[1], bias is not None


def _constant_meta(graph: Graph, value) -> TensorMeta | None:
    if isinstance(value, Ref) and value.index is None and value.node in graph.constants:
        return graph.constant_meta[value.node]
    return None


def _merge(graph: Graph, members: list[Node]) -> tuple[Node, list[Node]]:
    """The merged linear, named after the first member, and a slice of its output in place of each member."""
    first = members[0]
    name = f"{first.name}_merged"
    widths = [m.outputs[0].shape[-1] for m in members]
    weight = _stack(graph, f"{name}_weight", [m.args["weight"] for m in members])
    bias = _stack(graph, f"{name}_bias", [m.args["bias"] for m in members]) if first.args.get("bias") else None
    meta = first.outputs[0]
    out = TensorMeta((*meta.shape[:-1], sum(widths)), meta.dtype)
    merged = Node(name, LINEAR, {"input": first.args["input"], "weight": weight, "bias": bias}, (out,), first.source)
    starts = np.cumsum([0, *widths])
    slices = [Node(m.name, "aten.slice.Tensor", {"self": Ref(name), "dim": len(meta.shape) - 1, "start": int(a),
                                                  "end": int(b), "step": 1}, m.outputs, m.source)
              for m, a, b in zip(members, starts[:-1], starts[1:], strict=True)]
    return merged, slices


def _stack(graph: Graph, name: str, refs: list[Ref]) -> Ref:
    """A new constant: the constants `refs` name, concatenated along their first axis."""
    arrays = [graph.constants[r.node] for r in refs]
    graph.constants[name] = np.concatenate(arrays, axis=0)
    meta = graph.constant_meta[refs[0].node]
    graph.constant_meta[name] = TensorMeta(graph.constants[name].shape, meta.dtype)
    return Ref(name)

