"""Graph rewrite: the rotary embeddings of a layer's queries and keys as one `webgpu.rope` node where both are
heads of one merged projection (linear_merging.py's q, k and v):

    q = rope(transpose(view(qkv[..., a:b], [.., Hq, D])), cos, sin)
    k = rope(transpose(view(qkv[..., b:c], [.., Hk, D])), cos, sin)
 →  qk = rope(transpose(view(qkv[..., a:c], [.., Hq + Hk, D])), cos, sin);   q, k = qk[heads :Hq], qk[heads Hq:]

The keys' heads follow the queries' in qkv's columns, with the same head width, and RoPE treats every head
alike (cos and sin broadcast over the heads), so one dispatch rotates both: a decode step's two a layer become
one. The two outputs are slices of the result along its heads (views). Matched only where each rope reads its
own transpose of its own view of its own slice (each read once), the slices are adjacent along qkv's last dim
with step 1, the views differ in their heads alone (an int in the size), the transposes are alike and move the
heads, and cos, sin and dtype are the same.
"""

from __future__ import annotations

from itertools import pairwise

from ..graph import Graph, Node, Ref, TensorMeta, drop_dead, readers
from ..ops.elementwise import ROPE
from ..options import Options

SLICE, VIEW, TRANSPOSE = "aten.slice.Tensor", "aten.view.default", "aten.transpose.int"


def pair_ropes(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    heads: dict[tuple, list[tuple[Node, tuple[Node, Node, Node]]]] = {}
    for node in graph.nodes:
        chain = _chain(node, by_name, users) if node.target == ROPE else None
        if chain is not None:
            heads.setdefault(_key(node, chain), []).append((node, chain))
    replaced: dict[str, list[Node]] = {}
    dropped: set[str] = set()
    order = {n.name: i for i, n in enumerate(graph.nodes)}
    for members in heads.values():
        members.sort(key=lambda m: m[1][0].args["start"])
        for (q, q_chain), (k, k_chain) in pairwise(members):
            if q.name in replaced or q.name in dropped or q_chain[0].args["end"] != k_chain[0].args["start"]:
                continue
            first, second = (q, k) if order[q.name] < order[k.name] else (k, q)
            replaced[first.name] = _merged(q, q_chain, k, k_chain)
            dropped.add(second.name)
    if replaced:
        graph.nodes = [new for n in graph.nodes if n.name not in dropped for new in replaced.get(n.name, [n])]
        graph.nodes = drop_dead(graph.nodes, graph.outputs)
    return graph


def _chain(rope: Node, by_name: dict[str, Node], users) -> tuple[Node, Node, Node] | None:
    """(slice, view, transpose) feeding `rope`'s input, each read by the next alone; else None."""
    found, ref = [], rope.args["input"]
    for target in (TRANSPOSE, VIEW, SLICE):
        node = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
        if node is None or node.target != target or users[node.name] != 1:
            return None
        found.append(node)
        ref = node.args["self"]
    transpose, view, slice_ = found
    last = slice_.outputs[0].ndim - 1
    size = view.args["size"]
    if (slice_.args["dim"] not in (-1, last) or slice_.args["step"] != 1 or not isinstance(ref, Ref)
            or not isinstance(size[-2], int) or view.outputs[0].ndim < 2):
        return None
    heads = view.outputs[0].ndim - 2
    if heads not in (transpose.args["dim0"] % view.outputs[0].ndim, transpose.args["dim1"] % view.outputs[0].ndim):
        return None
    return slice_, view, transpose


def _key(rope: Node, chain: tuple[Node, Node, Node]) -> tuple:
    """What two ropes must share to pair: cos, sin, dtype, the sliced tensor, the views' sizes but the heads,
    the transpose."""
    slice_, view, transpose = chain
    shape = view.outputs[0].shape
    return (rope.args["cos"], rope.args["sin"], rope.outputs[0].dtype, slice_.args["self"],
            (*shape[:-2], shape[-1]), repr(view.args["size"][:-2]), transpose.args["dim0"], transpose.args["dim1"])


def _merged(q: Node, q_chain: tuple[Node, Node, Node], k: Node, k_chain: tuple[Node, Node, Node]) -> list[Node]:
    """The slice, view, transpose and rope over both heads, and a slice of its result for each."""
    (q_slice, q_view, q_transpose), (_, k_view, _) = q_chain, k_chain
    hq, hk = q_view.outputs[0].shape[-2], k_view.outputs[0].shape[-2]
    dtype, name = q.outputs[0].dtype, f"{q.name}_with_{k.name}"
    s_meta, v_meta = q_slice.outputs[0], q_view.outputs[0]
    width = k_chain[0].args["end"] - q_slice.args["start"]
    slice_ = Node(f"{name}_slice", SLICE, {**q_slice.args, "end": k_chain[0].args["end"]},
                  (TensorMeta((*s_meta.shape[:-1], width), s_meta.dtype),), q.source)
    size = [*q_view.args["size"][:-2], hq + hk, q_view.args["size"][-1]]
    view = Node(f"{name}_view", VIEW, {"self": Ref(slice_.name), "size": size},
                (TensorMeta((*v_meta.shape[:-2], hq + hk, v_meta.shape[-1]), v_meta.dtype),), q.source)
    d0, d1 = (d % v_meta.ndim for d in (q_transpose.args["dim0"], q_transpose.args["dim1"]))
    shape = list(view.outputs[0].shape)
    shape[d0], shape[d1] = shape[d1], shape[d0]
    transpose = Node(f"{name}_transpose", TRANSPOSE, {**q_transpose.args, "self": Ref(view.name)},
                     (TensorMeta(tuple(shape), v_meta.dtype),), q.source)
    rope = Node(name, ROPE, {**q.args, "input": Ref(transpose.name)}, (TensorMeta(tuple(shape), dtype),), q.source)
    axis = d1 if d0 == v_meta.ndim - 2 else d0  # where the heads went
    parts = [Node(out.name, SLICE, {"self": Ref(rope.name), "dim": axis, "start": lo, "end": hi, "step": 1},
                  out.outputs, out.source) for out, lo, hi in ((q, 0, hq), (k, hq, hq + hk))]
    return [slice_, view, transpose, rope, *parts]
