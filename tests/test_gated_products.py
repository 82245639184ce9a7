"""The gated-product rewrite (passes/gated_products.py): act(gate) * up as one elementwise node, after which a
gated MLP's gate and up projections stack into one linear (linear_merging.py) that then stores the gated
product itself (gated_linears.py: a GEMV's, bit for bit what the two dispatches it replaces computed); what must
not rewrite stays."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from torch import nn

import webgpu_torch
from webgpu_torch.compiler import import_graph, passes
from webgpu_torch.runtime import fit
from webgpu_torch.runtime.session import Session

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
def test_a_gated_mlp_is_two_linears_the_first_storing_the_gated_product():
    graph = import_graph(torch.export.export(GatedMLP(), (torch.randn(2, 7, 67),)))
    assert [n.target for n in graph.nodes] == ["aten.linear.default"] * 2  # gate|up storing the product, down
    assert graph.nodes[0].args["gate"].activation == "silu" and graph.nodes[0].outputs[0].shape == (2, 7, 131)


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
    """A GEMV (one row) stores the gated product; 13 rows' tiled product is followed by the product's own."""
    module, x = GatedMLP(act, hidden=68).eval(), torch.randn(rows, 68, generator=seeded("gated"))
    session = webgpu_torch.compile_module(module, (x,))
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert sum(n.startswith(("gemm", "gemv")) for n in names) == 2 and len(names) == 2 + (rows > 1), names
    for got, want in zip(poisoned(session, x), reference(module.double(), [x]), strict=True):
        assert_close(got, want)


def _torchao_int4(module):
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_primitives import MappingType

    quantize_(module, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32),
                                           mapping_type=MappingType.ASYMMETRIC))
    return module


@pytest.mark.e2e
@pytest.mark.parametrize(("options", "quantize"), [
    ({}, None), ({"weights": "int4"}, None), ({"precision": "float16"}, None),
    ({"precision": "float16", "weights": "int4"}, None), ({"weights": "float16"}, None), ({}, _torchao_int4)],
    ids=["float32", "int4", "f16_activations", "f16_activations_int4", "f16_weights", "torchao_int4_zero_points"])
def test_the_gemv_stores_what_the_gemv_and_the_gated_product_computed(options, quantize, monkeypatch):
    """Bit for bit, on every storage: the sums are rounded to the stored dtype before the gate, as a stored
    product read back by the elementwise op is (torchao's packed codes interleave with their groups' scales and
    zero points)."""
    module, x = GatedMLP(hidden=128, inner=96).eval(), torch.randn(3, 128, generator=seeded("gated-exact"))
    module = quantize(module) if quantize else module
    fused = webgpu_torch.compile_module(module, (x,), **options)
    monkeypatch.setattr(passes, "PIPELINE", tuple(p for p in passes.PIPELINE if p.__name__ != "fold_gates"))
    apart = webgpu_torch.compile_module(module, (x,), **options)
    counts = [len(s.program.dispatches) for s in (fused, apart)]
    assert counts == [2, 3], counts
    torch.testing.assert_close(fused(x), apart(x), rtol=0, atol=0)
    if fit.uses_f16(fused.program):  # and their float32 twins, for an adapter without shader-f16
        twins = [Session(fit.without_f16(s.program)) for s in (fused, apart)]
        torch.testing.assert_close(twins[0](x), twins[1](x), rtol=0, atol=0)
