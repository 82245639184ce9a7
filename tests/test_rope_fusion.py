"""The rotary-embedding rewrite (rope_fusion.py): transformers' apply_rotary_pos_emb as one webgpu.rope node and
one dispatch each for queries and keys, every near miss left as it is."""

from __future__ import annotations

import pytest
import torch
from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

import webgpu_torch
from webgpu_torch.compiler import import_graph
from webgpu_torch.compiler.ops.elementwise import ROPE

from .helpers import Fn, assert_close, reference, seeded

SHAPES = [(2, 3, 7, 38), (2, 5, 7, 38), (2, 7, 38), (2, 7, 38)]  # q, k (heads, positions, dims), cos, sin


def _inputs(shapes, name: str) -> list[torch.Tensor]:
    gen = seeded(name)
    return [torch.randn(s, generator=gen) for s in shapes]


def _rope(q, k, cos, sin):
    return apply_rotary_pos_emb(q, k, cos, sin)


def _targets(fn, *inputs) -> list[str]:
    return [n.target for n in import_graph(torch.export.export(Fn(fn), inputs)).nodes]


@pytest.mark.host
def test_transformers_rotary_embedding_is_one_node_for_queries_and_one_for_keys():
    targets = _targets(_rope, *_inputs(SHAPES, "rope"))  # cos and sin unsqueezed (views), then the two
    assert targets == ["aten.unsqueeze.default"] * 2 + [ROPE] * 2


def _rotate(x, h):
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


@pytest.mark.host
@pytest.mark.parametrize("fn", [
    lambda x, c, s: x * c + torch.cat((x[..., 19:], -x[..., :19]), dim=-1) * s,  # rotated the other way
    lambda x, c, s: x * c + torch.cat((-x[..., 18:], x[..., :18]), dim=-1)[..., :38] * s,  # split off centre
    lambda x, c, s: x * c - _rotate(x, 19) * s,  # a difference
    lambda x, c, s: x.flip(-1) * c + _rotate(x, 19) * s,  # another tensor scaled
    lambda x, c, s: (lambda r: (x * c + r * s, r))(_rotate(x, 19)),  # the rotation read twice
    lambda x, c, s: x * c + _rotate(x.flip(0), 19) * s,  # another tensor rotated
], ids=["other_way", "off_centre", "difference", "other_scaled", "rotation_read", "other_rotated"])
def test_near_misses_stay_as_they_are(fn):
    assert ROPE not in _targets(fn, *_inputs([(2, 3, 7, 38), (7, 38), (7, 38)], "near"))


@pytest.mark.e2e
def test_the_rewritten_embedding_matches_float64_in_one_dispatch_each(poisoned):
    inputs = _inputs(SHAPES, "rope")
    session = webgpu_torch.compile(torch.export.export(Fn(_rope), tuple(inputs)))
    assert [session.program.kernels[d.kernel].name for d in session.program.dispatches] == ["elementwise[rope]"] * 2
    for got, want in zip(poisoned(session, *inputs), reference(Fn(_rope), inputs), strict=True):
        assert_close(got, want)
