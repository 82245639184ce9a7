"""Graph rewrite: the product of an activation and another value, as the gated MLPs of Llama, Qwen, Mistral,
Gemma and Phi compute it, into one `webgpu.gated` node (ops/elementwise.py, the kernel's OP_GATED):

    down(act(gate(x)) * up(x))   →   down(gated(gate(x), up(x), act))

act is any activation ops/epilogue.py knows (silu, gelu and its tanh form, relu, clamp…), either side of the
product, read by the product alone, shaped like it and of its dtype. The activation's dispatch (or the epilogue
fusion.py would have given the gate's GEMM) and the product's become one; and with its activation gone, the
gate projection is a linear like the up projection beside it, which linear_merging.py then stacks with it: a
decoder step's MLP runs one GEMV over both weights and one gated product, where it ran two GEMVs and a product.
"""

from __future__ import annotations

from ...format import dtypes
from ..graph import Graph, Node, Ref, drop_dead, readers
from ..ops import epilogue
from ..ops.elementwise import GATED
from ..options import Options

MUL = "aten.mul.Tensor"


def fuse_gates(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    replaced = {n.name: gated for n in graph.nodes if (gated := _match(n, by_name, users)) is not None}
    if replaced:
        graph.nodes = drop_dead([replaced.get(n.name, n) for n in graph.nodes], graph.outputs)
    return graph


def _match(mul: Node, by_name: dict[str, Node], users) -> Node | None:
    """The gated node replacing `mul` when one of its operands is an activation only it reads; else None."""
    meta = mul.outputs[0] if mul.target == MUL else None
    if meta is None or not dtypes.is_float(meta.dtype):
        return None
    for side, other in (("self", "other"), ("other", "self")):
        ref, up = mul.args[side], mul.args[other]
        act = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
        if act is None or users[act.name] != 1 or act.outputs != mul.outputs or not isinstance(up, Ref):
            continue
        ep = epilogue.of_node(act.target, act.args)
        if ep is not None:
            args = {"gate": act.args["self"], "input": up, "activation": ep.activation, "lo": ep.lo, "hi": ep.hi}
            return Node(mul.name, GATED, args, mul.outputs, mul.source)
    return None
