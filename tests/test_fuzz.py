"""Hostile artifacts (tests/fuzz.py), each loaded and run in a process of its own: none may crash the
process, hang past the call timeout, or raise anything but the package's errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from . import fuzz

pytestmark = pytest.mark.runtime

VARIANTS = 240
CALL_TIMEOUT = 5  # seconds (WEBGPU_TORCH_TIMEOUT in the children): a hung kernel must raise by then
GRACE = 60  # a child past CALL_TIMEOUT + GRACE is hung (lavapipe's first compile of a kernel takes seconds)
ROOT = Path(__file__).parent.parent


def test_hostile_artifacts_are_refused_or_run_never_crash_or_hang(tmp_path):
    env = {**os.environ, "WEBGPU_TORCH_TIMEOUT": str(CALL_TIMEOUT), "WEBGPU_TORCH_TUNE": "1",
           "WEBGPU_TORCH_CACHE": str(tmp_path / "tuning.json")}
    outcomes, failures = Counter(), []
    for seed in range(VARIANTS):
        data, what = fuzz.mutate(seed)
        path = tmp_path / f"{seed}.wgpt"
        path.write_bytes(data)
        try:
            child = subprocess.run([sys.executable, "-m", "tests.fuzz", str(path)], cwd=ROOT, env=env,
                                   capture_output=True, text=True, timeout=CALL_TIMEOUT + GRACE)
        except subprocess.TimeoutExpired:
            failures.append(f"seed {seed} ({what}): hung")
            continue
        lines = [line for line in child.stdout.splitlines() if line.startswith("{")]
        if child.returncode != 0 or not lines:
            failures.append(f"seed {seed} ({what}): crashed, exit {child.returncode}: {child.stderr[-300:]}")
            continue
        result = json.loads(lines[-1])
        outcomes[result["outcome"]] += 1
        if result["outcome"] == "raw exception":
            failures.append(f"seed {seed} ({what}): {result['error']}: {result['message']}")
        elif "message" in result and "\n" in result["message"]:
            failures.append(f"seed {seed} ({what}): a message of several lines: {result['message'][:300]}")
        path.unlink()
    print(dict(outcomes))
    assert not failures, "\n".join(failures)
    assert outcomes["refused at load"] > VARIANTS // 2 and outcomes["ran"] > 0
