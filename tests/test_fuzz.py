"""Hostile artifacts (tests/fuzz.py), each loaded and called once in a worker process: none may crash the
worker, run past the call timeout, or raise anything but the package's errors. The variants stay in
build/fuzz, where the JavaScript suite (js/test/fuzz.test.js) replays them in Node.

The suite runs a sample (every family of the catalogue, and random mutations); the whole catalogue:
    python -m tests.fuzz --write build/fuzz-all --random 800 --all && python -m tests.fuzz --run build/fuzz-all
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from . import fuzz

pytestmark = pytest.mark.runtime

ROOT = Path(__file__).parent.parent
FOLDER = ROOT / "build" / "fuzz"


def test_hostile_artifacts_end_in_a_package_error_or_a_completed_call(tmp_path):
    index = fuzz.write(FOLDER, fuzz.RANDOM)
    env = {**os.environ, "WEBGPU_TORCH_CACHE": str(tmp_path / "tuning.json")}
    outcomes, failures = fuzz.replay(FOLDER, index, env)
    print(dict(outcomes))
    assert not failures, "\n".join(failures)
    assert outcomes["refused at load"] > len(index) // 3 and outcomes["ran"] > 0


def test_the_memory_cap_refuses_a_program_before_it_allocates(monkeypatch):
    import webgpu_torch
    from webgpu_torch.format.errors import DeviceError
    from webgpu_torch.runtime import memory
    from webgpu_torch.runtime.engine import get_engine
    from webgpu_torch.runtime.fit import adapter_kind

    engine = get_engine()
    cap = memory.cap(engine)
    if adapter_kind(engine.adapter.info) == "cpu":  # lavapipe: what this process may still take bounds it
        assert cap.bytes <= memory.host_available() and "on this CPU adapter" in cap.why
    monkeypatch.setenv(memory.MEMORY_VAR, "1000")
    session = webgpu_torch.load(fuzz.GOLDEN / "mlp.wgpt")
    with pytest.raises(DeviceError, match=r"over the 0\.00 GiB this process allows: WEBGPU_TORCH_MAX_MEMORY"):
        session.executor()


@pytest.mark.host
def test_outcomes_are_classified_by_what_the_worker_says(tmp_path):
    """The runner itself: a worker that dies is a crash, one that goes silent a hang (so the fuzz can fail)."""
    paths = [tmp_path / "a", tmp_path / "b"]
    crash = [sys.executable, "-c", "import os; os._exit(3)"]
    silent = [sys.executable, "-c", "import time; time.sleep(30)"]
    last = [sys.executable, "-c", "import json; print(json.dumps({'outcome': 'ran', 'last': True}))"]
    assert [r["outcome"] for r in fuzz.run(paths, crash, dict(os.environ), 5, ROOT)] == ["crashed", "crashed"]
    assert [r["outcome"] for r in fuzz.run(paths[:1], silent, dict(os.environ), 1, ROOT)] == ["hung"]
    assert [r["outcome"] for r in fuzz.run(paths, last, dict(os.environ), 5, ROOT)] == ["ran", "ran"]


@pytest.mark.parametrize("engine", ["dawn", "wgpu"])
def test_an_endless_kernel_ends_in_the_timeout_its_session_sets(engine, tmp_path):
    """In a process of its own: the device stays busy with the loop until that process exits."""
    out = _endless(tmp_path, "tiny", engine, "timeout=2", {"WEBGPU_TORCH_TUNE": "0"})
    error, limit, seconds, message = out.split(maxsplit=3)
    assert error == "CallTimeout" and 2 < float(limit) < 4 and float(limit) <= float(seconds) < 30, out
    assert "did not finish within" in message


@pytest.mark.parametrize("engine", ["dawn", "wgpu"])
def test_an_endless_kernel_timed_by_tuning_ends_the_load(engine, tmp_path):
    """Tuning times the looping candidates first: its timeout ends the load, whose executors are kept (releasing
    one would wait on wgpu-native's poll thread, itself waiting on the loop)."""
    out = _endless(tmp_path, "mlp", engine, "", {"WEBGPU_TORCH_TUNE": "1", "WEBGPU_TORCH_TIMEOUT": "3",
                                                 "WEBGPU_TORCH_CACHE": str(tmp_path / "tuning.json")})
    assert out.startswith("CallTimeout") and "did not finish within 3" in out, out


def _endless(tmp_path, base: str, engine: str, load_args: str, env: dict) -> str:
    """What a process loading `base` with an endless loop in every kernel and calling it once prints: the
    error's class, the first call's limit, the seconds it took and the message."""
    path = tmp_path / "endless.wgpt"
    path.write_bytes(fuzz.hostile_file(base, fuzz.endless))
    script = textwrap.dedent(f"""
        import os, time, numpy as np, webgpu_torch
        session = webgpu_torch.load({str(path)!r}{", " if load_args else ""}{load_args})
        start, limit = time.perf_counter(), 0
        try:
            limit = session.executor()._limit
            session(*[np.zeros(x.shape, np.float32) for x in session.program.inputs])
        except webgpu_torch.DeviceError as e:
            print(type(e).__name__, limit, time.perf_counter() - start, e, flush=True)
        os._exit(0)""")
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, cwd=ROOT,
                         env={**os.environ, "WEBGPU_TORCH_ENGINE": engine, **env})
    return run.stdout
