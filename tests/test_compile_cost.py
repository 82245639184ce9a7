"""What a WGSL source may cost to compile (webgpu_torch/compile_cost.py; docs/artifact.md, Compile cost): our own
sources stay well within every bound, and the costliest ones the bounds accept (tests/wgsl_cost.py, measured in
docs/artifact.md) are accepted at their size and refused one past it. The rules' cases, shared with the
JavaScript reader, are tests/conformance/compile_cost.json. GPU-free."""

from __future__ import annotations

from pathlib import Path

import pytest

from webgpu_torch.format import artifact, compile_cost

from . import wgsl_cost

pytestmark = pytest.mark.host

GOLDEN = Path(__file__).parent / "golden"


@pytest.mark.parametrize("name", sorted(p.stem for p in GOLDEN.glob("*.wgpt")))
def test_compiled_sources_cost_at_most_half_of_what_is_allowed(name):
    for source in artifact.load(GOLDEN / f"{name}.wgpt").sources:
        assert compile_cost.cost(source) <= wgsl_cost.COST["max_source_tokens"] // 2


def test_the_costliest_accepted_sources_are_accepted_and_one_size_more_is_not():
    from .golden.damage import parts

    tiny = parts(wgsl_cost.TINY.read_bytes())[0]["sources"][0]
    for what, within, past in wgsl_cost.worst().values():
        assert compile_cost.problem(wgsl_cost.with_source(tiny, *within)) is None, what
        assert compile_cost.problem(wgsl_cost.with_source(tiny, *past)) is not None, what
