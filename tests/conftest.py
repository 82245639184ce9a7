"""Fixtures, and the engine and adapter every run reports in its header."""

from __future__ import annotations

import pytest

import webgpu_torch
from webgpu_torch.runtime import tuning


def pytest_report_header(config):
    info = webgpu_torch.device_info()
    return f"webgpu: {info['engine_module']} on {info['adapter']} ({info['backend']}, {info['adapter_type']})"


@pytest.fixture
def poisoned():
    """Run programs with scratch buffers filled with NaN first, so an unwritten element cannot pass."""

    def run(session, *args, **kwargs):
        session.executor().poison_scratch = True
        return session(*args, **kwargs)

    return run


@pytest.fixture(autouse=True, scope="session")
def _tuning_off(tmp_path_factory):
    """Programs run their compile-time default kernel: timing every GEMM's options on lavapipe would multiply
    the suite's time, and each option is tested on its own (test_gemm_configs.py forces every configuration).
    test_tuning.py turns tuning on, with a cache of its own (none is read from or written to home)."""
    mp = pytest.MonkeyPatch()
    mp.setenv(tuning.TUNE_VAR, "0")
    mp.setenv(tuning.CACHE_VAR, str(tmp_path_factory.mktemp("tuning") / "tuning.json"))
    yield
    mp.undo()
