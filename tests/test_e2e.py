"""Whole models end to end: compiled from torch.export, run on WebGPU, compared with eager PyTorch."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch

from .helpers import Fn, assert_close, reference

pytestmark = pytest.mark.e2e


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(113, 89)
        self.fc2 = torch.nn.Linear(89, 37)

    def forward(self, x):
        return torch.sigmoid(self.fc2(torch.relu(self.fc1(x))))


class BatchedProjection(torch.nn.Module):
    """bmm against a learned per-batch matrix, a transposed bmm, and baddbmm with a broadcast bias."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(5, 41, 37))
        self.bias = torch.nn.Parameter(torch.randn(1, 1, 37))

    def forward(self, x, y):
        h = torch.tanh(torch.bmm(x, self.w))
        s = torch.bmm(h, y.transpose(1, 2))
        return torch.baddbmm(self.bias, s, h, alpha=0.5), {"h": h}


def test_mlp_matches_eager(poisoned):
    torch.manual_seed(0)
    model = MLP().eval()
    x = torch.randn(31, 113)
    session = webgpu_torch.compile_module(model, (x,))
    got = poisoned(session, x)
    assert isinstance(got, torch.Tensor) and got.dtype == torch.float32
    assert_close(got, reference(model.double(), [x]), what="mlp vs float64")
    assert_close(got, model.float()(x), what="mlp vs eager float32")


def test_bmm_model_matches_eager_and_keeps_output_structure(poisoned):
    torch.manual_seed(1)
    model = BatchedProjection().eval()
    x, y = torch.randn(5, 13, 41), torch.randn(5, 13, 37)
    session = webgpu_torch.compile_module(model, (x, y))
    out, extra = poisoned(session, x, y)
    ref_out, ref_extra = reference(model.double(), [x, y])
    assert set(extra) == {"h"}
    assert_close(out, ref_out, what="baddbmm")
    assert_close(extra["h"], ref_extra["h"], what="h")


def test_numpy_in_numpy_out_and_repeat_calls_are_independent():
    torch.manual_seed(2)
    model = MLP().eval()
    session = webgpu_torch.compile_module(model, (torch.randn(3, 113),))
    a, b = np.random.default_rng(0).standard_normal((2, 3, 113), dtype=np.float32)
    out_a, out_b, out_a2 = session(a), session(b), session(a)
    assert isinstance(out_a, np.ndarray)
    np.testing.assert_array_equal(out_a, out_a2)
    with torch.no_grad():
        assert_close(out_b, model(torch.from_numpy(b)), what="second input")


def test_kwargs_and_nested_inputs():
    class Nested(torch.nn.Module):
        def forward(self, pair, *, scale):
            a, b = pair
            return (a @ b) * scale

    a, b, s = torch.randn(7, 11), torch.randn(11, 13), torch.randn(13)
    session = webgpu_torch.compile_module(Nested(), ((a, b),), {"scale": s})
    assert_close(session((a, b), scale=s), reference(lambda a, b, s: (a @ b) * s, [a, b, s]))


def test_views_cost_no_dispatch():
    class Views(torch.nn.Module):
        def forward(self, x):
            y = x.view(6, 35).t().unsqueeze(0).expand(2, 35, 6)
            return y.permute(0, 2, 1).squeeze()

    x = torch.randn(2, 3, 5, 7)
    session = webgpu_torch.compile_module(Views(), (x,))
    assert session.program.dispatches == []
    np.testing.assert_array_equal(session(x).numpy(), Views()(x).numpy())


def test_device_tensors_chain_calls_without_a_host_round_trip(poisoned):
    """A decoder-like step: the output state goes back in as the next call's input, staying on the GPU."""

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(41, 41)

        def forward(self, state, x):
            new = torch.tanh(self.fc(state) + x)
            return new, new.t()

    torch.manual_seed(3)
    step = Step().eval()
    state, xs = torch.randn(5, 41), torch.randn(4, 5, 41)
    session = webgpu_torch.compile_module(step, (state, xs[0]))
    s = state.numpy()
    ref = state
    for x in xs:
        s, s_t = session.on_device(s, x.numpy())
        with torch.no_grad():
            ref, _ = step(ref, x)
    assert isinstance(s, webgpu_torch.DeviceTensor) and s.shape == (5, 41)
    assert_close(s.numpy(), ref, what="state after 4 steps")
    np.testing.assert_array_equal(s_t.numpy(), s.numpy().T)  # a strided view kept as such
    double = webgpu_torch.compile_module(Fn(lambda t: t * 2.0), (torch.randn(41, 5),))
    with pytest.raises(ValueError, match="strided view"):
        double(s_t)
