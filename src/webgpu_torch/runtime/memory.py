"""How many bytes of buffers one program may ask for on a device: a damaged or hostile file may ask for any.

WebGPU says how large one buffer may be, not how much memory a device has. The cap, in this order:
  * `WEBGPU_TORCH_MAX_MEMORY` (bytes) when it is set;
  * else 3/4 of the adapter's device-local memory where the engine reports its memory heaps (Dawn), or
    32 GiB where it does not (wgpu-native);
  * and on a CPU adapter (fit.adapter_kind: lavapipe, SwiftShader, WARP, whose device memory is the
    host's), no more than 3/4 of the memory this process may still take: the least of the host's available
    memory and the room left under the process's address-space and data limits (RLIMIT_AS, RLIMIT_DATA) and
    under its cgroup's memory.max — the rest is for the process's own copies of inputs, outputs and
    constants, and for the shader compiler.
Every buffer counts: inputs, constants, scratch, state, status, and those no dispatch binds. A program over
the cap is refused before anything is allocated: on a CPU adapter, running out of memory takes the driver
and the process down (24.8 GiB of scratch on a 24 GiB machine did, and 3 GiB of state under a 3 GiB
address-space limit). `decide` is the rule without the reading of the process's limits;
tests/conformance/memory.json holds it as cases, which js/src/memory.js replays.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ..format.errors import DeviceError
from .fit import CPU, adapter_kind

MEMORY_VAR = "WEBGPU_TORCH_MAX_MEMORY"
DEFAULT_MEMORY = 32 * 2**30
SHARE = 3 / 4  # of the device-local memory, or on a CPU adapter of the memory the process may still take
# Where a CPU adapter's memory runs out first, each a number of bytes this process may still take, or None.
ROOMS = {"host": "the host's available memory", "address_space": "the address space RLIMIT_AS leaves",
         "data": "the data segment RLIMIT_DATA leaves", "cgroup": "the memory its cgroup's memory.max leaves"}


@dataclass(frozen=True)
class Cap:
    bytes: int
    why: str  # what sets it, for the error: "3/4 of the host's available memory, on this CPU adapter"


def cap(engine) -> Cap:
    """The cap for programs on `engine` (runtime/engine.py), read now (the memory left changes)."""
    value = os.environ.get(MEMORY_VAR)
    if value:
        if not value.isdigit():
            raise DeviceError(f"{MEMORY_VAR}={value!r}: give a number of bytes")
        return Cap(int(value), f"{MEMORY_VAR}")
    kind = adapter_kind(engine.adapter.info)
    return decide(kind, _device_local(engine), rooms() if kind == CPU else {})


def decide(kind: str, device_local: int | None, rooms: dict[str, int | None]) -> Cap:
    """The cap on an adapter of `kind` ("cpu" or "gpu") with `device_local` bytes of memory (None: not
    reported), where the process may still take `rooms` (ROOMS' keys, bytes; absent or None: unknown)."""
    out = Cap(DEFAULT_MEMORY, f"default (set {MEMORY_VAR})") if device_local is None else Cap(
        int(device_local * SHARE), f"3/4 of the adapter's device-local memory (set {MEMORY_VAR})")
    if kind != CPU:
        return out
    for key, what in ROOMS.items():
        room = rooms.get(key)
        if room is not None and int(max(0, room) * SHARE) < out.bytes:
            out = Cap(int(max(0, room) * SHARE), f"3/4 of {what}, on this CPU adapter")
    return out


def _device_local(engine) -> int | None:
    """The bytes of the adapter's device-local memory heaps, where the engine says (Dawn's memory heaps)."""
    if engine.name != "dawn" or "adapter-properties-memory-heaps" not in engine.adapter.features:
        return None
    from wgpudawn.backends.dawn import extras

    heaps = extras.get_adapter_properties(engine.adapter).get("memory_heaps", [])
    local = sum(h["size"] for h in heaps if "device-local" in h.get("properties", ()))
    return local or None


def rooms() -> dict[str, int | None]:
    """What this process may still take (ROOMS), where the system says (Linux's /proc and cgroups)."""
    status = _fields(Path("/proc/self/status"), 1024)  # VmSize, VmData: kB
    return {"host": host_available(),
            "address_space": _under("RLIMIT_AS", status.get("VmSize")),
            "data": _under("RLIMIT_DATA", status.get("VmData")),
            "cgroup": _cgroup_room()}


def host_available() -> int | None:
    """The host memory available to a new allocation: Linux's MemAvailable, else half the physical memory."""
    available = _fields(Path("/proc/meminfo"), 1024).get("MemAvailable")
    if available is not None:
        return available
    physical = _physical()
    return None if physical is None else physical // 2


def _under(limit: str, used: int | None) -> int | None:
    """The room left under a resource limit (its soft value), or None when it is unlimited or unknown."""
    try:
        import resource
    except ImportError:  # not a Unix
        return None
    soft = resource.getrlimit(getattr(resource, limit))[0]
    return None if soft == resource.RLIM_INFINITY or used is None else soft - used


def _cgroup_room() -> int | None:
    """memory.max less memory.current of this process's cgroup (v1: limit_in_bytes less usage_in_bytes), or
    None without one below the host's physical memory."""
    try:
        lines = Path("/proc/self/cgroup").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        _, controllers, path = line.split(":", 2)
        if controllers == "":  # cgroup v2
            where, files = Path("/sys/fs/cgroup") / path.lstrip("/"), ("memory.max", "memory.current")
        elif "memory" in controllers.split(","):
            where, files = Path("/sys/fs/cgroup/memory") / path.lstrip("/"), ("memory.limit_in_bytes",
                                                                             "memory.usage_in_bytes")
        else:
            continue
        limit, used = (_number(where / f) for f in files)
        physical = _physical()
        if limit is not None and used is not None and (physical is None or limit < physical):
            return limit - used
    return None


def _fields(path: Path, unit: int) -> dict[str, int]:
    """`Name: value ...` lines of a /proc file, the values times `unit`."""
    try:
        text = path.read_text()
    except OSError:
        return {}
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        if rest.split() and rest.split()[0].isdigit():
            out[name] = int(rest.split()[0]) * unit
    return out


def _number(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None  # "max": no limit


def _physical() -> int | None:
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
