"""Graph rewrites that fold a convolution's neighbours into it (plain data and numpy; run before fusion.py):

* inference batch norm of a conv's result, where the BN is the result's only reader and the conv weight and
  bias and every BN parameter are constants: the conv's weight and bias absorb the BN's per-channel scale and
  shift (computed in float64, stored as float32) and the BN node is gone;
* a zero `constant_pad_nd` of the spatial dims whose only readers are (non-transposed) convs: they read its
  input instead, the pad's leading amounts added to their padding. The trailing amounts need no parameter:
  each conv's output size, which is unchanged, implies them (ops/conv.py), so asymmetric padding costs nothing.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from ..graph import Graph, Node, Ref, TensorMeta, drop_unread_constants, map_refs, reads, refs_in
from ..options import Options

CONV = "aten.convolution.default"
BATCH_NORM = "aten._native_batch_norm_legit_no_training.default"
PAD = "aten.constant_pad_nd.default"


def fold(graph: Graph, options: Options) -> Graph:
    _fold_batch_norms(graph)
    _fold_pads(graph)
    drop_unread_constants(graph)
    return graph


def _fold_batch_norms(graph: Graph) -> None:
    refs = reads(graph)
    users = Counter(r.node for r in refs)
    # Only output 0 of a BN (the normalised tensor) may be read; outputs 1 and 2 are empty in inference.
    extra_outputs_read = {r.node for r in refs if r.index not in (None, 0)}
    by_name = {n.name: n for n in graph.nodes}
    replaced: dict[Ref, Ref] = {}  # a BN's output 0 -> the conv that now computes it
    kept = []
    for node in graph.nodes:
        conv = _foldable_conv(graph, node, by_name, users)
        if conv is None or node.name in extra_outputs_read:
            kept.append(node)
            continue
        _absorb_batch_norm(graph, conv, node)
        replaced[Ref(node.name, 0)] = Ref(conv.name)
    graph.nodes = kept
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda r: replaced.get(r, r))
    graph.outputs = [replaced.get(r, r) for r in graph.outputs]


def _foldable_conv(graph: Graph, bn: Node, by_name: dict[str, Node], users: Counter) -> Node | None:
    """The conv a BN node can fold into: its input, read by nothing else, all parameters constant."""
    if bn.target != BATCH_NORM:
        return None
    src = bn.args["input"]
    conv = by_name.get(src.node) if isinstance(src, Ref) and src.index is None else None
    if conv is None or conv.target != CONV or users[conv.name] != 1:
        return None
    a = bn.args
    params = [conv.args["weight"], conv.args["bias"], a["weight"], a["bias"], a["running_mean"], a["running_var"]]
    if not all(p is None or (isinstance(p, Ref) and p.node in graph.constants) for p in params):
        return None
    return conv


def _absorb_batch_norm(graph: Graph, conv: Node, bn: Node) -> None:
    """conv ← BN ∘ conv: w' = w·s and b' = (b − mean)·s + beta per output channel, s = gamma / √(var + eps)."""
    oc = bn.outputs[0].shape[1]

    def value(ref: Ref) -> np.ndarray:
        return graph.constants[ref.node].astype(np.float64)

    def optional(ref: Ref | None, absent: float) -> np.ndarray:
        return np.full(oc, absent) if ref is None else value(ref)

    a = bn.args
    scale = optional(a["weight"], 1.0) / np.sqrt(value(a["running_var"]) + a["eps"])
    shift = (optional(conv.args["bias"], 0.0) - value(a["running_mean"])) * scale + optional(a["bias"], 0.0)
    w = value(conv.args["weight"])
    taps = (1,) * (w.ndim - 2)
    if conv.args["transposed"]:  # weight [IC, OC/g, *taps]: output channel g·OC/g + j is (group g, column j)
        groups = conv.args["groups"]
        grouped = w.reshape(groups, w.shape[0] // groups, *w.shape[1:])
        w = (grouped * scale.reshape(groups, 1, -1, *taps)).reshape(w.shape)
    else:  # weight [OC, IC/g, *taps]
        w = w * scale.reshape(-1, 1, *taps)
    dtype = graph.constant_meta[conv.args["weight"].node].dtype  # a half model's folded weight may be stored in 16 bits
    conv.args = {**conv.args, "weight": _add_constant(graph, f"{conv.name}_bn_weight", w, dtype),
                 "bias": _add_constant(graph, f"{conv.name}_bn_bias", shift, dtype)}


def _add_constant(graph: Graph, name: str, value: np.ndarray, dtype: str) -> Ref:
    """A folded constant, its values in float32 (a float16 or bfloat16 one is rounded only where a kernel
    reads it in 16 bits)."""
    graph.constants[name] = value.astype(np.float32)
    graph.constant_meta[name] = TensorMeta(value.shape, dtype)
    return Ref(name)


def _fold_pads(graph: Graph) -> None:
    readers: dict[str, list[Node]] = {}
    for node in graph.nodes:
        for r in refs_in(node.args):
            readers.setdefault(r.node, []).append(node)
    outputs = {r.node for r in graph.outputs}
    dropped = set()
    for pad in graph.nodes:
        convs = readers.get(pad.name, [])
        if pad.target != PAD or pad.name in outputs or not convs or not all(_pads_input_of(c, pad) for c in convs):
            continue
        amounts = pad.args["pad"]  # (before, after) pairs, last dim first
        spatial = min(len(c.args["padding"]) for c in convs)
        if pad.args["value"] != 0 or min(amounts) < 0 or len(amounts) > 2 * spatial:
            continue
        for conv in convs:
            leading = list(conv.args["padding"])
            for i, before in enumerate(amounts[0::2]):
                leading[-1 - i] += before
            conv.args = {**conv.args, "input": pad.args["self"], "padding": leading}
        dropped.add(pad.name)
    graph.nodes = [n for n in graph.nodes if n.name not in dropped]


def _pads_input_of(conv: Node, pad: Node) -> bool:
    """conv is a non-transposed convolution reading `pad` as its input only."""
    return (conv.target == CONV and not conv.args["transposed"] and conv.args["input"] == Ref(pad.name)
            and all(r != Ref(pad.name) for k, v in conv.args.items() if k != "input" for r in refs_in(v)))

