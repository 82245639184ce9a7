"""Graph rewrite: RMS normalisation as transformers writes it into one `aten.rms_norm` node (ops/layer_norm.py).

Matched (Llama's, Mistral's, Qwen's RMSNorm in float32; each intermediate read by the next step only):

    r   = rsqrt(mean(pow(x, 2), [-1], keepdim=True) + eps)
    out = x * r                     (either order)
    out = weight * out              (optional, either order; weight a constant over the last dim)

Six dispatches become one (a decoder step has two norms a layer). Anything else — another exponent, a mean
over other dims, an intermediate read elsewhere — is left as it is.
"""

from __future__ import annotations

from collections import Counter
from numbers import Number

from ..graph import Graph, Node, Ref, drop_dead, readers, refs_in, sole_producer
from ..options import Options


def fuse_rms_norms(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    consumers: dict[str, list[Node]] = {}
    for n in graph.nodes:
        for r in {r.node for r in refs_in(n.args)}:
            consumers.setdefault(r, []).append(n)
    replaced: dict[str, Node] = {}
    for node in graph.nodes:
        match = _match(node, by_name, users, consumers, graph)
        if match is not None:
            replaced[match.name] = match
    if replaced:
        graph.nodes = drop_dead([replaced.get(n.name, n) for n in graph.nodes], graph.outputs)
    return graph


def _match(rsqrt: Node, by_name: dict, users: Counter, consumers: dict, graph: Graph) -> Node | None:
    """The rms_norm node replacing the last node of the pattern through `rsqrt`, or None."""
    if rsqrt.target != "aten.rsqrt.default" or users[rsqrt.name] != 1:
        return None
    add = sole_producer(rsqrt.args["self"], by_name, users, "aten.add.Tensor")
    if add is None or add.args.get("alpha", 1) != 1 or not isinstance(add.args["other"], Number):
        return None
    mean = sole_producer(add.args["self"], by_name, users, "aten.mean.dim")
    if mean is None or not mean.args["keepdim"] or mean.args.get("dtype") is not None:
        return None
    square = sole_producer(mean.args["self"], by_name, users, "aten.pow.Tensor_Scalar")
    if square is None or square.args["exponent"] != 2:
        return None
    x, meta = square.args["self"], square.outputs[0]
    if not isinstance(x, Ref) or meta.dtype != "float32" or list(mean.args["dim"]) not in ([-1], [meta.ndim - 1]):
        return None
    (scaled,) = consumers[rsqrt.name]
    if scaled.target != "aten.mul.Tensor" or {_key(scaled.args["self"]), _key(scaled.args["other"])} != {
            _key(x), rsqrt.name} or scaled.outputs[0] != meta:
        return None
    last, weight = scaled, None
    (after,) = consumers.get(scaled.name, [None]) if users[scaled.name] == 1 else (None,)
    if after is not None and after.target == "aten.mul.Tensor" and after.outputs[0] == meta:
        other = after.args["other"] if after.args["self"] == Ref(scaled.name) else after.args["self"]
        w = graph.constants.get(other.node) if isinstance(other, Ref) and other.index is None else None
        if w is not None and w.dtype.kind == "f" and w.shape == (meta.shape[-1],):
            last, weight = after, other
    args = {"input": x, "normalized_shape": [meta.shape[-1]], "weight": weight, "eps": float(add.args["other"])}
    return Node(last.name, "aten.rms_norm.default", args, last.outputs, last.source)


def _key(v) -> str | None:
    return v.node if isinstance(v, Ref) and v.index is None else None
