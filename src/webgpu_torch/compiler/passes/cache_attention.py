"""Graph rewrites that let attention read a static KV cache as it lies. A model exported over transformers'
StaticCache attends over the whole preallocated cache every step; two patterns around its attention say how
little of that it needs:

- the live prefix: a mask that only says "key j is visible to query row i while j <= limit_i" — the causal
  mask over a static cache, `le(arange(L), position + arange(Sq))` broadcast over batch and heads, bool (sdpa)
  or as `where(that, 0, -inf)` added to the scores (the eager form, BART's) — becomes the attention's
  `key_limit` argument: the [.., Sq, 1] tensor of limits, from which the kernel reads each row's live length
  (ops/attention.py), so a step's attention costs the prefix, not the cache.
- grouped heads: repeat_kv's `reshape(expand(unsqueeze(kv, 2)))`, a copy of a GQA model's whole cache per
  layer per step, becomes `kv` read with grouped heads (sdpa's enable_gqa).

Each leaves the graph as it is wherever its pattern is not exact.
"""

from __future__ import annotations

import numpy as np

from ..graph import Graph, Node, Ref, drop_dead
from ..ops.attention import MAX_HEAD_DIM
from ..options import Options

SDPA = "aten.scaled_dot_product_attention.default"
ATTENTION = (SDPA, "webgpu.eager_attention.default")
# Ops that change a mask's shape only by broadcasting or by adding leading dims of 1 (checked per node).
BROADCASTS = ("aten.expand.default", "aten.unsqueeze.default", "aten.view.default", "aten.reshape.default",
              "aten._unsafe_view.default", "aten.clone.default", "aten.alias.default")
MASKED = -3.0e38  # an additive mask value at or below this drops its key (-inf, or float32's lowest)


def rewrite(graph: Graph, options: Options) -> Graph:
    by_name = {n.name: n for n in graph.nodes}
    metas = graph.metas()
    changed = False
    for node in graph.nodes:
        if node.target not in ATTENTION:
            continue
        changed |= _group_heads(node, by_name, metas)
        mask = node.args.get("attn_mask")
        limit = _key_limit(mask, graph, by_name, metas) if isinstance(mask, Ref) else None
        if limit is not None and _fits(node, metas) and metas[mask].shape[-1] == metas[node.args["key"]].shape[-2]:
            node.args = {**node.args, "attn_mask": None, "key_limit": limit}
            changed = True
    if changed:
        graph.nodes = drop_dead(graph.nodes, graph.outputs)
    return graph


def _fits(node: Node, metas: dict) -> bool:
    """Whether the fused kernels take this attention (they are what reads a key limit)."""
    return max(metas[node.args["query"]].shape[-1], metas[node.args["value"]].shape[-1]) <= MAX_HEAD_DIM


def _key_limit(mask: Ref, graph: Graph, by_name: dict, metas: dict) -> Ref | None:
    """`limit` when `mask` is `le(arange(L), limit)` (or `ge(limit, arange(L))`), through broadcasts, and for a
    float mask through `where(that, 0, -inf)`; L is the mask's key count and limit has one column."""
    node = _through_broadcasts(mask, by_name, metas)
    if metas[mask].dtype == "float32":
        if node is None or node.target != "aten.where.self" or not (
                _constant_is(node.args["self"], graph, lambda v: (v == 0).all())
                and _constant_is(node.args["other"], graph, lambda v: (v <= MASKED).all())):
            return None
        node = _through_broadcasts(node.args["condition"], by_name, metas)
    elif metas[mask].dtype != "bool":
        return None
    if node is None or node.target not in ("aten.le.Tensor", "aten.ge.Tensor"):
        return None
    keys, limit = (node.args["self"], node.args["other"])[::1 if node.target == "aten.le.Tensor" else -1]
    length = metas[mask].shape[-1]
    if not isinstance(limit, Ref) or metas[limit].dtype not in ("int32", "int64") or metas[limit].shape[-1:] != (1,):
        return None
    arange = np.arange(length)
    return limit if _constant_is(keys, graph, lambda v: v.shape[-1:] == (length,) and (
        v.reshape(-1, length) == arange).all()) else None


def _through_broadcasts(ref: Ref, by_name: dict, metas: dict) -> Node | None:
    """The node making `ref` once broadcasts that keep its dims right-aligned are looked through."""
    node = by_name.get(ref.node) if ref.index is None else None
    while node is not None and node.target in BROADCASTS and _right_aligned(node, metas):
        src = node.args["self"]
        node = by_name.get(src.node) if isinstance(src, Ref) and src.index is None else None
    return node


def _right_aligned(node: Node, metas: dict) -> bool:
    """An expand (broadcasting aligns dims from the right) or a view adding only leading dims of 1."""
    if node.target == "aten.expand.default":
        return True
    before, after = metas[node.args["self"]].shape, node.outputs[0].shape
    lead = len(after) - len(before)
    return lead >= 0 and after[lead:] == before and all(n == 1 for n in after[:lead])


def _constant_is(value, graph: Graph, test) -> bool:
    """Whether `value` is a constant (a graph constant, or a Python number) for which test(array) holds."""
    if isinstance(value, Ref):
        array = graph.constants.get(value.node) if value.index is None else None
        return array is not None and bool(test(np.asarray(array)))
    return isinstance(value, (int, float)) and bool(test(np.asarray(value)))


def _group_heads(node: Node, by_name: dict, metas: dict) -> bool:
    """sdpa over repeat_kv(k), repeat_kv(v) with one group size: k and v themselves, grouped (enable_gqa)."""
    if node.target != SDPA:
        return False
    sources = [_repeated(node.args[name], by_name, metas) for name in ("key", "value")]
    if None in sources or sources[0][1] != sources[1][1]:
        return False
    node.args = {**node.args, "key": sources[0][0], "value": sources[1][0], "enable_gqa": True}
    return True


def _repeated(ref, by_name: dict, metas: dict) -> tuple[Ref, int] | None:
    """(kv, group) when `ref` is `reshape(expand(unsqueeze(kv, 2), [B, Hkv, group, S, D]), [B, Hkv·group, S, D])`
    (the reshape of the expand as export writes it: a clone and a view)."""
    reshape = _made_by(ref, by_name, ("aten.reshape.default", "aten.view.default", "aten._unsafe_view.default"))
    copied = reshape and _made_by(reshape.args["self"], by_name, ("aten.clone.default",))
    expand = _made_by(copied.args["self"] if copied else reshape and reshape.args["self"], by_name,
                      ("aten.expand.default",))
    unsqueeze = expand and _made_by(expand.args["self"], by_name, ("aten.unsqueeze.default",))
    if not unsqueeze or unsqueeze.args["dim"] != 2 or len(metas[unsqueeze.args["self"]].shape) != 4:
        return None
    kv = unsqueeze.args["self"]
    b, hkv, s, d = metas[kv].shape
    group = expand.outputs[0].shape[2]
    if expand.outputs[0].shape != (b, hkv, group, s, d) or reshape.outputs[0].shape != (b, hkv * group, s, d):
        return None
    return kv, group


def _made_by(ref, by_name: dict, targets: tuple[str, ...]) -> Node | None:
    """The node of one of `targets` that makes `ref`, if one does."""
    node = by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None
    return node if node is not None and node.target in targets else None
