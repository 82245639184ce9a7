"""Choosing a WebGPU engine and opening its device.

Two engines share wgpu-py's API: Dawn (`wgpudawn`, Chrome's implementation) and wgpu-native (`wgpu`, naga).
The default is Dawn when it yields an adapter, else wgpu-native; `WEBGPU_TORCH_ENGINE=dawn|wgpu` (or the
`engine` argument) forces one. The device is opened once per engine and process, with the adapter's own
limits (not WebGPU's defaults: those cap a binding at 128 MiB) and the optional features we can use.

Threads: an engine's device is used under its `lock` (an RLock). A call holds it from its first upload to
the copy of its outputs out of mapped memory, so calls of any programs from any threads interleave whole;
host work before and after (input checks and conversions, output dtypes) runs outside it. The GPU runs
one queue in order anyway, so the lock costs only the overlap of one call's host work with another's GPU
work. Rejected: a lock per program plus one around submits and maps, which would overlap more but leaves
Dawn's event processing and wgpu-py's promise bookkeeping racing between threads.

Waiting: `wait` polls the device until a promise settles, with Python running between polls, so Ctrl-C
interrupts a wait and one that has not finished within its limit raises CallTimeout (the GPU work itself
cannot be cancelled; the program that timed out refuses further calls). The limit is a session's timeout for
its calls (runtime/executor.py), else `default_timeout()`. What the work that timed out may still use (its
executor, and tuning's candidates) goes to `stuck`, kept for the process's life: wgpu-native's own poll
thread then waits on that work, and releasing a pipeline waits on the poll thread.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import re
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from ..format.errors import CallTimeout, DeviceError
from ..format.limits import LIMITS
from . import fit
from .pool import BufferPool

ENV_VAR = "WEBGPU_TORCH_ENGINE"
TIMEOUT_VAR = "WEBGPU_TORCH_TIMEOUT"
DEFAULT_TIMEOUT = LIMITS["call_timeout"]["seconds"]  # a program's first call has more: executor.first_call_seconds
# Seconds a wait polls without sleeping before it backs off to pauses of up to 1 ms, by adapter kind: on a CPU
# adapter a spinning host thread takes a core from the adapter's own threads; on a GPU it costs a host core
# only, where waking from a pause adds up to that pause to a call's latency (a 1B model's prompt call takes
# about 9 ms).
SPIN = {fit.CPU: 2e-3, "gpu": 50e-3}
MAX_UNAWAITED = 32
MODULES = {"dawn": "wgpudawn", "wgpu": "wgpu"}
OPTIONAL_FEATURES = ("timestamp-query", "shader-f16", "subgroups", "chromium-experimental-subgroup-matrix")
# Dawn offers subgroup matrices only with unsafe APIs allowed, and shader-f16 on NVIDIA's Vulkan driver only
# when asked; both are toggles of its instance, set before the first adapter is requested.
DAWN_TOGGLES = ("allow_unsafe_apis", "vulkan_enable_f16_on_nvidia")
# More of Dawn's toggles, comma-separated, for measurements: each enabled, or disabled where it starts with "-"
# (benchmarks/matrix_units.py times the matrix-unit kernels with `disable_robustness`, which drops the bounds
# checks Tint puts around their loads; `-timestamp_quantization` keeps timestamps' low 16 bits, which Dawn
# otherwise zeroes, so that one dispatch's time resolves below 65.5 µs).
DAWN_TOGGLES_VAR = "WEBGPU_TORCH_DAWN_TOGGLES"
# What the matrix-unit kernels need of subgroup matrices (docs/artifact.md, "requires"): f16 operands and f32
# results 16 x 16 x 16, in subgroups of at most 32 invocations, and 32 KiB of workgroup memory.
MATRIX_SHAPE = {"component_type": "f16", "result_component_type": "f32", "m": 16, "n": 16, "k": 16}
MATRIX_MAX_SUBGROUP = 32
MATRIX_WORKGROUP_BYTES = 32768

NO_ADAPTER_HELP = (
    "No WebGPU adapter was found. On a machine without a GPU, install the software Vulkan driver "
    "(lavapipe): on Debian 12, `scripts/setup` does it (Dawn needs Mesa >= 25, from the bookworm-backports "
    "suite); or set WEBGPU_TORCH_ENGINE=wgpu to use wgpu-native, which also runs on Mesa 22."
)


@dataclass(eq=False)
class Engine:
    name: str  # "dawn" | "wgpu"
    wgpu: Any  # the engine's module, with wgpu-py's API
    adapter: Any
    device: Any
    lock: Any = field(default_factory=threading.RLock)  # held while using the device
    pool: BufferPool = field(default_factory=BufferPool)  # DeviceTensors' buffers
    unawaited: int = 0  # submissions since the last wait for the queue
    stuck: list = field(default_factory=list)  # what work that timed out may still use: never released (`wait`)
    spin: float = SPIN[fit.CPU]  # seconds a wait polls before it backs off (SPIN, by the adapter's kind)

    def submit(self, command_buffer, awaited: bool) -> None:
        """Submit; `awaited` says the caller waits for this work (maps a result). Work nobody waits for (an
        on_device call) is let run ahead at most MAX_UNAWAITED submissions, then the queue is drained: a
        host that out-runs the GPU would otherwise queue without bound."""
        self.device.queue.submit([command_buffer])
        self.unawaited = 0 if awaited else self.unawaited + 1
        if self.unawaited >= MAX_UNAWAITED:
            self.drain("work submitted without waiting")

    def drain(self, what: str) -> None:
        """Wait until the queue is idle: map a buffer that a copy submitted after all earlier work writes.
        (Rejected: queue.on_submitted_work_done, broken in wgpu-native 0.32's bindings.)"""
        flags = self.wgpu.BufferUsage
        src = self.device.create_buffer(size=4, usage=flags.COPY_SRC)
        fence = self.device.create_buffer(size=4, usage=flags.MAP_READ | flags.COPY_DST)
        encoder = self.device.create_command_encoder()
        encoder.copy_buffer_to_buffer(src, 0, fence, 0, 4)
        self.device.queue.submit([encoder.finish()])
        self.read(fence, what)
        fence.unmap()
        self.unawaited = 0

    @property
    def limits(self) -> dict[str, int]:
        return dict(self.device.limits)

    def read(self, buffer, what: str, timeout: float | None = None) -> None:
        """Map `buffer` for reading and wait for it (`wait`). Every buffer we map was last written by a copy
        in a submitted command buffer, so wgpu-native's extra empty submit before a first read map (for
        queue.write_buffer data it has not flushed) is skipped: that submit blocks in native code, beyond a
        timeout's reach, while the queue is busy (wgpu-py's internal mode "READ_NOSYNC"; Dawn reads it as READ).
        A buffer whose map timed out is kept (`stuck`): releasing it would wait on the work before it."""
        try:
            self.wait(buffer.map_async("READ_NOSYNC"), what, timeout)
        except CallTimeout:
            self.stuck.append(buffer)
            raise

    def wait(self, promise, what: str, timeout: float | None = None) -> None:
        """Block until `promise` (a map, say) settles; DeviceError naming `what` after `timeout` seconds."""
        limit = default_timeout() if timeout is None else timeout
        start = time.perf_counter()
        pause = 0.0
        while promise._state == "pending":  # wgpu-py's promise: settled ones resolve in sync_wait below
            self.device._poll()  # delivers finished work's callbacks (Dawn's ProcessEvents, wgpu's Poll)
            if promise._state != "pending":
                break
            elapsed = time.perf_counter() - start
            if elapsed > limit:
                raise CallTimeout(f"{what} did not finish within {round(limit, 1):g} s ({TIMEOUT_VAR}, or a session's "
                                  "timeout for its calls, sets the limit); the device may still be running it")
            time.sleep(pause)
            pause = 0.0 if elapsed < self.spin else min(max(2 * pause, 20e-6), 1e-3)
        promise.sync_wait()


def default_timeout() -> float:
    value = os.environ.get(TIMEOUT_VAR)
    try:
        return float(value) if value else DEFAULT_TIMEOUT
    except ValueError:
        raise DeviceError(f"{TIMEOUT_VAR}={value!r}: give a number of seconds") from None


def engine_names(choice: str | None = None) -> list[str]:
    choice = (choice or os.environ.get(ENV_VAR) or "auto").lower()
    if choice == "auto":
        return ["dawn"] if os.environ.get(DAWN_TOGGLES_VAR) else ["dawn", "wgpu"]  # Dawn's toggles ask for Dawn
    if choice not in MODULES:
        raise DeviceError(f"unknown WebGPU engine {choice!r} (from {ENV_VAR} or engine=): use dawn, wgpu or auto")
    return [choice]


def get_engine(choice: str | None = None) -> Engine:
    errors = []
    for name in engine_names(choice):
        try:
            return _open(name)
        except Exception as e:  # an engine that fails to load or finds no adapter: try the next
            errors.append(f"  {name} ({MODULES[name]}): {e}")
    raise DeviceError("\n".join([NO_ADAPTER_HELP, "Tried:", *errors]))


@cache
def _open(name: str) -> Engine:
    wgpu = importlib.import_module(MODULES[name])
    if name == "dawn":
        _set_dawn_toggles()
    with _without_known_warnings():
        adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise DeviceError("the engine found no adapter")
    features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
    if "chromium-experimental-subgroup-matrix" in features and not _matrix_units(adapter):
        features.remove("chromium-experimental-subgroup-matrix")
    # Every limit the adapter offers, except dynamic-offset bindings (unused here; Dawn warns when asked).
    limits = {k: v for k, v in adapter.limits.items()
              if v and k.startswith(("max", "min")) and not k.startswith("max-dynamic")}
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    return Engine(name, wgpu, adapter, device, spin=SPIN[fit.adapter_kind(adapter.info)])


# Dawn prints these while creating an adapter whose limits (lavapipe's: 1,000,000) exceed what its
# dynamic-offset allocator takes; we bind no dynamic offsets, so they say nothing about our programs.
KNOWN_WARNINGS = re.compile(rb"Warning: maxDynamic\w+ artificially reduced from \d+ to \d+ to fit dynamic offset "
                            rb"allocation limit\.\n")


@contextlib.contextmanager
def _without_known_warnings():
    """Run the body with the process's stderr captured (engines print from native code), then pass everything
    it printed on, except KNOWN_WARNINGS."""
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as captured:
        os.dup2(captured.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            captured.seek(0)
            rest = KNOWN_WARNINGS.sub(b"", captured.read())
            if rest:
                os.write(2, rest)


def _set_dawn_toggles() -> None:
    from wgpudawn.backends.dawn import extras

    known = extras.all_toggles()
    # RuntimeError: the instance exists already (made by another user of wgpudawn); it keeps its toggles.
    with contextlib.suppress(RuntimeError):
        extra = [t for t in os.environ.get(DAWN_TOGGLES_VAR, "").split(",") if t]
        if unknown := [t for t in extra if t.removeprefix("-") not in known]:
            raise ValueError(f"{DAWN_TOGGLES_VAR}: Dawn has no toggle {', '.join(unknown)}")
        enable = [t for t in (*DAWN_TOGGLES, *extra) if t in known]
        extras.set_instance_extras(enable_toggles=enable, disable_toggles=[t[1:] for t in extra if t[0] == "-"])


def _matrix_units(adapter) -> bool:
    """Whether Dawn's adapter offers subgroup matrices of MATRIX_SHAPE as the matrix-unit kernels need them."""
    from wgpudawn.backends.dawn import extras

    configs = extras.get_adapter_properties(adapter).get("subgroup_matrix_configs", [])
    fits = any(all(c.get(k) == v for k, v in MATRIX_SHAPE.items()) and c["max_subgroup_size"] <= MATRIX_MAX_SUBGROUP
               for c in configs)
    return fits and adapter.limits.get("max-compute-workgroup-storage-size", 0) >= MATRIX_WORKGROUP_BYTES


def device_info(engine: str | None = None) -> dict:
    """What runs our programs: engine, adapter, backend, adapter type, optional features and limits."""
    e = get_engine(engine)
    info = e.adapter.info
    return {
        "engine": e.name,
        "engine_module": f"{MODULES[e.name]} {e.wgpu.__version__}",
        "adapter": info.get("device", ""),
        "vendor": info.get("vendor", ""),
        "description": info.get("description", ""),
        "backend": info.get("backend_type", ""),
        "adapter_type": info.get("adapter_type", ""),
        "features": {f: f in e.device.features for f in OPTIONAL_FEATURES},
        "limits": e.limits,
    }
