"""How a call's wait polls (runtime/engine.py, `Engine.wait`): on a GPU it keeps polling for SPIN["gpu"], so a
prompt's call of some milliseconds is seen done at once; on a CPU adapter it backs off to pauses after 2 ms,
leaving the adapter's own threads the cores. A fake clock, device and promise: no adapter."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from webgpu_torch.runtime import engine

pytestmark = pytest.mark.host

POLL = 50e-6  # seconds of the fake clock a poll takes


class _Work:
    """A device whose work finishes `seconds` after the wait starts, its map's promise, and their clock."""

    def __init__(self, seconds: float):
        self.now, self.done_at, self.pauses = 0.0, seconds, []
        self.device = SimpleNamespace(_poll=self._poll)
        self.time = SimpleNamespace(perf_counter=lambda: self.now, sleep=self._sleep)

    def _poll(self) -> None:
        self.now += POLL

    def _sleep(self, seconds: float) -> None:  # sleep(0) while spinning: a yield of the GIL, no pause
        if seconds:
            self.pauses.append(seconds)
        self.now += seconds

    @property
    def _state(self) -> str:  # the promise's
        return "pending" if self.now < self.done_at else "fulfilled"

    def sync_wait(self) -> None:
        pass


def _wait(monkeypatch, kind: str, seconds: float) -> _Work:
    work = _Work(seconds)
    monkeypatch.setattr(engine, "time", work.time)
    engine.Engine("dawn", None, None, work.device, spin=engine.SPIN[kind]).wait(work, "a call", timeout=60)
    return work


@pytest.mark.parametrize("seconds", [1e-3, 9e-3, 40e-3])
def test_a_wait_on_a_gpu_sees_a_call_done_within_a_poll(monkeypatch, seconds):
    work = _wait(monkeypatch, "gpu", seconds)
    assert work.pauses == [] and work.now - work.done_at < POLL + 1e-12


def test_a_wait_on_a_cpu_adapter_backs_off_after_2_ms_and_a_long_one_on_a_gpu_too(monkeypatch):
    work = _wait(monkeypatch, "cpu", 9e-3)
    assert work.pauses and max(work.pauses) <= 1e-3 and work.now - work.done_at < 1e-3 + POLL
    assert sum(work.pauses) > 9e-3 - 2e-3 - 1e-3  # after its first 2 ms the wait mostly sleeps
    work = _wait(monkeypatch, "gpu", 0.2)
    assert work.pauses and max(work.pauses) <= 1e-3
