"""Empty and 0-d tensors through a sweep of ops: each compiles and runs (a node whose outputs are empty emits no
dispatch), or is refused by name at compile time, never failing inside lowering."""

from __future__ import annotations

import pytest
import torch
import torch.utils._pytree as pytree

import webgpu_torch
from webgpu_torch.format.errors import UnsupportedError

from .helpers import Fn, assert_close, reference

F = torch.nn.functional


def empty(*shape):
    return lambda: torch.randn(*shape, generator=torch.Generator().manual_seed(0))


def scalar():
    return torch.tensor(1.75)


def ints(*shape, hi=4):
    return lambda: torch.randint(0, hi, shape, generator=torch.Generator().manual_seed(1))


EMPTY = [
    ("cos", torch.cos, [empty(0, 5)]),
    ("linear_relu", lambda x, w, b: F.relu(F.linear(x, w, b)), [empty(0, 5), empty(3, 5), empty(3)]),
    ("silu", F.silu, [empty(0, 5)]),
    ("add_broadcast", lambda x, y: x + y, [empty(0, 5), empty(5)]),
    ("mm", lambda x, w: x @ w, [empty(0, 5), empty(5, 3)]),
    ("mm_empty_k", lambda x, y: x.t() @ y, [empty(0, 5), empty(0, 3)]),
    ("addmm_empty_k", lambda b, x, y: torch.addmm(b, x.t(), y), [empty(3), empty(0, 5), empty(0, 3)]),
    ("bmm", torch.bmm, [empty(2, 0, 5), empty(2, 5, 3)]),
    ("conv2d_no_batch", lambda x, w: F.conv2d(x, w), [empty(0, 3, 7, 7), empty(4, 3, 3, 3)]),
    ("softmax", lambda x: x.softmax(0), [empty(0, 5)]),
    ("layer_norm", lambda x: F.layer_norm(x, (5,)), [empty(0, 5)]),
    ("group_norm", lambda x: F.group_norm(x, 2), [empty(0, 4, 3)]),
    ("cat_with_empty", lambda x, y: torch.cat([x, y]), [empty(0, 5), empty(2, 5)]),
    ("index_select_no_indices", lambda x, i: x.index_select(0, i[:0]), [empty(4, 5), ints(3)]),
    ("embedding_no_ids", lambda i, w: F.embedding(i[:0], w), [ints(3, hi=7), empty(7, 3)]),
    ("sum_keeping_the_empty_dim", lambda x: x.sum(1), [empty(0, 5)]),
    ("sum_over_the_empty_dim", lambda x: x.sum(0), [empty(0, 5)]),
    ("any_over_the_empty_dim", lambda x: (x > 0).any(0), [empty(0, 5)]),
    ("views", lambda x: x.t().reshape(5, 0) * 2.0, [empty(0, 5)]),
    ("where", lambda x: torch.where(x > 0, x, 0.0), [empty(0, 5)]),
    ("cumsum", lambda x: x.cumsum(1), [empty(0, 5)]),
    ("argmax", lambda x: x.argmax(1), [empty(0, 5)]),
    ("cast", lambda x: x.long(), [empty(0, 5)]),
    ("attention_no_queries", lambda q, k: F.scaled_dot_product_attention(q, k, k), [empty(1, 2, 0, 8),
                                                                                   empty(1, 2, 5, 8)]),
    ("max_pool", lambda x: F.max_pool2d(x, 2), [empty(0, 3, 8, 8)]),
    ("pad", lambda x: F.pad(x, (1, 2)), [empty(0, 5)]),
    ("upsample", lambda x: F.interpolate(x, scale_factor=2), [empty(0, 3, 4, 4)]),
]

ZERO_D = [
    ("cos", torch.cos, [scalar]),
    ("add_broadcast", lambda x, y: x + y, [scalar, empty(3, 4)]),
    ("sum", lambda x: (x.sum(), x.sum(0), x.sum(-1, keepdim=True)), [scalar]),
    ("mean_amax_norm", lambda x: (x.mean(-1), x.amax(), torch.linalg.vector_norm(x)), [scalar]),
    ("argmax_any", lambda x: (x.argmax(0), (x > 0).any(), (x > 0).any(0)), [scalar]),
    ("logsumexp", lambda x: x.logsumexp(0), [scalar]),
    ("softmax_log_softmax", lambda x: (x.softmax(0), x.log_softmax(-1)), [scalar]),
    ("cumsum", lambda x: x.cumsum(0), [scalar]),
    ("index_select_gather", lambda x, i: (x.index_select(0, i[:1] * 0), x.gather(0, i[0] * 0)), [scalar, ints(3)]),
    ("embedding_of_one_id", lambda i, w: F.embedding(i[1], w), [ints(3, hi=7), empty(7, 3)]),
    ("views", lambda x: (x.unsqueeze(0) * 2.0, x.view(1, 1) * 2.0, x.expand(3, 2) * 1.0), [scalar]),
    ("where_pow_cast", lambda x: (torch.where(x > 0, x, -x), x**2, x.long()), [scalar]),
    ("stack", lambda x: torch.stack([x, x * 2.0]), [scalar]),
]


def _run(fn, specs, poisoned):
    inputs = [spec() for spec in specs]
    session = webgpu_torch.compile(torch.export.export(Fn(fn), tuple(inputs)))
    got = pytree.tree_leaves(poisoned(session, *inputs))
    want = pytree.tree_leaves(reference(fn, inputs))
    assert len(got) == len(want)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        assert_close(g, w, what=f"output {i}")


@pytest.mark.parametrize(("fn", "specs"), [pytest.param(fn, specs, id=name) for name, fn, specs in EMPTY])
def test_empty_tensors(fn, specs, poisoned):
    _run(fn, specs, poisoned)


@pytest.mark.parametrize(("fn", "specs"), [pytest.param(fn, specs, id=name) for name, fn, specs in ZERO_D])
def test_0d_tensors(fn, specs, poisoned):
    _run(fn, specs, poisoned)


def test_an_empty_program_output_has_a_buffer_and_no_dispatch():
    x = torch.randn(0, 5)
    session = webgpu_torch.compile(torch.export.export(Fn(torch.exp), (x,)))
    assert not session.program.dispatches
    assert session(x).shape == (0, 5)


@pytest.mark.host
def test_what_an_empty_tensor_cannot_do_is_refused_by_name():
    ep = torch.export.export(Fn(lambda x: x.mean(0)), (torch.randn(0, 5),))
    with pytest.raises(UnsupportedError, match=r"node 'mean' \(aten.mean.dim\)(.|\n)*reducing over an empty dim"):
        webgpu_torch.compile(ep)
