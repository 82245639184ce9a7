"""Every GEMM tile configuration, forced, on shapes straddling its tile edges, in each operand layout.

The matrix-unit configurations (gemm.MatrixConfig) run where the device has subgroup matrices, and are refused
by name elsewhere; float16 products are compared with the float64 product of the operands rounded to float16
(what remains is float32 summation), the split float32-accurate ones with the plain float64 product."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler.ops.gemm import CONFIGS, MatrixConfig
from webgpu_torch.compiler.wgsl import SUBGROUPS
from webgpu_torch.format.errors import DeviceError
from webgpu_torch.format.program import SUBGROUP_MATRIX
from webgpu_torch.runtime.engine import get_engine

from .helpers import Fn, assert_close, reference, seeded

pytestmark = pytest.mark.gemm

LAYOUTS = {
    "nn": (lambda a, b: a @ b, [(132, 76), (76, 140)]),
    "tn": (lambda a, b: a.t() @ b, [(76, 132), (76, 140)]),
    "nt_bias_relu": (lambda a, b, c: torch.relu(torch.addmm(c, a, b.t())), [(132, 76), (140, 76), (140,)]),
    "odd": (lambda a, b: a @ b, [(131, 77), (77, 139)]),
    "tn_odd_k": (lambda a, b: a.t() @ b, [(77, 132), (77, 140)]),  # vec4 along M and N, K not a multiple of 4
    "conv_im2col": (lambda x, w: torch.nn.functional.conv2d(x, w, stride=(2, 1), padding=1),
                    [(2, 8, 13, 11), (12, 8, 3, 3)]),  # channels-last, A read as the implicit im2col matrix
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
    assert any(any(f in k for f in ("vec4", "sm_", "cpu_")) == vec4 for k in used), used
    matrix = isinstance(CONFIGS[config], MatrixConfig) and vec4
    if matrix and SUBGROUP_MATRIX not in get_engine().device.features:
        # every lacking feature is named: subgroups too where the engine has none (wgpu-native)
        with pytest.raises(DeviceError, match=f"{SUBGROUP_MATRIX}(, {SUBGROUPS})? features?, which this"):
            poisoned(session, *inputs)
        return
    rounded = matrix and CONFIGS[config].parts == 1  # float16 products: the operands (the first two) rounded
    ref_inputs = [x.half().float() if rounded and i < 2 else x for i, x in enumerate(inputs)]
    assert_close(poisoned(session, *inputs), reference(fn, ref_inputs), what=f"{config} {layout}")
