"""Every fused-attention thread layout, forced, on the attention family's fused cases (query tiles, key
tiles and key lanes that end part-way, masks, a fully masked row, GQA, Dv != D, causal)."""

from __future__ import annotations

import pytest
import torch
from torch.utils import _pytree as pytree

import webgpu_torch
from webgpu_torch.compiler.ops import attention

from .helpers import Fn, assert_close, reference
from .test_ops import make_inputs

pytestmark = pytest.mark.gemm

CASES = {c.name: c for c in attention.cases()
         if c.name in ("sdpa_causal_two_query_tiles", "sdpa_bool_mask_fully_masked_row",
                       "sdpa_gqa_scale_dv_ne_d", "eager_hf_attention_with_mask", "sdpa_3d_head_dim_200")}


def test_the_cases_exist():
    assert len(CASES) == 5


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("config", sorted(attention.CONFIGS))
def test_layout(config, case, poisoned):
    c = CASES[case]
    inputs = make_inputs(c)
    session = webgpu_torch.compile(torch.export.export(Fn(c.fn), tuple(inputs)), attention=config)
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    used = [name for name in names if "attention" in name]
    assert len(used) == 1, used
    d4 = -(-inputs[0].shape[-1] // 4)
    dv4 = -(-inputs[2].shape[-1] // 4)
    if attention.CONFIGS[config].tile_keys(d4, dv4):  # else a layout that fits runs instead
        assert used[0].endswith(f",{config}]"), used
    got = pytree.tree_leaves(poisoned(session, *inputs))
    want = pytree.tree_leaves(reference(c.fn, inputs))
    for g, w in zip(got, want, strict=True):
        assert_close(g, w, what=f"{case} {config}")


@pytest.mark.parametrize(("shape", "layout"), [((1, 12, 197, 64), "8x8"), ((1, 12, 590, 64), "16x4"),
                                               ((256, 4, 144, 32), "64x1"), ((1, 2, 41, 256), "8x4")])
def test_default_layout_gives_few_rows_more_lanes(shape, layout):
    q = torch.randn(shape)
    ep = torch.export.export(Fn(lambda q, k, v: torch.nn.functional.scaled_dot_product_attention(q, k, v)),
                             (q, q, q))
    session = webgpu_torch.compile(ep)
    (d,) = session.program.dispatches
    assert session.program.kernels[d.kernel].name.endswith(f",{layout}]")
    assert len(d.options) == len(attention.layouts_for(-(-shape[-1] // 4), -(-shape[-1] // 4))) - 1
