"""Attention over a static KV cache: the live-prefix and grouped-heads rewrites (cache_attention.py), the
split kernel for decode steps (attention_split.wgsl) with every chunk size forced, and a prefill's key limit
on every layout of the fused kernel, against float64."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler import import_graph
from webgpu_torch.compiler.ops import attention

from .helpers import Fn, assert_close, reference
from .test_ops import make_inputs

CASES = {c.name: c for c in attention.cases() if c.name.startswith(("sdpa_decode", "eager_decode", "sdpa_prefill"))}
sdpa = torch.nn.functional.scaled_dot_product_attention


@pytest.mark.host
def test_the_cases_exist():
    assert len(CASES) == 8


def _attention_nodes(case):
    graph = import_graph(torch.export.export(Fn(case.fn), tuple(make_inputs(case))))
    return [n for n in graph.nodes if n.target in ("aten.scaled_dot_product_attention.default",
                                                    "webgpu.eager_attention.default")]


@pytest.mark.host
@pytest.mark.parametrize("name", ["sdpa_decode_live_prefix_67_of_97_keys", "sdpa_decode_live_prefix_21_of_211_keys",
                                  "eager_decode_live_prefix_bart_mask",
                                  "sdpa_decode_gqa_repeat_kv_live_prefix", "sdpa_prefill_live_prefix_11_rows_from_29"])
def test_a_static_cache_mask_becomes_a_key_limit(name):
    (node,) = _attention_nodes(CASES[name])
    assert node.args["attn_mask"] is None and node.args["key_limit"] is not None


@pytest.mark.host
def test_repeat_kv_becomes_grouped_heads():
    (node,) = _attention_nodes(CASES["sdpa_decode_gqa_repeat_kv_live_prefix"])
    assert node.args["enable_gqa"] and node.args["key"].node == "args_1" and node.args["value"].node == "args_2"


@pytest.mark.host
def test_masks_that_are_not_a_prefix_stay_masks():
    def every_other(q, k, v, pos):  # keys 0, 2, 4, … up to a position: not a prefix
        return sdpa(q, k, v, attn_mask=torch.arange(0, 2 * k.shape[2], 2).view(1, 1, 1, -1) <= pos.view(1, 1, 1, 1))

    def key_count_mismatch(q, k, v, pos):  # one column broadcast over every key
        return sdpa(q, k, v, attn_mask=torch.arange(1).view(1, 1, 1, 1) <= pos.view(1, 1, 1, 1))

    for fn in (every_other, key_count_mismatch):
        case = attention.OpCase(fn.__name__, fn, [(1, 2, 1, 8), (1, 2, 7, 8), (1, 2, 7, 8), lambda: torch.tensor([3])])
        (node,) = _attention_nodes(case)
        assert node.args["attn_mask"] is not None and "key_limit" not in node.args


@pytest.mark.gemm
@pytest.mark.parametrize("name", sorted(n for n in CASES if "prefill" not in n))
@pytest.mark.parametrize("chunk", attention.SPLIT_CONFIGS)
def test_split_chunks(name, chunk, poisoned):
    case = CASES[name]
    inputs = make_inputs(case)
    session = webgpu_torch.compile(torch.export.export(Fn(case.fn), tuple(inputs)), attention=chunk)
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert [n.split("[")[0] for n in names if "attention" in n] == ["attention_split", "attention_merge"], names
    assert_close(poisoned(session, *inputs), reference(case.fn, inputs), what=f"{name} {chunk}")


@pytest.mark.e2e
@pytest.mark.parametrize("rows", [1, 11])
def test_keys_past_the_live_prefix_are_never_read(rows):
    """NaN keys and values past each row's limit leave the result finite and equal to attention over the
    prefix; a limit past the cache (or below it) reads no further than the cache's keys (or none)."""
    def fn(q, k, v, pos):
        return sdpa(q, k, v, attn_mask=torch.arange(k.shape[2]).view(1, 1, 1, -1)
                    <= (pos + torch.arange(q.shape[2])).view(1, 1, -1, 1))

    g = torch.Generator().manual_seed(rows)
    q, k, v = (torch.randn(1, 3, n, 24, generator=g) for n in (rows, 59, 59))
    session = webgpu_torch.compile(torch.export.export(Fn(fn), (q, k, v, torch.tensor([5]))))
    live = 23 + rows  # rows see keys 0 ..= 23 + i
    k[:, :, live:], v[:, :, live:] = float("nan"), float("nan")
    got = session(q, k, v, torch.tensor([23]))
    want = sdpa(q.double(), k[:, :, :live].double(), v[:, :, :live].double(),
                attn_mask=torch.arange(live).view(1, 1, 1, -1) <= (23 + torch.arange(rows)).view(1, 1, -1, 1))
    assert_close(got, want)
    k, v = k.nan_to_num(0.5), v.nan_to_num(-0.5)
    assert_close(session(q, k, v, torch.tensor([10**6])), sdpa(q.double(), k.double(), v.double()))
    assert np.all(session(q.numpy(), k.numpy(), v.numpy(), np.array([-50])) == 0)  # no key: sdpa's zeros


@pytest.mark.gemm
@pytest.mark.parametrize("config", sorted(attention.CONFIGS))
def test_a_prefill_stops_at_the_live_prefix_on_every_layout(config, poisoned):
    """A prefill over a static cache (more rows than a decode step) takes the fused kernel: every layout, the
    CPU adapters' barrier-free `rows` entry too, ends each row's keys at its key limit."""
    case = CASES["sdpa_prefill_live_prefix_11_rows_from_29"]
    inputs = make_inputs(case)
    session = webgpu_torch.compile(torch.export.export(Fn(case.fn), tuple(inputs)), attention=config)
    names = [session.program.kernels[d.kernel].name for d in session.program.dispatches]
    assert any(n.startswith("attention[") for n in names), names
    assert_close(poisoned(session, *inputs), reference(case.fn, inputs), what=config)
