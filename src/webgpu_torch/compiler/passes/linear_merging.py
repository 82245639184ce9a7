"""Graph rewrite: linears that read the same input with constant weights become one linear over their weights
stacked (attention's query, key and value projections; a gated MLP's gate and up projections once
gated_products.py has taken the gate's activation), each original output a slice of its columns.

    q = linear(x, Wq, bq); k = linear(x, Wk, bk); v = linear(x, Wv, bv)
 →  qkv = linear(x, [Wq; Wk; Wv], [bq; bk; bv]);  q, k, v = qkv[..., :Nq], qkv[..., Nq:Nq+Nk], qkv[..., Nq+Nk:]

The slices are views (no dispatch): three GEMMs (GEMVs in a decode step) become one. Merged only where every
weight is a float constant of the same dtype and width, or every one packed integer codes of the same format
(a `webgpu.dequantize` that only its linear reads: torchao's int4, quantized_weights.py; the rows stack with
their scales and zero points, the values unchanged), and either every linear has a constant bias or none
has, none read by an add or an activation (fusion.py folds those into the linear, which it could not into a
slice), and only while the stack, as the kernels store it (the `weights=` format), binds whole
(Options.max_binding): a larger constant would be split into row chunks, one GEMM each, again.
"""

from __future__ import annotations

import numpy as np

from ...format import dtypes, packing
from ...format.packing import Packing
from ..graph import Graph, Node, Ref, TensorMeta, drop_dead, drop_unread_constants, readers, refs_in
from ..ops import epilogue
from ..options import Options
from .quantized_weights import DEQUANTIZE, packed_node

LINEAR, ADD = "aten.linear.default", "aten.add.Tensor"


def merge_linears(graph: Graph, options: Options) -> Graph:
    fusible = _epilogue_inputs(graph)
    by_name, users = {n.name: n for n in graph.nodes}, readers(graph)
    groups: dict[tuple, list[Node]] = {}
    for node in graph.nodes:
        key = _key(graph, node, by_name, users) if node.name not in fusible else None
        if key is not None:
            groups.setdefault(key, []).append(node)
    replaced: dict[str, list[Node]] = {}
    for members in groups.values():
        stored = sum(_stored_bytes(graph, m.args["weight"], by_name, users, options) for m in members)
        if len(members) > 1 and stored <= options.max_binding:
            made, merged, slices = _merge(graph, members, by_name, users)
            replaced[members[0].name] = [*made, merged, slices[0]]
            replaced.update({m.name: [s] for m, s in zip(members[1:], slices[1:], strict=True)})
    if replaced:
        graph.nodes = drop_dead([new for n in graph.nodes for new in replaced.get(n.name, [n])], graph.outputs)
        drop_unread_constants(graph)  # the weights stacked, where nothing else reads them
    return graph


def packed_weight(graph: Graph, ref, by_name: dict[str, Node], users) -> tuple[np.ndarray, Packing] | None:
    """The words and packing of a packed weight [N, K] that `ref` reads: a webgpu.dequantize of constant words,
    read there alone (gated_linears.py asks too); None for any other value."""
    node = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
    if node is None or node.target != DEQUANTIZE or users[node.name] != 1:
        return None
    a = node.args
    if a["words"].node not in graph.constants or tuple(node.outputs[0].shape) != (a["rows"], a["cols"]):
        return None
    return graph.constants[a["words"].node], Packing(a["bits"], a["rows"], a["cols"], a["group"], a["zero_points"])


def _stored_bytes(graph: Graph, ref: Ref, by_name: dict[str, Node], users, options: Options) -> int:
    packed = packed_weight(graph, ref, by_name, users)
    return packed[1].nbytes if packed else _constant_bytes(graph.constants[ref.node], options)


def _constant_bytes(weight: np.ndarray, options: Options) -> int:
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


def _key(graph: Graph, node: Node, by_name: dict[str, Node], users) -> tuple | None:
    """What linears must share to merge (input, weight dtype, width and form, whether biased), or None for one
    that cannot merge."""
    if node.target != LINEAR or node.epilogue is not None or not isinstance(node.args["input"], Ref):
        return None
    weight, bias = node.args["weight"], node.args.get("bias")
    packed = packed_weight(graph, weight, by_name, users)
    if packed is not None:
        p = packed[1]
        dtype, width, form = "float32", p.cols, (p.bits, p.group, p.zero_points)
    else:
        w_meta = constant_meta(graph, weight)
        if w_meta is None or len(w_meta.shape) != 2 or not dtypes.is_float(w_meta.dtype):
            return None
        dtype, width, form = w_meta.dtype, w_meta.shape[1], "constant"
    b_meta = constant_meta(graph, bias)
    if bias is not None and (b_meta is None or b_meta.dtype != dtype):
        return None
    return node.args["input"], dtype, width, form, bias is not None


def constant_meta(graph: Graph, value) -> TensorMeta | None:
    """The meta of the constant `value` names, or None for any other value (gated_linears.py asks too)."""
    if isinstance(value, Ref) and value.index is None and value.node in graph.constants:
        return graph.constant_meta[value.node]
    return None


def _merge(graph: Graph, members: list[Node], by_name: dict[str, Node],
           users) -> tuple[list[Node], Node, list[Node]]:
    """The nodes the merged linear reads that are new (a packed weight's dequantization), the merged linear,
    named after the first member, and a slice of its output in place of each member."""
    first = members[0]
    name = f"{first.name}_merged"
    widths = [m.outputs[0].shape[-1] for m in members]
    packed = [packed_weight(graph, m.args["weight"], by_name, users) for m in members]
    made = []
    if packed[0] is not None:
        words, layout = packing.take_rows(packed, np.arange(sum(p.rows for _, p in packed)))
        made = [packed_node(graph, f"{name}_weight", words, layout, first.source)]
        weight = Ref(made[0].name)
    else:
        weight = _stack(graph, f"{name}_weight", [m.args["weight"] for m in members])
    bias = _stack(graph, f"{name}_bias", [m.args["bias"] for m in members]) if first.args.get("bias") else None
    meta = first.outputs[0]
    out = TensorMeta((*meta.shape[:-1], sum(widths)), meta.dtype)
    merged = Node(name, LINEAR, {"input": first.args["input"], "weight": weight, "bias": bias}, (out,), first.source)
    starts = np.cumsum([0, *widths])
    slices = [Node(m.name, "aten.slice.Tensor", {"self": Ref(name), "dim": len(meta.shape) - 1, "start": int(a),
                                                  "end": int(b), "step": 1}, m.outputs, m.source)
              for m, a, b in zip(members, starts[:-1], starts[1:], strict=True)]
    return made, merged, slices


def _stack(graph: Graph, name: str, refs: list[Ref]) -> Ref:
    """A new constant: the constants `refs` name, concatenated along their first axis."""
    arrays = [graph.constants[r.node] for r in refs]
    graph.constants[name] = np.concatenate(arrays, axis=0)
    meta = graph.constant_meta[refs[0].node]
    graph.constant_meta[name] = TensorMeta(graph.constants[name].shape, meta.dtype)
    return Ref(name)

