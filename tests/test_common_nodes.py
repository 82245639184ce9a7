"""Common subexpression elimination (passes/common_nodes.py): a value computed again is computed once, and
values that only look alike (another scalar, another constant) stay apart."""

from __future__ import annotations

import pytest
import torch
from torch import nn

import webgpu_torch

from .helpers import assert_close, reference, seeded

pytestmark = pytest.mark.e2e


class Twice(nn.Module):
    """As transformers' StaticCache updates each layer: the rows at `position` built again from a fresh
    `arange`, gathered and scaled again; beside them near twins that differ in a scalar or a constant."""

    def __init__(self, once: bool = False):
        super().__init__()
        self.once = once

    def rows(self, x, position):
        return x.index_select(0, torch.arange(3) + position) * 2.0

    def forward(self, x, position):
        a = self.rows(x, position)
        b = a if self.once else self.rows(x, position)
        return a + b, x * 2.5, x * 2.0, x + torch.arange(7.0), x + torch.arange(1.0, 8.0)


def test_a_value_built_again_is_computed_once():
    x, position = torch.randn(11, 7, generator=seeded("common")), torch.tensor([4])
    twice = webgpu_torch.compile_module(Twice().eval(), (x, position))
    once = webgpu_torch.compile_module(Twice(once=True).eval(), (x, position))
    assert len(twice.program.dispatches) == len(once.program.dispatches)
    assert len(twice.program.dispatches) >= 6  # the near twins stayed: two scalings, two constant adds
    for got, want in zip(twice(x, position), reference(Twice(), [x, position]), strict=True):
        assert_close(got, want)


class Scaled(nn.Module):
    """transformers' rotary tables: cos and sin times an `attention_scaling` of 1 (identities), beside a product
    by 1 of an input (kept: no output aliases an input) and one by a number near 1."""

    def forward(self, x):
        c = torch.cos(x)
        return c * 1.0, torch.sin(x) * 1, x * 1.0, c * 1.0001


def test_a_product_by_one_is_its_operand():
    x = torch.randn(5, 7, generator=seeded("identity"))
    session = webgpu_torch.compile_module(Scaled().eval(), (x,))
    names = sorted(session.program.kernels[d.kernel].name.split("[")[1].rstrip("]")
                   for d in session.program.dispatches)
    assert names == ["cos", "mul", "mul", "sin"], names
    for got, want in zip(session(x), reference(Scaled(), [x]), strict=True):
        assert_close(got, want)
