"""The op registry against the test cases and PyTorch's core ATen opset, without a GPU: every registered
overload is exercised by a case, and every refused one is refused with its declared reason."""

from __future__ import annotations

import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler import frontend, lowering
from webgpu_torch.compiler.graph import Graph, Node, Ref, TensorMeta
from webgpu_torch.compiler.ops import OPS, REFUSED
from webgpu_torch.format.errors import UnsupportedError
from webgpu_torch.tools import coverage

from .helpers import Fn

pytestmark = pytest.mark.host


@pytest.mark.slow
def test_every_registered_overload_reaches_lowering_in_some_case():
    """Compiles every op case (most of a minute of CPU), so it runs in the second tier, not the fast one.
    Each family's cases are exported and imported as compile() does (graph rewrites included), so an
    overload that only ever fuses into another node or folds into a constant does not count."""
    unexercised = sorted(set(OPS) - set(coverage.trace().reached))
    assert not unexercised, f"no OpCase reaches the lowering of {unexercised}"


@pytest.mark.parametrize("target", sorted(REFUSED))
def test_a_refused_overload_is_named_with_its_reason(target):
    x = TensorMeta((2, 3), "float32")
    graph = Graph(inputs=[("x", x)], constants={}, constant_meta={}, outputs=[Ref("n")], input_tree={},
                  output_tree={}, nodes=[Node("n", target, {"self": Ref("x")}, (x,))])
    with pytest.raises(UnsupportedError) as info:
        lowering.check_support(graph)
    assert f"node 'n' ({target})" in str(info.value) and REFUSED[target].reason in str(info.value)


def test_refused_overloads_stay_whole_through_decomposition():
    table = frontend._decomposition_table()
    ops = {t: frontend._loaded_target(t) for t in REFUSED}  # torchao's exist once torchao is imported
    assert not [t for t, op in ops.items() if op is not None and op in table]


@pytest.mark.parametrize(("fn", "target"), [
    (lambda x: x + torch.randn(5), "aten.randn.default"),
    (lambda x: x * x.sum().item(), "aten._local_scalar_dense.default"),
])
def test_refused_overloads_in_exported_programs(fn, target):
    ep = torch.export.export(Fn(fn), (torch.randn(5),))
    with pytest.raises(UnsupportedError) as info:
        webgpu_torch.compile(ep)
    assert f"({target})" in str(info.value) and f"reason: {REFUSED[target].reason}" in str(info.value)


def test_every_core_overload_has_one_status():
    rows = coverage.statuses()
    assert len(rows) == len({r.target for r in rows}) == len(coverage.core_overloads()) > 150
    assert {r.kind for r in rows} <= set(coverage.KINDS)
    lowered = {r.target for r in rows if r.kind in (coverage.LOWERED, coverage.PARTIAL)}
    assert lowered == {r.target for r in rows} & set(OPS)
