"""The sibling-linear rewrite (linear_merging.py): linears of one input with constant weights as one linear over
the stacked weights, each output a slice; what must not merge stays apart."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler import import_graph

from .helpers import assert_close, reference, seeded


class Projections(torch.nn.Module):
    """Attention's input projections of different widths (prime, straddling tiles), then per-head views."""

    def __init__(self, bias: bool = True, hidden: int = 67):
        super().__init__()
        torch.manual_seed(0)
        self.q, self.k, self.v = (torch.nn.Linear(hidden, n, bias=bias) for n in (76, 38, 38))

    def forward(self, x):
        q, k, v = (p(x).view(*x.shape[:-1], -1, 19).transpose(1, 2) for p in (self.q, self.k, self.v))
        return q @ k.repeat(1, 2, 1, 1).transpose(-1, -2), v * 2


def _targets(module, x) -> list[str]:
    return [n.target for n in import_graph(torch.export.export(module, (x,))).nodes]


@pytest.mark.host
@pytest.mark.parametrize("bias", [True, False])
def test_query_key_value_projections_are_one_linear(bias):
    targets = _targets(Projections(bias), torch.randn(2, 7, 67))
    assert targets.count("aten.linear.default") == 1 and targets.count("aten.slice.Tensor") == 3


@pytest.mark.host
@pytest.mark.parametrize("fn", [
    lambda m, x: (m.q(x), m.k(x * 2)),  # other inputs
    lambda m, x: (m.q(x), torch.relu(m.k(x))),  # an activation to fold into its GEMM
    lambda m, x: (m.q(x), m.k(x) + x[..., :38]),  # … a residual too
    lambda m, x: (torch.nn.functional.linear(x, m.q.weight), m.k(x)),  # one biased, one not
], ids=["other_inputs", "activation", "residual", "bias_and_none"])
def test_what_must_not_merge_stays_apart(fn):
    m = Projections()
    targets = _targets(Fn2(m, fn), torch.randn(2, 7, 67))
    assert targets.count("aten.linear.default") == 2


class Fn2(torch.nn.Module):
    def __init__(self, m, fn):
        super().__init__()
        self.m, self.fn = m, fn

    def forward(self, x):
        return self.fn(self.m, x)


@pytest.mark.e2e
def test_the_merged_projections_match_float64_in_one_gemm(poisoned):
    module, x = Projections().eval(), torch.randn(2, 7, 67, generator=seeded("merged"))
    session = webgpu_torch.compile_module(module, (x,))
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert sum(n.startswith("gemm") for n in names) == 2  # the merged projections, then q @ kᵀ
    for got, want in zip(poisoned(session, x), reference(module.double(), [x]), strict=True):
        assert_close(got, want)


@pytest.mark.e2e
@pytest.mark.parametrize("rows", [1, 7])
def test_torchao_int4_projections_stack_their_packed_codes(rows, poisoned):
    """torchao's packed weights (quantized_weights.py) stack as packed words, each row with its groups' scales
    and zero points: one GEMV or GEMM, the values those of the three dequantizations."""
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    from torchao.quantization.quant_primitives import MappingType

    module = Projections(hidden=96).eval()
    quantize_(module, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32),
                                           mapping_type=MappingType.ASYMMETRIC))
    x = torch.randn(2, rows, 96, generator=seeded("merged torchao"))
    graph = import_graph(torch.export.export(module, (x,)))
    assert [n.target for n in graph.nodes].count("webgpu.dequantize.default") == 1
    session = webgpu_torch.compile_module(module, (x,))
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert sum(n.startswith(("gemm", "gemv")) and ",q4" in n for n in names) == 1, names
    with torch.no_grad():
        want = module(x)
    for got, w in zip(poisoned(session, x), want, strict=True):
        assert_close(got, w)
