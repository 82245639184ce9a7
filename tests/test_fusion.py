"""Epilogue fusion (fusion.py): which adds and activations fold into the kernel that produces their input,
which must stay dispatches of their own, and that the fused programs still match eager PyTorch."""

from __future__ import annotations

import copy
import re

import pytest
import torch
from torch import nn

import webgpu_torch

from .helpers import Fn, assert_close, reference, seeded

pytestmark = pytest.mark.gemm
F = nn.functional


def kernels(session) -> list[str]:
    """Kernel names without their configuration: `gemm+residual+relu`."""
    return [re.sub(r"\[.*?\]", "", session.program.kernels[d.kernel].name) for d in session.program.dispatches]


class Block(nn.Module):
    """A pre-norm transformer MLP block: x + dropout(fc2(gelu(fc1(norm(x))))); in eval, dropout exports as a
    clone that fusion looks through."""

    def __init__(self, dim: int = 44, hidden: int = 92):
        super().__init__()
        self.norm, self.fc1, self.fc2 = nn.LayerNorm(dim), nn.Linear(dim, hidden), nn.Linear(hidden, dim)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc2(F.gelu(self.fc1(self.norm(x)))))


class Basic(nn.Module):
    """ResNet's basic block with a downsample branch, which runs after the main branch's last conv."""

    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(8, 12, 3, 2, 1)
        self.conv2 = nn.Conv2d(12, 12, 3, 1, 1)
        self.down = nn.Conv2d(8, 12, 1, 2)

    def forward(self, x):
        out = self.conv2(F.relu(self.conv1(x)))
        return F.relu(out + self.down(x))


def test_a_transformer_block_has_no_elementwise_dispatch(poisoned):
    model = Block().eval()
    x = torch.randn(3, 17, 44, generator=seeded("block"))
    session = webgpu_torch.compile_module(model, (x,))
    assert kernels(session) == ["layer_norm", "gemm+gelu", "gemm+residual"]
    assert_close(poisoned(session, x), reference(model.double(), [x]))


def test_the_add_of_two_branches_fuses_into_the_later_one_with_its_relu(poisoned):
    model = Basic().eval()
    x = torch.randn(2, 8, 15, 13, generator=seeded("basic"))
    session = webgpu_torch.compile_module(model, (x,))
    # the input's one copy to channels-last (ops/conv.py), which both branches read
    assert kernels(session) == ["elementwise", "conv+relu", "conv", "conv+residual+relu"]
    assert_close(poisoned(session, x), reference(model.double(), [x]))


@pytest.mark.parametrize("fn, why", [
    (lambda x, w, r: F.gelu(F.linear(x, w)) + r, "an activation already fused comes last"),
    (lambda x, w, r: F.linear(x, w) + torch.tanh(r), "the residual is computed after the product"),
    (lambda x, w, r: F.linear(x, w) - r, "a subtraction"),
    (lambda x, w, r: torch.add(F.linear(x, w), r, alpha=2.0), "alpha scales the residual"),
    (lambda x, w, r: (lambda y: (y + r, y))(F.linear(x, w)), "the product is read twice"),
    (lambda x, w, r: (lambda m: F.linear(x, w) + m)(r > 0), "the residual is not float32"),  # m exists first
])
def test_adds_that_must_stay_dispatches_of_their_own(fn, why, poisoned):
    x, w, r = (torch.randn(s, generator=seeded(f"stay-{why}")) for s in ((13, 20), (24, 20), (13, 24)))
    session = webgpu_torch.compile(torch.export.export(Fn(fn), (x, w, r)))
    assert not any("+residual" in n for n in kernels(session)), why
    got, want = poisoned(session, x, w, r), reference(fn, [x, w, r])
    for g, e in zip(*((t if isinstance(t, tuple) else (t,)) for t in (got, want)), strict=True):
        assert_close(g, e, what=why)



@pytest.mark.parametrize("act", [F.relu, F.relu6, torch.tanh, lambda y: F.leaky_relu(y, 0.1),
                                 lambda y: torch.clamp(y, -0.5, 0.5), F.gelu, torch.sigmoid],
                         ids=["relu", "relu6", "tanh", "leaky_relu", "clamp", "gelu", "sigmoid"])
def test_fused_activations_propagate_nan_as_torch_does(act, poisoned):
    """An activation fused into a GEMM's or a conv's epilogue returns NaN where its input is NaN (WGSL's max
    and clamp need not), like the same activation as a dispatch of its own (test_ops)."""
    x = torch.randn(13, 20, generator=seeded("nan-gemm"))
    x[3, 4] = x[7, 0] = float("nan")  # two whole rows of the product become NaN
    image = torch.randn(1, 3, 9, 9, generator=seeded("nan-conv"))
    image[0, 1, 4, 4] = float("nan")  # a 3x3 patch of every output channel
    linear, conv = nn.Linear(20, 24), nn.Conv2d(3, 8, 3, padding=1)

    def fn(x, image, linear=linear, conv=conv):
        return act(linear(x)), act(conv(image))

    program = webgpu_torch.compile(torch.export.export(Fn(fn), (x, image)))
    assert all("+" in n for n in kernels(program) if n.startswith(("gemm", "conv"))), kernels(program)
    want = reference(lambda x, image: fn(x, image, copy.deepcopy(linear).double(), copy.deepcopy(conv).double()),
                     [x, image])
    for got, expected in zip(poisoned(program, x, image), want, strict=True):
        assert torch.equal(got.isnan(), expected.isnan())
        assert_close(got, expected, what="non-NaN outputs")
