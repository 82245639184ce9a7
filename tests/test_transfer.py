"""The call path's host↔device moves (runtime/transfer.py): large inputs through persistent staging buffers,
large outputs copied out in slices; every call sees its own inputs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.runtime import transfer

from .helpers import assert_close, reference, seeded

pytestmark = pytest.mark.runtime


def test_large_inputs_take_the_staging_path_and_each_call_sees_its_own():
    torch.manual_seed(0)
    model = torch.nn.Linear(613, 7).eval()
    g = seeded("staged")
    xs = [torch.randn(521, 613, generator=g) for _ in range(3)]  # 1.3 MB each: staged
    session = webgpu_torch.compile_module(model, (xs[0],))
    assert session.executor()._staged, "the input should have a staging buffer"
    for x in xs + xs[::-1]:
        assert_close(session(x), reference(model.double(), [x]))
        assert_close(session.on_device(x.numpy()).numpy(), reference(model.double(), [x]))


@pytest.mark.parametrize("shape", [(3, 5), (1031, 2053), (2053, 1031)])
def test_copies_of_any_size_and_layout_are_exact(shape):
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    assert a.nbytes < transfer.PARALLEL_BYTES or shape[0] > 1000
    for view in (a, a.T, a[::2]):
        out = transfer.copy(view)
        assert out.flags.c_contiguous and np.array_equal(out, view)
