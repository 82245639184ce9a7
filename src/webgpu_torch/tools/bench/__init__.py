"""Benchmarks, run side by side in one process so every figure has its baseline from the same run.

Each suite returns rows (dicts) and prints a table headed by the device; `webgpu-torch bench <suite>` runs one.
Speed is measured here only — never by timed tests.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence


def baseline_seconds(fn: Callable[[], object], repeats: int, cuda: bool) -> float:
    """Seconds per call of a baseline `fn`: the median of 5 runs of `repeats` back-to-back calls, after 3
    warm-up calls; timed by CUDA events (torch's work on the device) or by the wall clock."""
    for _ in range(3):
        fn()
    times = []
    for _ in range(5):
        if cuda:
            import torch

            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _ in range(repeats):
                fn()
            end.record()
            torch.cuda.synchronize()
            times.append(start.elapsed_time(end) / 1e3 / repeats)
        else:
            start = time.perf_counter()
            for _ in range(repeats):
                fn()
            times.append((time.perf_counter() - start) / repeats)
    return statistics.median(times)


def named(shapes: Sequence, wanted: list[str] | None) -> list:
    """The shapes (anything with a `name`) named by `wanted`, names or prefixes of them; all for none."""
    wanted = wanted or [""]
    picked = [s for s in shapes if any(s.name == w or s.name.startswith(w) for w in wanted)]
    if not picked:
        raise SystemExit(f"no shape matches {wanted}; shapes: {' '.join(s.name for s in shapes)}")
    return picked
