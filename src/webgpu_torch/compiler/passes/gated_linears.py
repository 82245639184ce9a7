"""Graph rewrite: a gated product of the two halves of one linear's output (a gated MLP's gate and up
projections, stacked by linear_merging.py once gated_products.py took the activation) into that linear, its
`gate` argument (ops/gemm's `linear`). The weight's rows are interleaved, gate row j at 2j and up row j at
2j + 1, so the GEMV that sums a gate column sums its up column beside it and stores act(gate) * up
(gemv.wgsl's GATED):

    gu = linear(x, [Wg; Wu]);  h = gated(gu[..., :N], gu[..., N:], act)
 →  h = linear(x, interleave(Wg, Wu), gate=act)

A decode step's MLP loses the product's dispatch and the 2N floats written and read between the two. Where the
linear is no GEMV (a prompt's rows) its lowering runs the interleaved product, then the gated product over its
even and odd columns (stride-2 views), as before the rewrite. Only a gated node with no epilogue of its own
over the two halves of a linear with a constant weight, float or packed (linear_merging.py), that nothing else
reads, itself without an epilogue: interleaving rows (and a bias; a packed weight's rows with their scales and
zero points) permutes the products and changes none.
"""

from __future__ import annotations

import numpy as np

from ...format import packing
from ..graph import Epilogue, Graph, Node, Ref, TensorMeta, drop_dead, drop_unread_constants, readers
from ..ops.elementwise import GATED
from ..options import Options
from .linear_merging import constant_meta, packed_weight
from .quantized_weights import packed_node

LINEAR, SLICE = "aten.linear.default", "aten.slice.Tensor"


def fold_gates(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    replaced = {n.name: folded for n in graph.nodes if (folded := _fold(graph, n, by_name, users)) is not None}
    if replaced:
        graph.nodes = drop_dead([new for n in graph.nodes for new in replaced.get(n.name, [n])], graph.outputs)
        drop_unread_constants(graph)
    return graph


def _fold(graph: Graph, gated: Node, by_name: dict[str, Node], users) -> list[Node] | None:
    """The linear replacing `gated`, after the dequantization of its packed weight if it has one, when its
    operands are the two halves of one foldable linear; else None."""
    if gated.target != GATED or gated.epilogue is not None:
        return None
    halves = [_half(gated.args[side], by_name, users) for side in ("gate", "input")]
    if None in halves or halves[0][0] is not halves[1][0]:
        return None
    (linear, gate_start), (_, up_start) = halves
    width = linear.outputs[0].shape[-1]
    if {gate_start, up_start} != {0, width // 2} or width % 2 or users[linear.name] != 2 \
            or tuple(gated.outputs[0].shape) != (*linear.outputs[0].shape[:-1], width // 2):
        return None
    args = dict(linear.args)
    packed = packed_weight(graph, args["weight"], by_name, users)
    stacked = [*(["weight"] if packed is None else []), *(["bias"] if args.get("bias") is not None else [])]
    if any(constant_meta(graph, args[key]) is None for key in stacked):  # float constants, their rows as they are
        return None
    order = _pairs(gate_start, width // 2)
    made = []
    if packed is not None:  # named after the stacked weight, as below
        made = [packed_node(graph, f"{args['weight'].node}_interleaved{gate_start}",
                                *packing.take_rows([packed], order), linear.source)]
        args["weight"] = Ref(made[0].name)
    for key in stacked:
        args[key] = _interleaved(graph, args[key], order, gate_start)
    args["gate"] = Epilogue(gated.args["activation"], gated.args["lo"], gated.args["hi"])
    return [*made, Node(gated.name, LINEAR, args, gated.outputs, gated.source)]


def _half(ref, by_name: dict[str, Node], users) -> tuple[Node, int] | None:
    """(the linear, the start) when `ref` is a slice of a plain linear's last dim, step 1, read once."""
    s = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
    if s is None or s.target != SLICE or users[s.name] != 1 or s.args["step"] != 1:
        return None
    linear = by_name.get(s.args["self"].node) if isinstance(s.args["self"], Ref) else None
    if linear is None or linear.target != LINEAR or linear.epilogue is not None or "gate" in linear.args:
        return None
    width, ndim = linear.outputs[0].shape[-1], len(linear.outputs[0].shape)
    start, end = s.args["start"], s.args["end"]
    if s.args["dim"] not in (-1, ndim - 1) or not isinstance(width, int) or end - start != width // 2:
        return None
    return linear, start


def _pairs(gate_start: int, half: int) -> np.ndarray:
    """The rows of the interleaved weight, by their row in the stacked one: gate j, up j, gate j + 1, …"""
    gates = np.arange(gate_start, gate_start + half)
    return np.stack([gates, (gates + half) % (2 * half)], axis=1).reshape(-1)


def _interleaved(graph: Graph, ref: Ref, order: np.ndarray, gate_start: int) -> Ref:
    """A new constant: the rows of the constant `ref` names in `order`. Named after it, so that programs
    compiled from one model (a prompt's and a step's) name it alike and share it (docs/artifact.md, Shared
    constants)."""
    name = f"{ref.node}_interleaved{gate_start}"
    graph.constants[name] = graph.constants[ref.node][order]
    graph.constant_meta[name] = TensorMeta(graph.constants[name].shape, graph.constant_meta[ref.node].dtype)
    return Ref(name)
