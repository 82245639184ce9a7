"""Host memory stays flat over long runs: on_device outputs come from a pool and go back to it, and finished
submissions are retired though nothing is mapped."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import webgpu_torch

pytestmark = pytest.mark.runtime


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096


def _growth_per_call(fn, calls: int, warm: int = 2000) -> float:
    for _ in range(warm):
        fn()
    start = _rss()
    for _ in range(calls):
        fn()
    return (_rss() - start) / calls


def test_on_device_calls_with_their_outputs_dropped_keep_memory_flat():
    session = webgpu_torch.compile_module(torch.nn.Linear(37, 11).eval(), (torch.randn(5, 37),))
    x = np.ones((5, 37), np.float32)
    per_call = _growth_per_call(lambda: session.on_device(x), 100_000)
    assert per_call < 64, f"{per_call:.1f} bytes per call"  # was 9-14 KB on Dawn
    assert session.executor().engine.pool.waiting_bytes <= 2**20
