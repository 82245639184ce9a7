"""weights="float16": constant GEMM weights stored in half precision, f32 accumulation, and the f32 fallback."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.runtime import fit
from webgpu_torch.runtime.session import Session

pytestmark = pytest.mark.gemm

SHAPES = {"vec4": ((3, 89, 132), 132, 76), "gemv": ((3, 772), 772, 1031), "element": ((37, 89), 89, 41)}


@pytest.mark.parametrize("route", sorted(SHAPES))
def test_half_weights_match_rounded_reference(route):
    x_shape, k, n = SHAPES[route]
    gen = torch.Generator().manual_seed(len(route))
    lin = torch.nn.Linear(k, n).eval()
    x = torch.randn(x_shape, generator=gen)
    session = webgpu_torch.compile(torch.export.export(lin, (x,)), weights="float16")
    assert fit.uses_f16(session.program)
    assert any(",f16" in session.program.kernels[d.kernel].name for d in session.program.dispatches)
    # Reference: the f16-rounded weight in float64, so only f32 accumulation error remains.
    ref = torch.nn.functional.linear(x.double(), lin.weight.detach().half().double(), lin.bias.detach().double())
    scale = float(ref.abs().max())
    for p in (session.program, fit.without_f16(session.program)):
        out = Session(p)(x).double()
        assert float((out - ref).abs().max()) <= 1e-5 * scale


@pytest.mark.host
def test_weight_beyond_float16_range_is_refused_at_compile_time():
    lin = torch.nn.Linear(8, 4).eval()
    with torch.no_grad():
        lin.weight[1, 2] = 1e6
    ep = torch.export.export(lin, (torch.randn(3, 8),))
    with pytest.raises(webgpu_torch.UnsupportedError, match=r"(?s)linear.*beyond float16's range.*1e\+06.*float32"):
        webgpu_torch.compile(ep, weights="float16")
    webgpu_torch.compile(ep)  # float32 weights take it


@pytest.mark.host
def test_widened_program_names_its_kernels():
    lin = torch.nn.Linear(132, 76).eval()
    session = webgpu_torch.compile(torch.export.export(lin, (torch.randn(5, 132),)), weights="float16")
    widened = fit.without_f16(session.program)
    assert not fit.uses_f16(widened)
    names = [widened.kernels[d.kernel].name for d in widened.dispatches]
    assert all(",f16" not in name or ",f16 widened" in name for name in names)
    assert any(",f16 widened" in name for name in names)
