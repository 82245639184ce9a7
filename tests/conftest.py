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

    def run(program, *args, **kwargs):
        program.executor().poison_scratch = True
        return program(*args, **kwargs)

    return run


@pytest.fixture(autouse=True, scope="session")
def _tuning_cache(tmp_path_factory):
    """Tuning runs as it does for users, but with a cache of this session's own (none read from or written to
    the home directory)."""
    mp = pytest.MonkeyPatch()
    mp.setenv(tuning.CACHE_VAR, str(tmp_path_factory.mktemp("tuning") / "tuning.json"))
    yield
    mp.undo()
