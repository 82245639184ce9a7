"""Graph rewrite: the eager attention pattern into one fused attention node (ops/attention.py).

Matched, around each `_softmax` over the last dim (views, clones and same-shape expands allowed between steps):

    scores = bmm(Q, Kt)  [· scale]  [+ mask]      Q [Z, Sq, D], Kt [Z, D, Skv]; scores viewed as [*L, Sq, Skv]
    out    = bmm(softmax(scores, -1), V)           V [Z, Skv, Dv], out [Z, Sq, Dv]

as HF's eager attention, BART, ViT and DaViT's window and channel attention export it (matmul decomposes to
expand, clone, view and bmm). Q, Kt and V are traced back through their reshapes to the tensors of shape
[*L, ., .] they were made from (the heads before matmul flattened them), so the fused node reads those in place
and the clones that fed bmm die. The fused node replaces the reshape of `out` back to [*L, Sq, Dv] that
follows (or, without one, `out` becomes a view of the fused result). The match is refused, leaving the
ops as they are, where an intermediate is read elsewhere (e.g. returned attention weights), L has more than
two dims, or a head dim exceeds the kernel's limit.
"""

from __future__ import annotations

from collections import defaultdict
from math import prod
from numbers import Number

from ...format import dtypes
from ..graph import Graph, Node, Ref, TensorMeta, drop_dead, refs_in
from ..ops.attention import MAX_HEAD_DIM
from ..options import Options

RESHAPES = {"aten.view.default", "aten._unsafe_view.default", "aten.reshape.default"}
PASS_THROUGH = RESHAPES | {"aten.clone.default", "aten.expand.default", "aten.alias.default"}
FUSED = "webgpu.eager_attention.default"


def fuse_attention(graph: Graph, options: Options) -> Graph:
    metas = graph.metas()
    by_name = {n.name: n for n in graph.nodes}
    users: dict[str, list[Node]] = defaultdict(list)
    for node in graph.nodes:
        for r in {r.node for r in refs_in(node.args)}:
            users[r].append(node)
    for r in graph.outputs:
        users[r.node].append(None)  # an output: a use outside the graph
    replaced: dict[str, list[Node]] = {}  # a replaced node's name -> the nodes that now compute it
    for node in graph.nodes:
        if node.target == "aten._softmax.default":
            match = _Match(node, by_name, users, metas)
            if match.ok:
                replaced[match.replaces.name] = match.nodes()
    if replaced:
        nodes = [new for node in graph.nodes for new in replaced.get(node.name, [node])]
        graph.nodes = drop_dead(nodes, graph.outputs)
    return graph


class _Match:
    def __init__(self, softmax: Node, by_name: dict[str, Node], users: dict, metas: dict):
        self.softmax, self.by_name, self.users, self.metas = softmax, by_name, users, metas
        self.ok = self._match()

    # -- navigation ---------------------------------------------------------------------------------------------
    def _producer(self, ref) -> Node | None:
        return self.by_name.get(ref.node) if isinstance(ref, Ref) and ref.index is None else None

    def _only_user(self, node: Node) -> Node | None:
        users = self.users[node.name]
        return users[0] if len(users) == 1 else None

    def _through_views_down(self, node: Node) -> Node | None:
        """The first non-view consumer of `node`, every step being the only use of the one before."""
        nxt = self._only_user(node)
        while nxt is not None and _is_pass_through(nxt, self.metas):
            nxt = self._only_user(nxt)
        return nxt

    def _through_views_up(self, ref: Ref, single_use: bool) -> tuple[Ref, Node | None]:
        """Back from `ref` through pass-through views: the first value made by another op, and that op."""
        while (node := self._producer(ref)) is not None and _is_pass_through(node, self.metas) \
                and (not single_use or self._only_user(node) is not None):
            ref = node.args["self"]
        return ref, self._producer(ref)

    def _source(self, ref: Ref, lead: tuple[int, ...], last2: tuple[int, int]) -> Ref | None:
        """The furthest-back value of shape [*lead, *last2] that `ref` is an order-preserving reshape of."""
        found = None
        while True:
            meta = self.metas.get(ref)
            if meta is not None and meta.shape == (*lead, *last2):
                found = ref
            node = self._producer(ref)
            if node is None or not _is_pass_through(node, self.metas):
                return found
            ref = node.args["self"]

    # -- the pattern ----------------------------------------------------------------------------------------------
    def _match(self) -> bool:
        sm = self.softmax
        scores_meta = sm.outputs[0]
        if sm.args["dim"] not in (-1, scores_meta.ndim - 1) or sm.args["half_to_float"] or \
                not dtypes.is_float(scores_meta.dtype) or not 3 <= scores_meta.ndim <= 4:
            return False
        self.bmm2 = self._through_views_down(sm)
        if self.bmm2 is None or self.bmm2.target != "aten.bmm.default":
            return False
        if self._through_views_up(self.bmm2.args["self"], single_use=True)[1] is not sm:
            return False  # the probabilities must be bmm's left operand
        self.lead = scores_meta.shape[:-2]
        x, node = self._through_views_up(sm.args["self"], single_use=True)
        self.mask, self.scale = None, 1.0
        if node is not None and node.target == "aten.add.Tensor" and node.args["alpha"] == 1 and self._alone(node) \
                and node.outputs[0] == scores_meta:  # the mask broadcasts against [*L, Sq, Skv]
            x, self.mask = self._split_mask(node)
            if x is None:
                return False
            x, node = self._through_views_up(x, single_use=True)
        if node is not None and node.target in ("aten.mul.Tensor", "aten.div.Tensor") and \
                isinstance(node.args["other"], Number) and self._alone(node) and not node.args.get("rounding_mode"):
            other = float(node.args["other"])
            self.scale = other if node.target == "aten.mul.Tensor" else 1.0 / other
            x, node = self._through_views_up(node.args["self"], single_use=True)
        if node is None or node.target != "aten.bmm.default" or not self._alone(node):
            return False
        sq, skv = scores_meta.shape[-2:]
        z, _, d = self.metas[node.args["self"]].shape
        dv = self.metas[self.bmm2.args["mat2"]].shape[-1]
        if prod(self.lead) != z or max(d, dv) > MAX_HEAD_DIM or len(self.lead) > 2:
            return False
        self.q = self._source(node.args["self"], self.lead, (sq, d))
        self.kt = self._source(node.args["mat2"], self.lead, (d, skv))
        self.v = self._source(self.bmm2.args["mat2"], self.lead, (skv, dv))
        self.out_meta = TensorMeta((*self.lead, sq, dv), scores_meta.dtype)
        after = self._only_user(self.bmm2)
        reshaped = after is not None and after.target in RESHAPES and after.outputs[0] == self.out_meta
        self.replaces = after if reshaped else self.bmm2
        return None not in (self.q, self.kt, self.v)

    def _alone(self, node: Node) -> bool:
        return len(self.users[node.name]) == 1

    def _split_mask(self, add: Node) -> tuple[Ref | None, Ref | None]:
        """(the scores operand, the mask operand) of `scores + mask`: the mask is the side no bmm produced."""
        a, b = add.args["self"], add.args["other"]
        for scores, mask in ((a, b), (b, a)):
            _, node = self._through_views_up(scores, single_use=True) if isinstance(scores, Ref) else (None, None)
            if node is not None and node.target in ("aten.bmm.default", "aten.mul.Tensor", "aten.div.Tensor") \
                    and isinstance(mask, Ref) and dtypes.is_float(self.metas[mask].dtype):
                return scores, mask
        return None, None

    def nodes(self) -> list[Node]:
        """The nodes replacing `self.replaces`: kᵀ's transpose (a view), the fused node, and where the second
        bmm itself is replaced, a view of the result in bmm's shape."""
        name, source = self.softmax.name, self.softmax.source
        lead_nd = len(self.lead)
        kt_meta = self.metas[self.kt]
        key = Node(f"{name}_key", "aten.transpose.int", {"self": self.kt, "dim0": lead_nd, "dim1": lead_nd + 1},
                   (TensorMeta((*self.lead, kt_meta.shape[-1], kt_meta.shape[-2]), kt_meta.dtype),), source)
        args = {"query": self.q, "key": Ref(key.name), "value": self.v, "attn_mask": self.mask, "scale": self.scale}
        if self.replaces is not self.bmm2:
            return [key, Node(self.replaces.name, FUSED, args, (self.out_meta,), source)]
        fused = Node(f"{name}_attention", FUSED, args, (self.out_meta,), source)
        view = Node(self.bmm2.name, "aten.view.default", {"self": Ref(fused.name),
                                                          "size": list(self.bmm2.outputs[0].shape)},
                    self.bmm2.outputs, self.bmm2.source)
        return [key, fused, view]


def _is_pass_through(node: Node, metas: dict) -> bool:
    """A view-like node that keeps the elements in order: reshapes and clones always, expand only when it keeps
    the shape."""
    if node.target == "aten.expand.default":
        return metas.get(node.args["self"]) == node.outputs[0]
    return node.target in PASS_THROUGH
