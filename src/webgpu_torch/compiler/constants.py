"""The program's constants while lowering: their host values by buffer, and the forms kernels read them in —
16-bit copies, packed integer weights, permuted or sliced copies made on the host instead of on the device.
Each form is made once per constant (and view) and shared by every kernel that reads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from math import prod

import numpy as np

from ..format import dtypes, packing
from ..format.errors import InputError
from ..format.packing import Packing
from ..format.program import Buffer, Tensor, contiguous_strides
from . import layout


@dataclass(frozen=True)
class Packed(Tensor):
    """A view of packed integer weights (packing.py): `shape`, `strides` and `offset` address the elements of
    the float matrix they hold (row-major [rows, cols]: element (n, k) at n·cols + k), while `buffer` holds
    the packed words, which kernels decode through `packing`."""

    packing: Packing | None = None


class ConstantStore(Mapping[int, np.ndarray]):
    """Host values by buffer index, in `buffers` (the builder's table, shared): a constant is a buffer of role
    "constant" whose bytes this store holds."""

    def __init__(self, buffers: list[Buffer]):
        self.buffers = buffers
        self.packings: dict[int, Packing] = {}  # constant buffers of packed integer weights
        self._values: dict[int, np.ndarray] = {}
        self._narrow: dict[tuple[int, str], int] = {}  # (buffer, storage dtype) -> its copy
        self._quantized: dict[tuple, Packed] = {}
        self._folded: dict[Tensor, Tensor] = {}

    def __getitem__(self, buffer: int) -> np.ndarray:
        return self._values[buffer]

    def __iter__(self) -> Iterator[int]:
        return iter(self._values)

    def __len__(self) -> int:
        return len(self._values)

    def holds(self, t: Tensor) -> bool:
        """Whether `t` views a constant."""
        return self.buffers[t.buffer].role == "constant"

    def add(self, name: str, array: np.ndarray, dtype: str = "float32") -> Tensor:
        data = dtypes.to_device(array, dtype, f"constant {name!r}")
        return Tensor(self._store(name, data), tuple(array.shape), contiguous_strides(tuple(array.shape)), 0, dtype)

    def half(self, t: Tensor) -> Tensor:
        """Float constant view `t` over a float16 copy of its buffer (storage dtype "f16"; same strides and
        offset). Raises InputError naming the constant when a finite value is out of float16's range."""
        def narrow(data: np.ndarray, name: str) -> np.ndarray:
            with np.errstate(over="ignore"):
                half = data.astype(np.float16)
            if not np.array_equal(np.isfinite(half), np.isfinite(data)):
                raise InputError(f"constant {name!r} has values beyond float16's range (largest magnitude "
                                 f"{np.abs(data[np.isfinite(data)]).max():.6g}); compile it with weights='float32'")
            return half

        return self._narrowed(t, dtypes.F16.name, narrow)

    def bfloat(self, t: Tensor) -> Tensor:
        """Float constant view `t` over a bfloat16 copy of its buffer (storage dtype "bf16": the bits, rounded
        to nearest even, exact for a bfloat16 model's weights; same strides and offset)."""
        return self._narrowed(t, dtypes.BF16.name, lambda data, name: dtypes.round_bfloat16(data))

    def packed(self, words: Tensor, layout: Packing) -> Packed:
        """The packed weights a constant of `layout.words` u32 words holds, as a view of their elements."""
        self._values[words.buffer] = self._values[words.buffer].view(np.uint32)
        self.packings[words.buffer] = layout
        return Packed(words.buffer, (layout.rows, layout.cols), (layout.cols, 1), 0, layout.dtype, layout)

    def quantized(self, t: Tensor, bits: int, group: int) -> Packed:
        """Float32 constant view `t` [K, N] of a weight W [N, K] (its buffer, whole and row-major: t's strides
        are (1, K), offset 0) over W quantized to `bits` in groups of `group` along K (packing.quantize)."""
        key = (t.buffer, bits, group)
        if key not in self._quantized:
            k = t.shape[-2]
            words, layout = packing.quantize(self._values[t.buffer].reshape(-1, k), bits, group)
            index = self._store(f"{self.buffers[t.buffer].name}.{layout.dtype}", words, layout.nbytes)
            self.packings[index] = layout
            self._quantized[key] = Packed(index, (layout.rows, k), (k, 1), 0, layout.dtype, layout)
        w = self._quantized[key]
        return Packed(w.buffer, t.shape, t.strides, t.offset, w.dtype, w.packing)

    def host_copy(self, t: Tensor) -> Tensor | None:
        """A contiguous copy of constant view `t` made on the host, when it is one no larger than its buffer
        (a permuted weight); None otherwise (a view that repeats elements is copied on the device rather than
        stored larger)."""
        static = all(isinstance(v, int) for v in (*t.shape, *t.strides, t.offset))
        if not (self.holds(t) and static and t.numel <= self._values[t.buffer].size):
            return None
        return self._fold(t, f"{self.buffers[t.buffer].name}{list(t.shape)}")

    def row_chunks(self, t: Tensor, max_binding: int, row_bytes: int | None = None) -> list[tuple[int, int, Tensor]]:
        """A contiguous constant over `max_binding` bytes as (lo, hi, rows lo..hi as a constant of their own),
        each under the limit when a row is stored in `row_bytes` (default: its elements')."""
        if not self.holds(t) or not t.is_contiguous() or t.ndim < 1:
            raise ValueError(f"only contiguous constants are split into row chunks, not {self.buffers[t.buffer]}")
        row_bytes = row_bytes or max(1, prod(t.shape[1:])) * dtypes.dtype(t.dtype).itemsize
        per = max(1, max_binding // row_bytes)
        return [(lo, hi, self._fold(layout.slice_(t, 0, lo, hi, 1), f"{self.buffers[t.buffer].name}[{lo}:{hi}]"))
                for lo, hi in ((lo, min(lo + per, t.shape[0])) for lo in range(0, t.shape[0], per))]

    def _narrowed(self, t: Tensor, storage: str, narrow: Callable[[np.ndarray, str], np.ndarray]) -> Tensor:
        key = (t.buffer, storage)
        if key not in self._narrow:
            name = self.buffers[t.buffer].name
            self._narrow[key] = self._store(f"{name}.{storage}", narrow(self._values[t.buffer], name))
        return replace(t, buffer=self._narrow[key], dtype=storage)

    def _fold(self, t: Tensor, name: str) -> Tensor:
        """The elements of constant view `t` as a contiguous constant of their own."""
        if t not in self._folded:
            flat = self._values[t.buffer].reshape(-1)
            data = np.lib.stride_tricks.as_strided(flat[t.offset:], t.shape, [s * flat.itemsize for s in t.strides])
            data = np.ascontiguousarray(data)
            self._folded[t] = Tensor(self._store(name, data), data.shape, contiguous_strides(data.shape), 0, t.dtype)
        return self._folded[t]

    def _store(self, name: str, data: np.ndarray, size: int | None = None) -> int:
        self.buffers.append(Buffer(max(data.nbytes, 4) if size is None else size, "constant", name))
        self._values[len(self.buffers) - 1] = data
        return len(self.buffers) - 1
