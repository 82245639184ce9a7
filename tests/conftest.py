"""Fixtures, and the engine and adapter every run reports in its header."""

from __future__ import annotations

import pytest

import webgpu_torch


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
