"""Every GEMM tile configuration, forced, on shapes straddling its tile edges, in each operand layout."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.ops.gemm import CONFIGS

from .helpers import Fn, assert_close, reference, seeded

pytestmark = pytest.mark.gemm

LAYOUTS = {
    "nn": (lambda a, b: a @ b, [(132, 76), (76, 140)]),
    "tn": (lambda a, b: a.t() @ b, [(76, 132), (76, 140)]),
    "nt_bias_relu": (lambda a, b, c: torch.relu(torch.addmm(c, a, b.t())), [(132, 76), (140, 76), (140,)]),
    "odd": (lambda a, b: a @ b, [(131, 77), (77, 139)]),
}


@pytest.mark.parametrize("layout", sorted(LAYOUTS))
@pytest.mark.parametrize("config", sorted(CONFIGS))
def test_config(config, layout, poisoned):
    fn, shapes = LAYOUTS[layout]
    gen = seeded(config + layout)
    inputs = [torch.randn(s, generator=gen) for s in shapes]
    session = webgpu_torch.compile(torch.export.export(Fn(fn), tuple(inputs)), gemm=config)
    used = {session.program.kernels[d.kernel].name for d in session.program.dispatches}
    vec4 = CONFIGS[config].vec4 and layout != "odd"
    assert any(("vec4" in k) == vec4 for k in used), used
    assert_close(poisoned(session, *inputs), reference(fn, inputs), what=f"{config} {layout}")
