"""The norm-into-linear rewrite (passes/norm_prologues.py): an rms_norm read by one linear alone becomes that
linear's prologue, which a GEMV computes itself (gemv.wgsl's NORM) and other GEMMs run first; what must not fold
stays an rms_norm."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import webgpu_torch
from webgpu_torch.compiler import import_graph

from .helpers import assert_close, reference, seeded


class NormedProjections(nn.Module):
    """A decoder's attention input: RMSNorm, then the q, k and v projections (one linear once merged)."""

    def __init__(self, k: int = 132, eps: float = 1e-6):
        super().__init__()
        torch.manual_seed(0)
        self.norm = nn.RMSNorm(k, eps=eps)
        nn.init.uniform_(self.norm.weight, 0.5, 1.5)
        self.q, self.k, self.v = (nn.Linear(k, n, bias=False) for n in (67, 37, 37))

    def forward(self, x):
        h = self.norm(x)
        return self.q(h), self.k(h), self.v(h)


def _targets(fn, *inputs) -> list[str]:
    class Fn(nn.Module):
        def __init__(self):
            super().__init__()
            self.m = NormedProjections()

        def forward(self, *xs):
            return fn(self.m, *xs)

    return [n.target for n in import_graph(torch.export.export(Fn(), inputs)).nodes]


@pytest.mark.host
def test_a_norm_before_merged_projections_folds_into_their_linear():
    targets = _targets(lambda m, x: m(x), torch.randn(1, 132))
    assert "aten.rms_norm.default" not in targets and targets.count("aten.linear.default") == 1


@pytest.mark.host
@pytest.mark.parametrize("fn", [
    lambda m, x: (m.q(m.norm(x)), m.norm(x) * 2),  # the norm read twice
    lambda m, x: m.q(F.rms_norm(x, (132,), m.norm.weight, 0.0)),  # eps 0: the prologue's division by zero
    lambda m, x: m.q(F.rms_norm(x, (132,))),  # no weight
    lambda m, x: m.q(F.rms_norm(x.half(), (132,), m.norm.weight.half()).float()),  # a float16 norm
], ids=["read_twice", "eps_zero", "no_weight", "float16"])
def test_what_must_not_fold_stays_a_norm(fn):
    assert "aten.rms_norm.default" in _targets(fn, torch.randn(1, 132))


@pytest.mark.e2e
@pytest.mark.parametrize(("rows", "kernels"), [(1, ["gemv"]), (3, ["gemv"]), (13, ["rms_norm", "gemm"])])
def test_the_normed_projections_match_float64(rows, kernels, poisoned):
    module, x = NormedProjections().eval(), torch.randn(rows, 132, generator=seeded("normed"))
    session = webgpu_torch.compile_module(module, (x,))
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert [n.split("[")[0] for n in names] == kernels, names
    assert ("+rms" in names[0]) == (rows <= 8)
    for got, want in zip(poisoned(session, x), reference(module.double(), [x]), strict=True):
        assert_close(got, want)
