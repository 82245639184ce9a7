"""Moving a call's bytes between host and device.

Upload: an input of at least STAGED_BYTES has a staging buffer of its own (MAP_WRITE | COPY_SRC), created
mapped and mapped again right after each call's submit, so that the next call finds it mapped: its bytes
are written into memory that stays allocated, and a copy command moves them to the input buffer. Smaller
inputs go through queue.write_buffer (the engine's upload ring).

Readback: outputs are copied out of the mapped staging buffer into new arrays; a copy of at least
PARALLEL_BYTES is split into slices copied by a pool of threads (numpy's copy releases the GIL), since one
core's copy does not reach the memory system's bandwidth.

The thresholds and the choice of these paths come from bench transfer on an H200 (docs/benchmarks.md).
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from functools import cache

import numpy as np

STAGED_BYTES = 1 << 20
PARALLEL_BYTES = 8 << 20
SLICES = 8


class StagedInput:
    """A persistent mapped staging buffer for one input buffer."""

    def __init__(self, engine, size: int):
        self.engine = engine
        flags = engine.wgpu.BufferUsage
        self.buffer = engine.device.create_buffer(size=size, usage=flags.MAP_WRITE | flags.COPY_SRC,
                                                  mapped_at_creation=True)
        self._mapping = None  # the promise of the map asked for after the last submit

    def write(self, encoder, array: np.ndarray, target) -> None:
        """Write `array` into the staging buffer and encode its copy to offset 0 of `target`."""
        if self._mapping is not None:
            self.engine.wait(self._mapping, "an input's staging buffer")
            self._mapping = None
        nbytes = -(-array.nbytes // 4) * 4
        self.buffer.write_mapped(memoryview(np.ascontiguousarray(array)).cast("B"), 0)
        self.buffer.unmap()
        encoder.copy_buffer_to_buffer(self.buffer, 0, target, 0, nbytes)

    def remap(self) -> None:
        """After the submit that reads the staging buffer: map it again for the next call."""
        if self.buffer.map_state == "unmapped":
            self._mapping = self.buffer.map_async(self.engine.wgpu.MapMode.WRITE)


def copy(src: np.ndarray) -> np.ndarray:
    """A new C-contiguous copy of `src` (any strides), in slices on several threads when it is large."""
    if src.nbytes < PARALLEL_BYTES or src.ndim == 0 or not src.flags.c_contiguous:
        return src.copy()
    out = np.empty_like(src, order="C")
    flat_in, flat_out = src.reshape(-1), out.reshape(-1)
    edges = np.linspace(0, flat_in.size, SLICES + 1).astype(int)
    list(_pool().map(lambda a, b: np.copyto(flat_out[a:b], flat_in[a:b]), edges[:-1], edges[1:]))
    return out


@cache
def _pool() -> ThreadPoolExecutor:
    return ThreadPoolExecutor(max_workers=min(SLICES, os.cpu_count() or 1), thread_name_prefix="webgpu-copy")
