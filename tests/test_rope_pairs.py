"""The query-key rope pairing (passes/rope_pairs.py): where q and k are heads of one merged projection, their
rotary embeddings are one webgpu.rope node and one dispatch; what must not pair stays two."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import webgpu_torch
from webgpu_torch.compiler import import_graph
from webgpu_torch.compiler.ops.elementwise import ROPE

from .helpers import assert_close, reference, seeded


class Attention(nn.Module):
    """Llama's attention input at prime-ish widths: q, k, v projections (one merged linear), per-head views,
    RoPE, grouped-query attention (2 query heads a key head)."""

    def __init__(self, merged: bool = True, head: int = 14):
        super().__init__()
        torch.manual_seed(0)
        self.head = head
        # Biased alike they merge; a bias on k alone keeps it apart from q and v (linear_merging.py).
        self.q = nn.Linear(60, 4 * head, bias=merged)
        self.k, self.v = nn.Linear(60, 2 * head, bias=True), nn.Linear(60, 2 * head, bias=merged)

    def forward(self, x, cos, sin):
        b, s, _ = x.shape
        q, k, v = (p(x).view(b, s, -1, self.head).transpose(1, 2) for p in (self.q, self.k, self.v))
        q, k = apply_rotary_pos_emb(q, k, cos, sin)
        return F.scaled_dot_product_attention(q, k, v, enable_gqa=True), k


def _inputs(s: int):
    g = seeded(f"pairs{s}")
    return torch.randn(1, s, 60, generator=g), torch.randn(1, s, 14, generator=g), torch.randn(1, s, 14, generator=g)


@pytest.mark.host
def test_query_and_key_ropes_of_one_projection_are_one_node():
    targets = [n.target for n in import_graph(torch.export.export(Attention(), _inputs(5))).nodes]
    assert targets.count(ROPE) == 1


@pytest.mark.host
def test_ropes_of_separate_projections_stay_two():
    targets = [n.target for n in import_graph(torch.export.export(Attention(merged=False), _inputs(5))).nodes]
    assert targets.count(ROPE) == 2


@pytest.mark.e2e
@pytest.mark.parametrize("positions", [1, 7])
def test_the_paired_ropes_match_float64_in_one_dispatch(positions, poisoned):
    module, inputs = Attention().eval(), _inputs(positions)
    session = webgpu_torch.compile_module(module, inputs)
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert sum(n.startswith("elementwise[rope") for n in names) == 1, names
    for got, want in zip(poisoned(session, *inputs), reference(module.double(), list(inputs)), strict=True):
        assert_close(got, want)
