"""The eager attention pattern compiles to one fused dispatch; patterns that must stay unfused do."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch

from .helpers import Fn, assert_close, reference

pytestmark = pytest.mark.gemm


def kernels(session) -> list[str]:
    return [session.program.kernels[d.kernel].name.split("[")[0] for d in session.program.dispatches]


def hf_eager(q, k, v, mask):  # transformers' eager_attention_forward, then the merge of the heads
    w = torch.matmul(q, k.transpose(2, 3)) * 0.125 + mask
    return torch.matmul(torch.softmax(w, dim=-1), v).transpose(1, 2).reshape(2, 13, 256)


def test_hf_eager_attention_and_head_merge_are_one_dispatch(poisoned):
    q, k, v = (torch.randn(2, 4, 13, 64) for _ in range(3))
    mask = torch.zeros(2, 1, 1, 13)
    mask[1, ..., 9:] = torch.finfo(torch.float32).min
    session = webgpu_torch.compile(torch.export.export(Fn(hf_eager), (q, k, v, mask)))
    assert kernels(session) == ["attention"]
    assert_close(poisoned(session, q, k, v, mask), reference(hf_eager, [q, k, v, mask]))


def test_sdpa_and_head_merge_are_one_dispatch(poisoned):
    def merged(q, k, v):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 13, 96)

    q, k, v = (torch.randn(2, 3, 13, 32) for _ in range(3))
    session = webgpu_torch.compile(torch.export.export(Fn(merged), (q, k, v)))
    assert kernels(session) == ["attention"]
    assert_close(poisoned(session, q, k, v), reference(merged, [q, k, v]))


def test_returned_attention_weights_keep_the_ops():
    def with_weights(q, k, v):
        w = torch.softmax(q @ k.transpose(-2, -1), dim=-1)
        return w @ v, w

    q, k, v = (torch.randn(3, 7, 16) for _ in range(3))
    session = webgpu_torch.compile(torch.export.export(Fn(with_weights), (q, k, v)))
    assert "attention" not in kernels(session) and "softmax" in kernels(session)
    for got, want in zip(session(q, k, v), reference(with_weights, [q, k, v]), strict=True):
        assert_close(got, want)


def test_channel_attention_over_many_tokens_stays_unfused():
    def channel(q, k, v):
        return (torch.softmax(q.transpose(-1, -2) @ k, dim=-1) @ v.transpose(-1, -2)).transpose(-1, -2)

    q, k, v = (torch.randn(1, 2, 300, 8) * 0.1 for _ in range(3))  # head dim 300 > the fused kernel's 256
    session = webgpu_torch.compile(torch.export.export(Fn(channel), (q, k, v)))
    assert "attention" not in kernels(session)
    assert_close(session(q, k, v), reference(channel, [q, k, v]))
