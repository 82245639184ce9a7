"""Ops whose form cannot run as a fixed program are refused at compile time, each with its reason."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.format.errors import UnsupportedError

from .helpers import Fn

pytestmark = pytest.mark.host

F = torch.nn.functional
X = torch.randn(5, 3)
DATA = "output size depends on the data"


@pytest.mark.parametrize(("fn", "inputs", "reason"), [
    (torch.nonzero, [X], rf"aten\.nonzero\.default.*\n.*\n.*{DATA} \(u0"),
    (lambda a: torch.argwhere(a > 0), [X], DATA),
    (lambda a: a[a > 0], [X], rf"aten\.index\.Tensor.*\n.*\n.*{DATA}"),
    (lambda a: torch.masked_select(a, a > 0), [X], DATA),
    (torch.unique, [X], rf"aten\._unique2\.default.*\n.*\n.*{DATA}"),
    (torch.unique_consecutive, [X], DATA),
    (lambda a, v: a.index_put((a > 0,), v), [X, torch.randn(15)],
     "one value per selected element is a count that depends on the data"),
    (lambda a: F.dropout(a, 0.3, training=True), [X], r"native_dropout with train=True .* eval\(\) mode"),
    (lambda a: a.as_strided((5, 5), (3, 1)) * 1, [X],
     r"as_strided to size \[5, 5\], stride \[3, 1\], offset 0 reaches element 16 of a \[5, 3\] tensor of 15"),
    (lambda a: a[1:].as_strided((2, 2), (1, 1)) * 1, [X], "as_strided of a .* offset view into a larger storage"),
])
def test_refused_with_reason(fn, inputs, reason):
    ep = torch.export.export(Fn(fn), tuple(inputs))
    with pytest.raises(UnsupportedError, match=reason):
        webgpu_torch.compile(ep)
