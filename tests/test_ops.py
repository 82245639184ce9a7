"""Every op family's own cases (ops/<family>.py: cases()), compiled and run on WebGPU against float64."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import webgpu_torch
from webgpu_torch.ops import all_cases

from .helpers import Fn, assert_close, reference, seeded

CASES = [pytest.param(case, id=f"{family}-{case.name}", marks=[getattr(pytest.mark, m) for m in case.marks])
         for family, family_cases in all_cases().items() for case in family_cases]


def make_inputs(case):
    gen = seeded(case.name)
    return [spec() if callable(spec) else torch.randn(spec, generator=gen) for spec in case.inputs]


@pytest.mark.parametrize("case", CASES)
def test_op(case, poisoned):
    inputs = make_inputs(case)
    program = webgpu_torch.compile(torch.export.export(Fn(case.fn), tuple(inputs)), **case.kwargs)
    got = pytree.tree_leaves(poisoned(program, *inputs))
    want = pytree.tree_leaves(reference(case.fn, inputs))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, case.tol, what=f"{case.name} output {i}")
