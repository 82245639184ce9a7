"""Measuring a loaded program on the device: whole-call GPU time, per-dispatch GPU time, host encode cost.

GPU time comes from timestamp queries where the adapter has `timestamp-query` (written at the start of the
first compute pass and the end of the last), else from the wall clock around submit-and-wait, which also
counts the submit. Every figure is a median over `samples` runs after a warm-up run.
"""

from __future__ import annotations

import functools
import statistics
import time
from dataclasses import dataclass

import numpy as np

from .executor import Executor


def _locked(fn):
    """Run `fn(executor, ...)` under the executor's device lock (runtime/engine.py)."""
    @functools.wraps(fn)
    def run(executor: Executor, *args, **kwargs):
        with executor.engine.lock:
            return fn(executor, *args, **kwargs)
    return run


@dataclass(frozen=True)
class Timing:
    seconds: float  # median per call
    method: str  # "timestamps" | "wall clock"


def _wait(executor: Executor) -> None:
    executor.engine.drain("timed work")


def _has_timestamps(executor: Executor) -> bool:
    return "timestamp-query" in executor.engine.device.features


class _Timestamps:
    """A query set with `count` slots and the buffers to read it back."""

    def __init__(self, executor: Executor, count: int):
        wgpu, device = executor.engine.wgpu, executor.engine.device
        self.wgpu, self.device, self.count, self.engine = wgpu, device, count, executor.engine
        self.query_set = device.create_query_set(type=wgpu.QueryType.timestamp, count=count)
        self.resolve = device.create_buffer(size=8 * count,
                                            usage=wgpu.BufferUsage.QUERY_RESOLVE | wgpu.BufferUsage.COPY_SRC)
        self.read = device.create_buffer(size=8 * count, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def writes(self, begin: int | None, end: int | None) -> dict | None:
        if begin is None and end is None:
            return None
        w = {"query_set": self.query_set}
        if begin is not None:
            w["beginning_of_pass_write_index"] = begin
        if end is not None:
            w["end_of_pass_write_index"] = end
        return w

    def finish(self, encoder) -> np.ndarray:
        """Resolve, submit `encoder`, and return the timestamps in nanoseconds."""
        encoder.resolve_query_set(self.query_set, 0, self.count, self.resolve, 0)
        encoder.copy_buffer_to_buffer(self.resolve, 0, self.read, 0, 8 * self.count)
        self.device.queue.submit([encoder.finish()])
        self.engine.read(self.read, "timed work")
        try:
            return np.frombuffer(self.read.read_mapped(), dtype=np.uint64).copy()
        finally:
            self.read.unmap()


MIN_SPAN = 2e-3  # seconds a timed submit should last: Dawn quantises timestamps (to 65.5 µs on an H200)


@_locked
def gpu_time(executor: Executor, repeats: int = 10, samples: int = 5) -> Timing:
    """GPU seconds per call: at least `repeats` back-to-back calls per submit (more for short programs, so a
    submit spans MIN_SPAN), median over `samples` submits. Inputs are whatever the buffers hold (run the
    program once first to upload real ones)."""
    while True:
        t = _gpu_time(executor, repeats, 1)
        if t.seconds * repeats >= MIN_SPAN or repeats >= 4096:
            break
        repeats *= 4
    return _gpu_time(executor, repeats, samples)


def _gpu_time(executor: Executor, repeats: int, samples: int) -> Timing:
    device = executor.engine.device
    per_call = []
    stamps = _Timestamps(executor, 2) if _has_timestamps(executor) else None
    for sample in range(samples + 1):  # sample 0 is the warm-up
        encoder = device.create_command_encoder()
        if stamps:
            for r in range(repeats):
                executor.encode(encoder, stamps.writes(0 if r == 0 else None, 1 if r == repeats - 1 else None))
            t = stamps.finish(encoder)
            seconds = (int(t[1]) - int(t[0])) * 1e-9
        else:
            for _ in range(repeats):
                executor.encode(encoder)
            start = time.perf_counter()
            device.queue.submit([encoder.finish()])
            _wait(executor)
            seconds = time.perf_counter() - start
        if sample:
            per_call.append(seconds / repeats)
    return Timing(statistics.median(per_call), "timestamps" if stamps else "wall clock")


@_locked
def dispatch_times(executor: Executor, samples: int = 3, repeats: int = 1, only: list[int] | None = None,
                   warm_up: bool = True) -> list[float]:
    """GPU seconds of each dispatch, median over `samples` (after one warm-up run, unless `warm_up` is
    False). Each dispatch runs `repeats` times back to back in a compute pass of its own, timed by
    timestamps: repeats resolve dispatches shorter than the timestamp quantum, at the price of warm caches (a
    repeat re-reads what its predecessor just touched). With `only`, just those dispatches run, and the
    others' times are NaN. Needs the adapter's `timestamp-query` feature."""
    if not _has_timestamps(executor):
        raise RuntimeError("this adapter has no timestamp-query feature: per-dispatch times are unavailable")
    n = len(executor.program.dispatches)
    timed = range(n) if only is None else sorted(set(only))
    stamps = _Timestamps(executor, 2 * max(len(timed), 1))
    runs = []
    for sample in range(samples + warm_up):
        encoder = executor.engine.device.create_command_encoder()
        for slot, i in enumerate(timed):
            pipeline, bind_group, grid = executor._plan[i]
            cpass = encoder.begin_compute_pass(timestamp_writes=stamps.writes(2 * slot, 2 * slot + 1))
            cpass.set_pipeline(pipeline)
            cpass.set_bind_group(0, bind_group)
            for _ in range(repeats):
                cpass.dispatch_workgroups(*grid)
            cpass.end()
        t = stamps.finish(encoder).astype(np.int64)
        if sample or not warm_up:
            runs.append((t[1::2] - t[0::2])[:len(timed)] * 1e-9 / repeats)
    out = np.full(n, np.nan)
    out[list(timed)] = np.median(np.stack(runs), axis=0)
    return list(out)


def wall_time(fn, repeats: int) -> float:
    """Median wall-clock seconds of `fn()` after one warm-up call."""
    fn()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


@_locked
def encode_cost(executor: Executor, samples: int = 20) -> float:
    """Host seconds to encode and submit one call, per dispatch (the GPU work itself not awaited)."""
    device = executor.engine.device
    costs = []
    for _ in range(samples):
        start = time.perf_counter()
        encoder = device.create_command_encoder()
        executor.encode(encoder)
        device.queue.submit([encoder.finish()])
        costs.append(time.perf_counter() - start)
        _wait(executor)
    return statistics.median(costs) / max(len(executor.program.dispatches), 1)


PHASES = ("upload", "gpu", "map", "copy")


@_locked
def call_phases(executor: Executor, inputs: list, env: dict[str, int], samples: int = 5) -> dict[str, float]:
    """Median seconds of each phase of a call, each awaited before the next starts (so they sum to a little
    more than a call): `upload` the inputs written to their buffers, `gpu` the dispatches, `map` the outputs
    copied to the staging buffer and mapped, `copy` the outputs copied out of mapped memory."""
    engine, runs = executor.engine, {p: [] for p in PHASES}
    executor.prepare(env)
    for sample in range(samples + 1):  # sample 0 is the warm-up
        marks = [time.perf_counter()]
        for encode in (lambda e: executor.write_inputs(e, inputs), executor.encode, executor.stage):
            encoder = engine.device.create_command_encoder()
            encode(encoder)
            executor.submit(encoder, awaited=True)
            if encode == executor.stage:
                executor.map()
            else:
                engine.drain("a timed phase")
            marks.append(time.perf_counter())
        executor.copy_mapped()
        marks.append(time.perf_counter())
        if sample:
            for p, a, b in zip(PHASES, marks[:-1], marks[1:], strict=True):
                runs[p].append(b - a)
    return {p: statistics.median(v) for p, v in runs.items()}
