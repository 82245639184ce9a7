"""Strided-view arithmetic against torch's own views (no GPU)."""

from __future__ import annotations

import random

import pytest
import torch

from webgpu_torch.compiler import layout
from webgpu_torch.format.program import Tensor, contiguous_strides

pytestmark = pytest.mark.host


def as_tensor(t: torch.Tensor) -> Tensor:
    return Tensor(0, tuple(t.shape), tuple(t.stride()), t.storage_offset())


def same_view(ours: Tensor | None, theirs: torch.Tensor) -> bool:
    return ours is not None and ours.shape == tuple(theirs.shape) and ours.offset == theirs.storage_offset() and all(
        s == t for n, s, t in zip(ours.shape, ours.strides, theirs.stride(), strict=True) if n != 1)


def test_view_matches_torch_where_torch_can_view_and_refuses_where_it_cannot():
    rng = random.Random(3)
    base = torch.arange(2 * 3 * 4 * 5).reshape(2, 3, 4, 5)
    for _ in range(300):
        perm = list(range(4))
        rng.shuffle(perm)
        x = base.permute(perm)
        shape = list(x.shape)
        # a random regrouping of the element count into new dims
        n = x.numel()
        new = []
        while n > 1:
            d = rng.choice([k for k in range(1, n + 1) if n % k == 0])
            new.append(d)
            n //= d
        new += [1] * rng.randint(0, 2)
        rng.shuffle(new)
        ours = layout.view(as_tensor(x), tuple(new))
        try:
            theirs = x.view(new)
        except RuntimeError:
            assert ours is None, f"view of {shape} strides {x.stride()} to {new} should be refused"
            continue
        assert same_view(ours, theirs), f"{shape} {x.stride()} -> {new}: {ours} vs {theirs.stride()}"


def test_slice_select_permute_unsqueeze_squeeze_match_torch():
    x = torch.arange(7 * 11 * 13).reshape(7, 11, 13)
    t = as_tensor(x)
    assert same_view(layout.slice_(t, 1, 2, 10, 3), x[:, 2:10:3])
    assert same_view(layout.slice_(t, -1, -5, None, 1), x[..., -5:])
    assert same_view(layout.select(t, 2, -1), x[:, :, -1])
    assert same_view(layout.permute(t, [2, 0, 1]), x.permute(2, 0, 1))
    assert same_view(layout.unsqueeze(t, 3), x.unsqueeze(3))
    assert same_view(layout.squeeze(layout.unsqueeze(t, 0), [0]), x)
    assert same_view(layout.expand(layout.unsqueeze(t, 1), [7, 4, 11, 13]), x.unsqueeze(1).expand(7, 4, 11, 13))


def test_broadcast_to_uses_stride_zero():
    b = layout.broadcast_to(Tensor(0, (41,), (1,)), (37, 41))
    assert b.strides == (0, 1)
    b = layout.broadcast_to(Tensor(0, (37, 1), (1, 1)), (3, 37, 41))
    assert b.strides == (0, 1, 0)
    assert contiguous_strides((2, 3, 4)) == (12, 4, 1)
