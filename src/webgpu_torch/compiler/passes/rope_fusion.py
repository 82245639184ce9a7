"""Graph rewrite: rotary position embedding as transformers applies it into one `webgpu.rope` node
(ops/elementwise.py, the kernel's OP_ROPE).

Matched (Llama's, Mistral's, Qwen's `apply_rotary_pos_emb`, every float dtype; each intermediate read by the
next step only):

    x1, x2 = x[..., :h], x[..., h:]          (slices of the last dim, of size 2h)
    out    = x * cos + cat(-x2, x1) * sin     (each product and the sum in either order)

with cos and sin anything that broadcasts to x. Six dispatches (neg, the concatenation's two copies, two
products, the sum) become one: a decoder step has two a layer, for the queries and the keys. Anything else —
another split, a rotation the other way, an intermediate read elsewhere — is left as it is.
"""

from __future__ import annotations

from collections import Counter

from ...format import dtypes
from ..graph import Graph, Node, Ref, drop_dead, readers, sole_producer
from ..ops.elementwise import ROPE
from ..options import Options

MUL, ADD = "aten.mul.Tensor", "aten.add.Tensor"


def fuse_rotary(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    replaced = {}
    for node in graph.nodes:
        match = _match(node, by_name, users)
        if match is not None:
            replaced[match.name] = match
    if replaced:
        graph.nodes = drop_dead([replaced.get(n.name, n) for n in graph.nodes], graph.outputs)
    return graph


def _match(add: Node, by_name: dict, users: Counter) -> Node | None:
    """The rope node replacing `add`, when `add` ends the pattern; else None."""
    meta = add.outputs[0]
    if add.target != ADD or add.args.get("alpha", 1) != 1 or not dtypes.is_float(meta.dtype):
        return None
    terms = [sole_producer(add.args[k], by_name, users, MUL) for k in ("self", "other")]
    if None in terms or any(t.outputs[0] != meta for t in terms):
        return None
    for direct, rotated in (terms, terms[::-1]):
        for cat_side in ("self", "other"):
            found = _rotation(rotated, cat_side, by_name, users, meta)
            if found is None:
                continue
            x, sin = found
            operands = [direct.args["self"], direct.args["other"]]
            if x in operands and operands.count(x) == 1:
                cos = operands[1 - operands.index(x)]
                args = {"input": x, "cos": cos, "sin": sin}
                return Node(add.name, ROPE, args, add.outputs, add.source)
    return None


def _rotation(mul: Node, cat_side: str, by_name: dict, users: Counter, meta) -> tuple[Ref, object] | None:
    """(x, sin) when `mul` is cat(-x[..., h:], x[..., :h]) * sin with the cat on `cat_side`; else None."""
    cat = sole_producer(mul.args[cat_side], by_name, users, "aten.cat.default")
    if cat is None or cat.outputs[0] != meta or cat.args.get("dim") not in (-1, meta.ndim - 1):
        return None
    tensors = cat.args["tensors"]
    if len(tensors) != 2:
        return None
    neg = sole_producer(tensors[0], by_name, users, "aten.neg.default")
    size = meta.shape[-1] if meta.ndim else None
    if neg is None or not isinstance(size, int) or size % 2:
        return None
    second, first = _slice_of(neg.args["self"], by_name, meta), _slice_of(tensors[1], by_name, meta)
    if second is None or first is None or second[0] != first[0]:
        return None
    h = size // 2
    if first[1:] != (0, h) or second[1] != h or second[2] < size:
        return None
    return first[0], mul.args["other" if cat_side == "self" else "self"]


def _slice_of(ref, by_name: dict, meta) -> tuple[Ref, int, int] | None:
    """(source, start, end) when `ref` is a unit-step slice of the last dim of a tensor of `meta`'s rank (the
    concatenation of two of them being shaped like `meta` pins the source's shape)."""
    node = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
    if node is None or node.target != "aten.slice.Tensor" or node.args.get("step", 1) != 1:
        return None
    source = node.args["self"]
    if node.args["dim"] not in (-1, meta.ndim - 1) or not isinstance(source, Ref):
        return None
    start, end = node.args.get("start") or 0, node.args.get("end")
    return source, start, end if end is not None else meta.shape[-1]

