"""Device buffers for DeviceTensors, reused by size class, so a loop of `on_device` calls (a decoder's
steps, whose caches grow a row at a time) allocates nothing once warm.

A size class is the size rounded up to one of eight steps per power of two (at most 12.5% spare). A
DeviceTensor's buffer comes back here when the tensor is garbage-collected and waits for the next tensor of
its class; past `limit` bytes waiting, returned buffers are destroyed instead. Reuse is safe without fences:
every use of a buffer is a command on the device's one queue, which runs in submission order.
"""

from __future__ import annotations

import threading

LIMIT = 256 * 2**20


def size_class(size: int) -> int:
    size = max(16, -(-size // 16) * 16)
    step = max(16, 1 << max(0, size.bit_length() - 4))  # eight steps per octave
    return -(-size // step) * step


class BufferPool:
    def __init__(self, limit: int = LIMIT):
        self.limit = limit
        self._free: dict[int, list] = {}
        self._waiting = 0  # bytes in _free
        self._lock = threading.Lock()  # give() runs from garbage collection, in any thread

    def take(self, device, usage, size: int):
        """A buffer of at least `size` bytes (its size class) with `usage`."""
        cls = size_class(size)
        with self._lock:
            free = self._free.get(cls)
            if free:
                self._waiting -= cls
                return free.pop()
        return device.create_buffer(size=cls, usage=usage)

    def give(self, buffer) -> None:
        with self._lock:
            if self._waiting + buffer.size <= self.limit:
                self._free.setdefault(buffer.size, []).append(buffer)
                self._waiting += buffer.size
                return
        buffer.destroy()

    @property
    def waiting_bytes(self) -> int:
        return self._waiting
