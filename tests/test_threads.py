"""Any number of threads may call any number of programs on one device (runtime/engine.py: one lock per
device around each call's GPU work): every result is right, whichever thread's call ran when."""

from __future__ import annotations

import threading

import numpy as np
import pytest
import torch

import webgpu_torch

from .helpers import seeded

pytestmark = pytest.mark.runtime

THREADS, CALLS = 8, 500


def _mlp(seed: int) -> torch.nn.Module:
    torch.manual_seed(seed)
    return torch.nn.Sequential(torch.nn.Linear(37, 53), torch.nn.GELU(), torch.nn.Linear(53, 11)).eval()


def _hammer(calls) -> list[str]:
    """Run each thread's `calls(thread, i)` CALLS times; the errors, as messages."""
    errors: list[str] = []

    def work(k: int) -> None:
        try:
            for i in range(CALLS):
                calls(k, i)
        except Exception as e:  # a wrong result or a crash of the call: report it
            errors.append(f"thread {k}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


def _inputs(k: int) -> tuple[np.ndarray, ...]:
    g = seeded(f"thread{k}")
    return tuple(torch.randn(n, 37, generator=g).numpy() for n in (5, 13))


def test_threads_share_one_program_and_its_device_tensors():
    model = _mlp(0)
    session = webgpu_torch.compile_module(model, (torch.randn(5, 37),))
    inputs = {k: _inputs(k)[0] for k in range(THREADS)}
    with torch.no_grad():
        want = {k: model(torch.from_numpy(x)).numpy() for k, x in inputs.items()}

    def call(k: int, i: int) -> None:
        x = inputs[k]
        got = session.on_device(x).numpy() if i % 3 == 0 else session(x)
        np.testing.assert_allclose(got, want[k], rtol=1e-5, atol=1e-6)

    assert not _hammer(call)


def test_threads_call_programs_of_their_own_and_feed_each_other_device_tensors():
    models = [_mlp(k) for k in range(THREADS)]
    sessions = [webgpu_torch.compile_module(m, (torch.randn(13, 37),)) for m in models]
    head = torch.nn.Linear(11, 3).eval()
    second = webgpu_torch.compile_module(head, (torch.randn(13, 11),))  # shared by every thread
    inputs = {k: _inputs(k)[1] for k in range(THREADS)}
    with torch.no_grad():
        want = {k: head(models[k](torch.from_numpy(x))).numpy() for k, x in inputs.items()}

    def call(k: int, i: int) -> None:
        hidden = sessions[k].on_device(inputs[k])
        np.testing.assert_allclose(second(hidden), want[k], rtol=1e-5, atol=1e-6)

    assert not _hammer(call)
