"""Fixtures, the two tiers, and the engine and adapter every run on a GPU reports in its header.

Tiers: a test marked `host` needs no GPU adapter (frontend, planner, registry, routing, options, artifact
validation, the conformance corpus); every other test is marked `gpu` here, and so is a host test marked
`slow` (no adapter, but most of a minute of CPU), so the host tier stays fast. `pytest -m "not gpu"` runs the
host tier alone, in seconds, on a machine without an adapter. A host test that opens an engine fails
(`GpuUsed`), so the marks cannot drift from what the tests do.
"""

from __future__ import annotations

import sys

import pytest

import webgpu_torch
from webgpu_torch.runtime import engine, tuning


def pytest_report_header(config):
    if "not gpu" in (config.getoption("markexpr") or ""):
        return "webgpu: not opened (the host tier)"
    info = webgpu_torch.device_info()
    return f"webgpu: {info['engine_module']} on {info['adapter']} ({info['backend']}, {info['adapter_type']})"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("host") is None or item.get_closest_marker("slow") is not None:
            item.add_marker(pytest.mark.gpu)


WORKER_COUNTS: dict[str, int] = {}  # pytest-xdist's controller: the cross product's counts from its workers


def _cross_counts() -> dict[str, int]:
    """What this process's run of tests/test_cross_product.py counted (empty where it did not run here)."""
    module = sys.modules.get("tests.test_cross_product")
    return dict(module.COUNTS) if module is not None else {}


def pytest_sessionfinish(session):
    """A pytest-xdist worker hands its cross-product counts to the controller (`pytest_testnodedown`)."""
    if hasattr(session.config, "workeroutput"):
        session.config.workeroutput["cross_counts"] = _cross_counts()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """pytest-xdist's controller: a worker's counts, summed over the workers (`WORKER_COUNTS`)."""
    for what, n in getattr(node, "workeroutput", {}).get("cross_counts", {}).items():
        WORKER_COUNTS[what] = WORKER_COUNTS.get(what, 0) + n


def pytest_terminal_summary(terminalreporter):
    """The cross product's counts (tests/test_cross_product.py), when it ran, in this process or in workers."""
    counts = _cross_counts() or WORKER_COUNTS
    if counts:
        listed = ", ".join(f"{n} {what}" for what, n in counts.items())
        terminalreporter.write_line(f"cross product of kernel options and storages: {listed}")


class GpuUsed(BaseException):
    """A host-tier test opened a WebGPU engine (a BaseException: no engine fallback may swallow it)."""


@pytest.fixture(autouse=True)
def _host_tests_open_no_engine(request, monkeypatch):
    if request.node.get_closest_marker("host") is not None:
        def refuse(name):
            raise GpuUsed(f"{request.node.nodeid} is marked host but opened the {name} engine: mark it gpu")

        monkeypatch.setattr(engine, "_open", refuse)


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
