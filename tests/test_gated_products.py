"""The gated-product rewrite (passes/gated_products.py): act(gate) * up as one elementwise node, after which a
gated MLP's gate and up projections stack into one linear (linear_merging.py); what must not rewrite stays."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import webgpu_torch
from webgpu_torch.compiler import import_graph

from .helpers import assert_close, reference, seeded

GATED = "webgpu.gated.default"


class GatedMLP(nn.Module):
    """transformers' LlamaMLP at prime widths: down(act(gate(x)) * up(x))."""

    def __init__(self, act=F.silu, hidden: int = 67, inner: int = 131):
        super().__init__()
        torch.manual_seed(0)
        self.act = act
        self.gate, self.up = nn.Linear(hidden, inner, bias=False), nn.Linear(hidden, inner, bias=False)
        self.down = nn.Linear(inner, hidden, bias=False)

    def forward(self, x):
        return self.down(self.act(self.gate(x)) * self.up(x))


def _targets(module, x) -> list[str]:
    return [n.target for n in import_graph(torch.export.export(module, (x,))).nodes]


@pytest.mark.host
def test_a_gated_mlp_is_one_stacked_linear_and_one_gated_product():
    targets = _targets(GatedMLP(), torch.randn(2, 7, 67))
    assert targets.count(GATED) == 1 and targets.count("aten.linear.default") == 2  # gate|up, down
    assert "aten.silu.default" not in targets and "aten.mul.Tensor" not in targets


@pytest.mark.host
@pytest.mark.parametrize("fn", [
    lambda g, u: (lambda s: (s * u, s))(F.silu(g)),  # the activation read elsewhere
    lambda g, u: torch.sigmoid(g) * 2.0,  # a scalar
    lambda g, u: F.silu(g)[:, :1] * u,  # a view between them
], ids=["activation_read_twice", "scalar", "view_between"])
def test_what_must_not_rewrite_stays(fn):
    class Fn(nn.Module):
        def forward(self, g, u):
            return fn(g, u)

    g = torch.randn(3, 5)
    graph = import_graph(torch.export.export(Fn(), (g, g)))
    assert GATED not in [n.target for n in graph.nodes]


@pytest.mark.e2e
@pytest.mark.parametrize("act", [F.silu, lambda v: F.gelu(v, approximate="tanh")], ids=["silu", "gelu_tanh"])
@pytest.mark.parametrize("rows", [1, 13])
def test_the_gated_mlp_matches_float64_in_two_gemms(act, rows, poisoned):
    module, x = GatedMLP(act).eval(), torch.randn(rows, 67, generator=seeded("gated"))
    session = webgpu_torch.compile_module(module, (x,))
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert sum(n.startswith(("gemm", "gemv")) for n in names) == 2 and len(names) == 3, names
    for got, want in zip(poisoned(session, x), reference(module.double(), [x]), strict=True):
        assert_close(got, want)
