"""State (docs/artifact.md, State): buffers a model updates in place become tensors the program keeps between
calls — zero at load, written in place by the call's dispatches, readable and resettable, never shared."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.format.errors import InputError, UnsupportedError

from .helpers import assert_close


class Cache(torch.nn.Module):
    """A KV-cache-like buffer written at a position, a counter written back whole, and an output of both."""

    def __init__(self, length: int = 13):
        super().__init__()
        self.lin = torch.nn.Linear(7, 7)
        self.register_buffer("cache", torch.zeros(1, 3, length, 7), persistent=False)
        self.register_buffer("count", torch.zeros(1, dtype=torch.int64), persistent=False)

    def forward(self, x, pos):
        self.cache.index_copy_(2, pos, self.lin(x))
        self.count.add_(1)
        return self.cache.sum(-1), self.count * 1


def _inputs(seed: int, pos: int):
    return torch.randn(1, 3, 1, 7, generator=torch.Generator().manual_seed(seed)), torch.tensor([pos])


@pytest.fixture(scope="module")
def compiled():
    torch.manual_seed(0)
    model = Cache().eval()
    return model, webgpu_torch.compile_module(model, _inputs(0, 0))


def test_the_cache_is_written_in_place_and_the_counter_written_back(compiled):
    _, session = compiled
    p = session.program
    assert session.states == ["cache", "count"]
    writers = [p.kernels[d.kernel].name for d in p.dispatches if any(p.buffers[b].role == "state" for b in d.buffers
                                                                      if b == p.states[0].buffer)]
    assert "scatter[in place]" in writers and "elementwise[copy]" not in writers


@pytest.mark.e2e
def test_calls_see_what_earlier_calls_left_and_a_reset_starts_over(compiled):
    model, _ = compiled
    session = webgpu_torch.Session(compiled[1].program)  # a fresh executor: state as at load
    eager = Cache().eval()
    eager.load_state_dict(model.state_dict())
    for seed, pos in ((1, 4), (2, 11), (3, 4), (4, 0)):  # position 4 twice: the second write replaces the first
        got, count = session(*_inputs(seed, pos))
        want, want_count = eager(*_inputs(seed, pos))
        assert_close(got, want)
        assert int(count) == int(want_count)
    assert_close(session.read_state("cache"), eager.cache)
    assert session.read_state("count").tolist() == [4] and session.read_state("count").dtype == np.int64
    session.reset_state("count")
    assert session.read_state("count").tolist() == [0] and np.abs(session.read_state("cache")).max() > 0
    session.reset_state()
    assert not session.read_state("cache").any()
    got, count = session(*_inputs(5, 2))
    assert int(count) == 1 and np.count_nonzero(got.numpy()) == 3  # one row written: one nonzero sum per head
    with pytest.raises(KeyError, match=r"no state 'nope'.*its states: cache, count"):
        session.read_state("nope")


@pytest.mark.e2e
def test_two_loaded_copies_keep_their_own_state(compiled, tmp_path):
    _, session = compiled
    session.save(tmp_path / "cache.wgpt")
    a, b = webgpu_torch.load(tmp_path / "cache.wgpt"), webgpu_torch.load(tmp_path / "cache.wgpt")
    a(*_inputs(1, 3))
    a(*_inputs(2, 5))
    b(*_inputs(3, 7))
    assert a.read_state("count").tolist() == [2] and b.read_state("count").tolist() == [1]
    rows = lambda s: sorted(np.flatnonzero(np.abs(s.read_state("cache")).sum((0, 1, 3))).tolist())  # noqa: E731
    assert rows(a) == [3, 5] and rows(b) == [7]


@pytest.mark.e2e
def test_a_call_that_fails_midway(compiled):
    """Refused before the device: nothing changes. A position past the cache: the call has run — the counter's
    write stands, the cache's is skipped — it raises, and the next call runs."""
    session = webgpu_torch.Session(compiled[1].program)
    session(*_inputs(1, 2))
    with pytest.raises(InputError):
        session(torch.randn(1, 3, 2, 7), torch.tensor([3]))
    assert session.read_state("count").tolist() == [1]
    before = session.read_state("cache")
    with pytest.raises(webgpu_torch.DeviceIndexError, match="index out of range for dim 2 of size 13"):
        session(*_inputs(2, 13))
    assert session.read_state("count").tolist() == [2]
    assert np.array_equal(session.read_state("cache"), before)
    _, count = session(*_inputs(3, 12))
    assert int(count) == 3 and np.abs(session.read_state("cache")[:, :, 12]).max() > 0


@pytest.mark.host
def test_a_mutated_buffer_that_is_not_zero_is_refused():
    class Counter(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("total", torch.ones(3))

        def forward(self, x):
            self.total.add_(x)
            return self.total * 2

    with pytest.raises(UnsupportedError, match=r"updates total in place, and total does not hold zeros"):
        webgpu_torch.compile_module(Counter(), (torch.randn(3),))


@pytest.mark.host
def test_a_mutated_input_is_refused():
    class Inc(torch.nn.Module):
        def forward(self, x):
            x.add_(1)
            return x * 2

    with pytest.raises(UnsupportedError, match=r"updates .* in place; only buffers may be updated"):
        webgpu_torch.compile_module(Inc(), (torch.randn(3),))


class Counter(torch.nn.Module):
    """A second program over Cache's counter (the same buffer name): adds `step` each call, returns it."""

    def __init__(self, step: int = 2, size: int = 1):
        super().__init__()
        self.step = step
        self.register_buffer("count", torch.zeros(size, dtype=torch.int64), persistent=False)

    def forward(self, x):
        self.count.add_(self.step)
        return self.count * 1 + x


@pytest.mark.e2e
def test_naming_the_engine_a_session_runs_on_keeps_its_executor(compiled):
    """executor("dawn") after executor() on Dawn is the same executor: not a second copy of every buffer, whose
    state would be zeros again (bench llm timed such a copy beside the one that generated)."""
    session = webgpu_torch.Session(compiled[1].program)
    session(*_inputs(1, 3))
    first = session.executor()
    assert session.executor(first.engine.name) is first
    assert session.read_state("count").tolist() == [1]


def test_programs_that_share_states_see_each_others_writes(compiled):
    """Session.share: a state both programs name is one buffer (a prefill and its decoder step)."""
    cache = webgpu_torch.Session(compiled[1].program)
    counter = webgpu_torch.compile_module(Counter(), (torch.zeros(1, dtype=torch.int64),))
    counter.share(cache)
    cache(*_inputs(1, 3))
    assert counter(np.zeros(1, np.int64)).tolist() == [3]  # the cache's 1, then its own 2
    cache(*_inputs(2, 5))
    assert cache.read_state("count").tolist() == [4] and counter.read_state("count").tolist() == [4]
    counter.reset_state()
    assert cache.read_state("count").tolist() == [0] and np.abs(cache.read_state("cache")).max() > 0
    wrong = webgpu_torch.compile_module(Counter(size=2), (torch.zeros(2, dtype=torch.int64),))
    with pytest.raises(InputError, match=r"state 'count' is int64\[2\] here and int64\[1\] in the program sharing"):
        wrong.share(cache)
