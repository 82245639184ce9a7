"""Compile-time folding: subgraphs that depend only on constants and static shapes become constants, stored
as the small tensor they broadcast from."""

from __future__ import annotations

import torch

import webgpu_torch

from .helpers import assert_close


class CausalScores(torch.nn.Module):
    """A causal mask built from arange and full_like, expanded over batch and heads, as HF masks are."""

    def forward(self, scores):
        b, h, s, _ = scores.shape
        pos = torch.arange(s)
        allowed = (pos[None, :] <= pos[:, None])[None, None].expand(b, h, s, s)
        fill = torch.full_like(scores, torch.finfo(torch.float32).min)
        return torch.where(allowed, scores, fill)


def test_shape_only_mask_folds_to_a_small_constant(poisoned):
    scores = torch.randn(3, 4, 37, 37)
    session = webgpu_torch.compile_module(CausalScores(), (scores,))
    assert len(session.program.dispatches) == 1  # the where; the mask and the fill are constants
    stored = sum(a.size for a in session.program.constants.values())
    assert stored <= 37 * 37 + 16, f"{stored} constant elements: the mask was stored expanded"
    assert_close(poisoned(session, scores), CausalScores()(scores))


def test_like_ops_of_an_input_fold_to_one_element():
    class Fill(torch.nn.Module):
        def forward(self, x):
            return x + torch.ones_like(x) * 2 + torch.zeros_like(x)

    x = torch.randn(5, 7)
    session = webgpu_torch.compile_module(Fill(), (x,))
    assert all(a.size == 1 for a in session.program.constants.values())
    assert_close(session(x), x + 2)


def test_uninitialised_creations_fold_to_zeros_of_their_shape():
    """torch's values are whatever memory held (OpInfo compares only their shapes); ours are zeros."""
    class Empty(torch.nn.Module):
        def forward(self, x):
            return x.new_empty_strided((3, 5), (1, 3)), torch.empty_permuted((2, 7), (1, 0)), x * 2.0

    x = torch.randn(5, 7)
    session = webgpu_torch.compile_module(Empty(), (x,))
    strided, permuted, doubled = session(x)
    assert strided.shape == (3, 5) and permuted.shape == (2, 7) and len(session.program.dispatches) == 1
    assert not strided.any() and not permuted.any()
    assert_close(doubled, x.double() * 2)


def test_eye_folds_though_its_aranges_are_uint8(poisoned):
    """torch.eye's decomposition compares uint8 aranges: 8-bit values that folding made are no quantization codes
    (model constants, whose readers never fold), so the whole eye folds."""
    class Eye(torch.nn.Module):
        def forward(self, x):
            return torch.eye(5, 3) + x, torch.linalg.matrix_power(x[:3], 0)

    x = torch.randn(5, 3)
    session = webgpu_torch.compile_module(Eye(), (x,))
    for got, want in zip(poisoned(session, x), Eye()(x.double()), strict=True):
        assert_close(got, want)
