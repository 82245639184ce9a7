"""The RMSNorm rewrite (norm_fusion.py): transformers' RMSNorm as one rms_norm node, its weight folded in, and
every near miss left as it is."""

from __future__ import annotations

import pytest
import torch
from transformers.models.llama.modeling_llama import LlamaRMSNorm

import webgpu_torch
from webgpu_torch.compiler import import_graph

from .helpers import Fn, assert_close, reference


def _targets(module, x) -> list[str]:
    return [n.target for n in import_graph(torch.export.export(module, (x,))).nodes]


def _norm() -> LlamaRMSNorm:
    norm = LlamaRMSNorm(67, eps=1e-5)
    with torch.no_grad():
        norm.weight.copy_(torch.randn(67, generator=torch.Generator().manual_seed(0)))
    return norm


@pytest.mark.host
def test_llama_rms_norm_is_one_node_with_its_weight():
    assert _targets(_norm(), torch.randn(3, 5, 67)) == ["aten.rms_norm.default"]


@pytest.mark.host
@pytest.mark.parametrize("fn", [
    lambda x: x * torch.rsqrt(x.pow(3).mean(-1, keepdim=True) + 1e-6),  # not a square
    lambda x: x * torch.rsqrt(x.pow(2).mean(0, keepdim=True) + 1e-6),  # not over the last dim
    lambda x: (lambda sq: (x * torch.rsqrt(sq.mean(-1, keepdim=True) + 1e-6), sq))(x.pow(2)),  # square read twice
    lambda x: x.flip(-1) * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6),  # another tensor scaled
], ids=["cube", "dim0", "square_read", "other_scaled"])
def test_near_misses_stay_as_they_are(fn):
    assert "aten.rms_norm.default" not in _targets(Fn(fn), torch.randn(3, 5, 67))


@pytest.mark.e2e
def test_the_rewritten_norm_matches_float64(poisoned):
    norm, x = _norm().eval(), torch.randn(4, 9, 67) * 3 + 1
    session = webgpu_torch.compile_module(norm, (x,))
    assert [session.program.kernels[d.kernel].name for d in session.program.dispatches] == ["rms_norm"]
    assert_close(poisoned(session, x), reference(norm, [x]))
