"""Dynamic dimensions (torch.export Dims): one compiled program runs at every size in the range."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from torch.export import Dim

import webgpu_torch

from .helpers import assert_close, reference

pytestmark = pytest.mark.e2e


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2 = torch.nn.Linear(37, 41), torch.nn.Linear(41, 7)
        self.norm = torch.nn.LayerNorm(41)

    def forward(self, x):
        h = self.norm(torch.relu(self.fc1(x)))
        return torch.softmax(self.fc2(h), dim=-1), h.sum(dim=0)


class AttentionStep(torch.nn.Module):
    """A decoder step: append this token's key/value to the cache and attend over all of it."""

    def __init__(self):
        super().__init__()
        self.q, self.kv = torch.nn.Linear(64, 64), torch.nn.Linear(64, 128)

    def forward(self, x, past_k, past_v):
        k_new, v_new = self.kv(x).view(1, 1, 2, 4, 16).permute(2, 0, 3, 1, 4)
        k = torch.cat([past_k, k_new], dim=2)
        v = torch.cat([past_v, v_new], dim=2)
        q = self.q(x).view(1, 1, 4, 16).transpose(1, 2)
        length = k.shape[2]
        keep = (torch.arange(length) >= length - 16).unsqueeze(0)  # attend to the last 16 positions only
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=keep)
        return att.transpose(1, 2).reshape(1, 64), k, v


def test_one_program_serves_every_batch_size(poisoned):
    torch.manual_seed(0)
    model = MLP().eval()
    batch = Dim("batch", min=1, max=64)
    session = webgpu_torch.compile_module(model, (torch.randn(5, 37),), dynamic_shapes=({0: batch},))
    assert len(session.program.symbols) == 1
    for n in (1, 3, 64, 17):
        x = torch.randn(n, 37)
        got = poisoned(session, x)
        want = reference(model.double(), [x])
        assert got[0].shape == (n, 7)
        assert_close(got[0], want[0], what=f"softmax at batch {n}")
        assert_close(got[1], want[1], what=f"sum at batch {n}")


def test_sizes_outside_the_range_or_inconsistent_are_refused():
    batch = Dim("batch", min=2, max=8)
    session = webgpu_torch.compile_module(torch.nn.Linear(3, 4), (torch.randn(5, 3),), dynamic_shapes=({0: batch},))
    with pytest.raises(ValueError, match=r"must be in \[2, 8\], got 9"):
        session(torch.randn(9, 3))
    with pytest.raises(ValueError, match="expected shape"):
        session(torch.randn(4, 5))


def test_kv_cache_grows_on_the_device_step_after_step(poisoned):
    torch.manual_seed(1)
    step = AttentionStep().eval()
    past = Dim("past", min=1, max=100)
    k0, v0 = torch.randn(1, 4, 3, 16), torch.randn(1, 4, 3, 16)
    session = webgpu_torch.compile_module(step, (torch.randn(1, 64), k0, v0),
                                          dynamic_shapes=(None, {2: past}, {2: past}))
    k, v = k0, v0
    k_dev, v_dev = k0.numpy(), v0.numpy()
    for i in range(20):  # past lengths 3 .. 22, crossing the 16-position window
        x = torch.randn(1, 64)
        out, k_dev, v_dev = session.on_device(x.numpy(), k_dev, v_dev)
        with torch.no_grad():
            want, k, v = reference(step.double(), [x, k, v])
            k, v = k.float(), v.float()
        assert k_dev.shape == (1, 4, 4 + i, 16)
        assert_close(out.numpy(), want, what=f"attention at past length {3 + i}")
    assert_close(k_dev.numpy(), k, what="the cache after 20 steps")


def test_dynamic_program_round_trips_through_a_file(tmp_path):
    torch.manual_seed(2)
    model = MLP().eval()
    session = webgpu_torch.compile_module(model, (torch.randn(5, 37),),
                                          dynamic_shapes=({0: Dim("rows", min=1, max=32)},))
    session.save(tmp_path / "mlp.wgpt")
    loaded = webgpu_torch.load(tmp_path / "mlp.wgpt")
    x = np.random.default_rng(0).standard_normal((11, 37), dtype=np.float32)
    np.testing.assert_array_equal(loaded(x)[0], session(x)[0])
    assert "dynamic" in loaded.summary()


@pytest.mark.host
def test_a_dimension_without_an_upper_bound_is_refused():
    with pytest.raises(webgpu_torch.UnsupportedError, match="no upper bound"):
        webgpu_torch.compile_module(torch.nn.Linear(3, 4), (torch.randn(5, 3),), dynamic_shapes=({0: Dim("n")},))


def test_a_scalar_tensor_of_a_dynamic_size_is_computed_on_the_device(poisoned):
    """torch.scalar_tensor of a size folds at compile time when the size is static; of a dynamic one it runs."""

    class Scaled(torch.nn.Module):
        def forward(self, x):
            return x * torch.scalar_tensor(x.shape[0])

    batch = Dim("batch", min=1, max=64)
    program = webgpu_torch.compile_module(Scaled(), (torch.randn(5, 7),), dynamic_shapes=({0: batch},))
    for n in (1, 9, 64):
        x = torch.randn(n, 7)
        assert_close(poisoned(program, x), x * n, what=f"batch {n}")
