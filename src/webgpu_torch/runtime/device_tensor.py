"""Tensors that stay in GPU memory between calls.

`Session.on_device(...)` returns its outputs as DeviceTensors: each a buffer of its own (copied out of the
program's scratch on the GPU, so the next call cannot overwrite it), holding a view like Program outputs do.
A DeviceTensor passed as an input to any program on the same device is copied GPU to GPU into that
program's input buffer — a KV cache goes from one decoder step to the next without touching the host.
Buffers come from the engine's pool (runtime/pool.py) and go back to it when the tensor is collected.
"""

from __future__ import annotations

import weakref
from typing import Any

import numpy as np

from ..format import dtypes
from ..format.program import Tensor


class DeviceTensor:
    def __init__(self, engine: Any, size: int, view: Tensor):
        """A tensor of `view` (its shape, strides, offset and dtype; its `buffer` field is unused) in a pooled
        buffer of at least `size` bytes on `engine`'s device."""
        self.engine = engine
        self.buffer = engine.pool.take(engine.device, usage(engine), size)
        self.view = view
        weakref.finalize(self, engine.pool.give, self.buffer)

    @property
    def shape(self) -> tuple[int, ...]:
        return self.view.shape

    @property
    def dtype(self) -> str:
        return self.view.dtype

    def is_contiguous(self) -> bool:
        return self.view.is_contiguous()

    def numpy(self) -> np.ndarray:
        """Read back to the host (one copy and one map)."""
        return read_view(self.engine, self.buffer, self.view, f"reading {self}")

    def __repr__(self) -> str:
        return f"DeviceTensor({self.dtype}{list(self.shape)} on {self.engine.name})"


def read_view(engine: Any, buffer: Any, view: Tensor, what: str) -> np.ndarray:
    """The host form of strided `view` (its `buffer` field unused) of device `buffer`: one copy, one map."""
    if view.numel == 0:
        return np.zeros(view.shape, dtypes.dtype(view.dtype).host)
    return dtypes.from_device(read_device_view(engine, buffer, view, what), view.dtype)


def read_device_view(engine: Any, buffer: Any, view: Tensor, what: str) -> np.ndarray:
    """Strided `view` of device `buffer` in its device form (f32, i32, u32, or f16 for a float16 activation)."""
    wgpu, device = engine.wgpu, engine.device
    d = dtypes.dtype(view.dtype)
    if view.numel == 0:
        return np.zeros(view.shape, d.device)
    with engine.lock:
        staging = device.create_buffer(size=buffer.size, usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(buffer, 0, staging, 0, buffer.size)
        device.queue.submit([encoder.finish()])
        engine.read(staging, what)
        try:
            base = np.frombuffer(staging.read_mapped(copy=False), dtype=d.device)[view.offset:]
            strides = tuple(s * d.itemsize for s in view.strides)
            return np.lib.stride_tricks.as_strided(base, view.shape, strides, writeable=False).copy()
        finally:
            staging.unmap()
            staging.destroy()


def usage(engine) -> int:
    flags = engine.wgpu.BufferUsage
    return flags.STORAGE | flags.COPY_SRC | flags.COPY_DST
