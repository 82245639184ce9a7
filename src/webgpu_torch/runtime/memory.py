"""How many bytes of buffers one program may ask for on a device: a damaged or hostile file may ask for any.

WebGPU says how large one buffer may be, not how much memory a device has. The cap, in this order:
  * `WEBGPU_TORCH_MAX_MEMORY` (bytes) when it is set;
  * else 3/4 of the adapter's device-local memory where the engine reports its memory heaps (Dawn), or
    32 GiB where it does not (wgpu-native);
  * and on a CPU adapter (fit.adapter_kind: lavapipe, SwiftShader, WARP, whose device memory is the host's), no
    more than 3/4 of the host's available memory — the rest is for the process's own copies of inputs, outputs
    and constants.
A program over the cap is refused before anything is allocated: on a CPU adapter, running out of host memory
takes the driver and the process down (24.8 GiB of scratch on a 24 GiB machine did).
js/src/memory.js applies the same rule in Node (a browser: `navigator.deviceMemory` for the host's).
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from ..format.errors import DeviceError
from .fit import CPU, adapter_kind

MEMORY_VAR = "WEBGPU_TORCH_MAX_MEMORY"
DEFAULT_MEMORY = 32 * 2**30
SHARE = 3 / 4  # of the device-local memory, or of the host's available memory on a CPU adapter


@dataclass(frozen=True)
class Cap:
    bytes: int
    why: str  # what sets it, for the error: "3/4 of the host's available memory (CPU adapter)"


def cap(engine) -> Cap:
    """The cap for programs on `engine` (runtime/engine.py), read now (the host's available memory changes)."""
    value = os.environ.get(MEMORY_VAR)
    if value:
        if not value.isdigit():
            raise DeviceError(f"{MEMORY_VAR}={value!r}: give a number of bytes")
        return Cap(int(value), f"{MEMORY_VAR}")
    local = _device_local(engine)
    out = Cap(DEFAULT_MEMORY, f"default (set {MEMORY_VAR})") if local is None else Cap(
        int(local * SHARE), f"3/4 of the adapter's device-local memory (set {MEMORY_VAR})")
    host = host_available() if adapter_kind(engine.adapter.info) == CPU else None
    if host is not None and host * SHARE < out.bytes:
        out = Cap(int(host * SHARE), "3/4 of the host's available memory, on this CPU adapter")
    return out


def _device_local(engine) -> int | None:
    """The bytes of the adapter's device-local memory heaps, where the engine says (Dawn's memory heaps)."""
    if engine.name != "dawn" or "adapter-properties-memory-heaps" not in engine.adapter.features:
        return None
    from wgpudawn.backends.dawn import extras

    heaps = extras.get_adapter_properties(engine.adapter).get("memory_heaps", [])
    local = sum(h["size"] for h in heaps if "device-local" in h.get("properties", ()))
    return local or None


def host_available() -> int | None:
    """The host memory available to a new allocation: Linux's MemAvailable, else half the physical memory."""
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 2
    except (ValueError, OSError, AttributeError):
        return None
