"""Tensors that stay in GPU memory between calls.

`Program.on_device(...)` returns its outputs as DeviceTensors: each a buffer of its own (copied out of the
program's scratch on the GPU, so the next call cannot overwrite it), holding a view like Program outputs do.
A DeviceTensor passed as an input to any program on the same device is copied GPU to GPU into that
program's input buffer — a KV cache goes from one decoder step to the next without touching the host.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import dtypes
from ..program import Tensor


@dataclass(eq=False)
class DeviceTensor:
    engine: Any  # runtime.engine.Engine that owns `buffer`
    buffer: Any  # GPUBuffer (STORAGE | COPY_SRC | COPY_DST)
    view: Tensor  # shape, strides, offset and dtype within `buffer` (its `buffer` field is unused)

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
        wgpu, device = self.engine.wgpu, self.engine.device
        d = dtypes.dtype(self.dtype)
        if self.view.numel == 0:
            return np.zeros(self.shape, d.host)
        staging = device.create_buffer(size=self.buffer.size, usage=wgpu.BufferUsage.MAP_READ |
                                       wgpu.BufferUsage.COPY_DST)
        encoder = device.create_command_encoder()
        encoder.copy_buffer_to_buffer(self.buffer, 0, staging, 0, self.buffer.size)
        device.queue.submit([encoder.finish()])
        staging.map_sync(wgpu.MapMode.READ)
        try:
            base = np.frombuffer(staging.read_mapped(copy=False), dtype=d.device)[self.view.offset:]
            strides = tuple(s * d.itemsize for s in self.view.strides)
            data = np.lib.stride_tricks.as_strided(base, self.shape, strides, writeable=False).copy()
        finally:
            staging.unmap()
            staging.destroy()
        return dtypes.from_device(data, self.dtype)

    def __repr__(self) -> str:
        return f"DeviceTensor({self.dtype}{list(self.shape)} on {self.engine.name})"
