"""Scatters, pads and the per-dim maps under dynamic dimensions: one program at every size in the range."""

from __future__ import annotations

import pytest
import torch
from torch.export import Dim

import webgpu_torch

from .helpers import Fn, assert_close, reference

pytestmark = pytest.mark.e2e
F = torch.nn.functional


def _check_sizes(fn, make, dims, sizes, poisoned, **options):
    session = webgpu_torch.compile(torch.export.export(Fn(fn), make(sizes[0]), dynamic_shapes=(dims,)), **options)
    assert session.program.symbols
    for n in sizes:
        inputs = make(n)
        for i, (g, w) in enumerate(zip(poisoned(session, *inputs), reference(fn, list(inputs)), strict=True)):
            assert_close(g, w, what=f"output {i} at size {n}")


@pytest.mark.parametrize("route", ["auto", "segmented"])
def test_kv_cache_update_at_new_positions(route, poisoned):
    """A static cache written at S new positions (index_copy, as HF's static cache does), S dynamic."""
    def step(cache, pos, new):
        updated = cache.index_copy(2, pos, new)
        return updated, updated.scatter_add(2, pos.view(1, 1, -1, 1).expand(new.shape), new)

    def make(s):
        g = torch.Generator().manual_seed(s)
        return (torch.randn(1, 2, 37, 8, generator=g), torch.randperm(37, generator=g)[:s],
                torch.randn(1, 2, s, 8, generator=g))

    s = Dim("s", min=1, max=37)
    _check_sizes(step, make, ({}, {0: s}, {2: s}), (5, 1, 37, 12), poisoned, scatter=route)


def test_pads_flip_and_repeat_of_a_dynamic_length(poisoned):
    """Circular padding exports as empty, copies and slice_scatter; the other pads and maps as themselves."""
    def fn(x):
        return (F.pad(x, (2, 3), mode="circular"), F.pad(x, (3, 1), mode="reflect"),
                F.pad(x, (0, 4), mode="replicate"), F.pad(x, (1, 2), value=-1.0), x.flip(-1), x.repeat(1, 2, 3))

    length = Dim("length", min=5, max=64)
    _check_sizes(fn, lambda n: (torch.randn(2, 3, n, generator=torch.Generator().manual_seed(n)),),
                 ({2: length},), (17, 5, 64, 30), poisoned)
