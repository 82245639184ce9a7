"""Memory planning: assign scratch tensors to shared device buffers by liveness. A pure function.

Time is the dispatch index. A lifetime [start, end] is inclusive at both ends: a buffer read by dispatch i is
still live during i, so a dispatch never writes into the buffer of an input it reads (WebGPU also forbids
binding one buffer as both read-only and writable storage in a dispatch).

Greedy by start time: when a value becomes live, it takes the smallest free slot that fits it; failing that
the largest free slot, grown to fit; failing that a new slot. Rejected: one arena with offsets — a binding's
offset must meet minStorageBufferOffsetAlignment and its size maxStorageBufferBindingSize, and buffers of
their own avoid both.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass


@dataclass(frozen=True)
class Lifetime:
    value: int  # a virtual buffer id
    size: int  # bytes
    start: int  # first dispatch that writes it
    end: int  # last dispatch that reads it (inclusive); >= start


@dataclass(frozen=True)
class Plan:
    slot_of: dict[int, int]  # virtual buffer id -> slot index
    slot_sizes: tuple[int, ...]  # bytes per slot


def plan(lifetimes: list[Lifetime]) -> Plan:
    slot_of: dict[int, int] = {}
    sizes: list[int] = []
    busy: list[tuple[int, int]] = []  # heap of (end, slot)
    free: set[int] = set()
    for life in sorted(lifetimes, key=lambda x: (x.start, -x.size, x.value)):
        if life.end < life.start:
            raise ValueError(f"lifetime of buffer {life.value} ends before it starts")
        while busy and busy[0][0] < life.start:
            free.add(heapq.heappop(busy)[1])
        slot = _choose(free, sizes, life.size)
        if slot is None:
            slot = len(sizes)
            sizes.append(life.size)
        else:
            free.discard(slot)
            sizes[slot] = max(sizes[slot], life.size)
        slot_of[life.value] = slot
        heapq.heappush(busy, (life.end, slot))
    return Plan(slot_of, tuple(sizes))


def _choose(free: set[int], sizes: list[int], need: int) -> int | None:
    if not free:
        return None
    fitting = [s for s in free if sizes[s] >= need]
    if fitting:
        return min(fitting, key=lambda s: (sizes[s], s))
    return max(free, key=lambda s: (sizes[s], -s))
