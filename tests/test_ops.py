"""Every op family's own cases (ops/<family>.py: cases()), compiled and run on WebGPU against float64."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import webgpu_torch
from webgpu_torch.compiler import wgsl
from webgpu_torch.compiler.ops import all_cases
from webgpu_torch.format.errors import DeviceError
from webgpu_torch.runtime import tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.session import Session

from .helpers import Fn, assert_close, reference

CASES = [pytest.param(case, id=f"{family}-{case.name}", marks=[getattr(pytest.mark, m) for m in case.marks])
         for family, family_cases in all_cases().items() for case in family_cases]


def make_inputs(case):
    return case.example_inputs()


def _twinned(family: str) -> bool:
    """Whether the family's kernel includes a helper with a subgroup twin (so it offers a twin kernel)."""
    file = f"{family}.wgsl"
    return file in wgsl.kernel_files() and (
        wgsl.kernel_source(file, subgroups=True) != wgsl.kernel_source(file))


TWINNED = [pytest.param(case, id=f"{family}-{case.name}") for family, family_cases in all_cases().items()
           if _twinned(family) for case in family_cases]


def _check(case, poisoned, pick=None):
    """Run `case`; with `pick`, every dispatch offering an option whose kernel `pick` accepts runs that option."""
    inputs = make_inputs(case)
    dynamic = None if case.dynamic_shapes is None else (case.dynamic_shapes,)  # Fn takes *args
    ep = torch.export.export(Fn(case.fn), tuple(inputs), dynamic_shapes=dynamic)
    session = webgpu_torch.compile(ep, **case.kwargs)
    if pick is not None:
        session = Session(tuning.force(session.program, pick))
        program = session.program
        assert any(pick(program.kernels[d.kernel]) for d in program.dispatches)
        needs = {f for d in program.dispatches for f in program.kernels[d.kernel].requires}
        if wgsl.SUBGROUPS in needs and wgsl.SUBGROUPS not in get_engine().device.features:
            with pytest.raises(DeviceError, match="needs the subgroups feature"):  # wgpu-native: refused at load
                session(*inputs)
            return
    got = pytree.tree_leaves(poisoned(session, *inputs))
    want = pytree.tree_leaves(reference(case.fn, inputs))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, case.tol, what=f"{case.name} output {i}")


@pytest.mark.parametrize("case", CASES)
def test_op(case, poisoned):
    _check(case, poisoned)


@pytest.mark.parametrize("case", TWINNED)
def test_op_on_subgroup_twins(case, poisoned):
    """test_op runs each dispatch's default kernel (tuning is off in tests); here the kernels that offer a
    subgroup twin (row.subgroups.wgsl) run it instead. Dawn on lavapipe has subgroups (8 lanes)."""
    _check(case, poisoned, pick=lambda k: wgsl.SUBGROUPS in k.requires)


# The gemv cases whose B is contiguous along K (a linear's weight), where dot_k runs: N = 1031 straddles its
# 256-column blocks, N = 37 fills part of one; and over packed weights (q4 and q8).
GEMV_TEAM1 = [pytest.param(case, id=case.name) for case in all_cases()["gemm"] + all_cases()["quantized"]
              if case.name in ("gemv_linear_rows3", "gemv_8_rows", "gemv_residual", "gemv_q4_zero_points",
                               "gemv_q8_residual_relu")]
GEMV_PACKED = [pytest.param(case, id=case.name) for case in all_cases()["quantized"] if case.name.startswith("gemv")]


@pytest.mark.gemm
@pytest.mark.parametrize("case", GEMV_TEAM1)
def test_gemv_one_thread_per_column(case, poisoned):
    """gemv.wgsl's dot_k with a team of one lane per column (the option tuning picks on CPU adapters)."""
    _check(case, poisoned, pick=lambda k: "team1" in k.name)


@pytest.mark.gemm
@pytest.mark.parametrize("case", GEMV_PACKED)
@pytest.mark.parametrize("team", [",team8]", "x4]", ",team8x4]", ",team1x4]"])
def test_gemv_packed_teams(case, team, poisoned):
    """dot_k over packed weights with the teams only they are offered: 8 lanes per column, and teams of 32, 8
    or 1 lanes over 4 columns (each float of A read once for the 4)."""
    _check(case, poisoned, pick=lambda k: team in k.name and (team != "x4]" or ",team" not in k.name))


def test_nextafter_bit_for_bit(poisoned):
    """nextafter's float32 neighbour, which a float64 reference cannot show: against eager float32, bits and all
    (the smallest subnormals from ±0, the largest float toward and from ±inf, steps toward and away from 0)."""
    x = torch.tensor([0.0, -0.0, 0.0, 1.0, 1.0, -1.0, 3.4028235e38, float("inf"), float("-inf"), 1e-45, -2.5, 7.0,
                      float("nan"), 5.0])
    y = torch.tensor([1.0, 1.0, -1.0, 2.0, 0.0, 0.0, float("inf"), 0.0, 0.0, 0.0, -3.0, 7.0, 1.0, float("nan")])
    session = webgpu_torch.compile(torch.export.export(Fn(torch.nextafter), (x, y)))
    got, want = poisoned(session, x, y), torch.nextafter(x, y)
    nan = want.isnan()
    assert torch.equal(got.isnan(), nan) and torch.equal(got[~nan].view(torch.int32), want[~nan].view(torch.int32))
