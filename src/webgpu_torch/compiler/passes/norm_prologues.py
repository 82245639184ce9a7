"""Graph rewrite: an rms_norm whose only reader is a linear, as that linear's input, into the linear (its
`norm_weight` and `norm_eps` arguments; ops/gemm's `linear`):

    y = linear(rms_norm(x, [K], g, eps), W)   →   y = linear(x, W, norm_weight=g, norm_eps=eps)

A decoder layer normalizes the residual stream before its attention's projections and before its MLP, each
time for one linear (linear_merging.py has stacked q, k and v, and gate and up). In a decode step that linear
is a GEMV, which normalizes A as it reads it (gemv.wgsl's NORM): the norm's dispatch goes. Where the GEMM is not
a GEMV over a weight read along K (a prompt's rows) the lowering runs the norm first, as before. Only a float32
norm over the last dim with a float32 weight and an eps above 0 is folded, and only where the linear reads it
directly (transformers' final norm reaches the LM head through a slice of positions, and stays).
"""

from __future__ import annotations

from ..graph import Graph, Node, Ref, drop_dead, readers
from ..options import Options

LINEAR, RMS_NORM = "aten.linear.default", "aten.rms_norm.default"
FLOAT32 = "float32"


def fuse_norms(graph: Graph, options: Options) -> Graph:
    metas = graph.metas()
    norms = {n.name: n for n in graph.nodes if _foldable(n, metas)}
    users = readers(graph)
    folded = False
    for node in graph.nodes:
        ref = node.args.get("input") if node.target == LINEAR else None
        norm = norms.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
        if norm is None or users[norm.name] != 1 or "norm_weight" in node.args:  # one read: the input alone
            continue
        node.args = {**node.args, "input": norm.args["input"], "norm_weight": norm.args["weight"],
                     "norm_eps": _eps(norm)}
        folded = True
    if folded:
        graph.nodes = drop_dead(graph.nodes, graph.outputs)
    return graph


def _eps(norm: Node) -> float:
    """The norm's eps; None is float32's machine epsilon, as torch's default."""
    eps = norm.args["eps"]
    return 2.0**-23 if eps is None else float(eps)


def _foldable(node: Node, metas: dict) -> bool:
    """An rms_norm over the last dim of a float32 input, with a float32 weight of that length and eps > 0."""
    if node.target != RMS_NORM or node.outputs[0] is None or node.outputs[0].dtype != FLOAT32 or _eps(node) <= 0:
        return False
    x, weight = (metas.get(v) if isinstance(v, Ref) else None for v in (node.args["input"], node.args["weight"]))
    return (x is not None and weight is not None and x.dtype == weight.dtype == FLOAT32
            and list(node.args["normalized_shape"]) == [x.shape[-1]] and tuple(weight.shape) == (x.shape[-1],))
