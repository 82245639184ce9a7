"""Packed integer weights: the storage layout of a quantized matrix (docs/artifact.md, "Packed weights") and
its packing, unpacking and round-to-nearest quantization on the host (numpy only).

A packed matrix is `rows × cols` values in groups of `group` consecutive elements of a row. One buffer holds
it: the codes, `bits` (4 or 8) each, packed least significant first into u32 words, each row padded to 16
bytes; then per group its f32 scale and, with `zero_points`, its f32 zero point. Element (n, k) is
`(code − zero) · scale`, the zero being `2^(bits−1)` when none is stored (signed codes stored offset).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np

BITS = (4, 8)
DTYPES = {4: "q4", 8: "q8"}  # the artifact's dtype of each width


@dataclass(frozen=True)
class Packing:
    bits: int  # per code: 4 or 8
    rows: int
    cols: int
    group: int  # elements of a row sharing a scale; >= cols: one group per row
    zero_points: bool  # whether each group stores a zero point (else it is 2^(bits-1))

    def __post_init__(self):
        problem = self.problem()
        if problem:
            raise ValueError(problem)

    def problem(self) -> str | None:
        """Why these fields describe no packed matrix (docs/artifact.md's rules), or None."""
        if self.bits not in BITS:
            return f"packed weights have 4 or 8 bits per code, not {self.bits}"
        if min(self.rows, self.cols, self.group) < 1:
            return f"a packed matrix of {self.rows} x {self.cols} in groups of {self.group}"
        if self.group < self.cols and self.group % self.per_word:
            return (f"a group of {self.group} codes straddles u32 words of {self.per_word} codes: groups are "
                    f"multiples of {self.per_word}, or whole rows")
        return None

    @property
    def dtype(self) -> str:
        return DTYPES[self.bits]

    @property
    def per_word(self) -> int:
        return 32 // self.bits

    @property
    def row_words(self) -> int:
        """R: u32 words per row of codes, a multiple of 4 (rows start 16 bytes apart)."""
        return 4 * -(-self.cols * self.bits // 128)

    @property
    def groups(self) -> int:
        """G: groups per row."""
        return -(-self.cols // self.group)

    @property
    def params_offset(self) -> int:
        """The word where the group parameters start."""
        return self.rows * self.row_words

    @property
    def words(self) -> int:
        return self.params_offset + self.rows * self.groups * (2 if self.zero_points else 1)

    @property
    def nbytes(self) -> int:
        return 4 * self.words

    @property
    def midpoint(self) -> int:
        """The zero point of a group that stores none."""
        return 1 << (self.bits - 1)

    def layout(self) -> tuple[int, int, int, int]:
        """(R, group, G, parameters' word offset): what a kernel decoding it takes as its uniforms."""
        return (self.row_words, self.group, self.groups, self.params_offset)


def pack(codes: np.ndarray, scales: np.ndarray, zeros: np.ndarray | None, packing: Packing) -> np.ndarray:
    """The u32 words of `codes` ([rows, cols] unsigned integers below 2^bits) with per-group `scales` and
    `zeros` ([rows, G], f32 after conversion; `zeros` None when the packing stores none)."""
    p = packing
    codes = np.asarray(codes)
    if codes.shape != (p.rows, p.cols) or (codes.size and (codes.min() < 0 or codes.max() >= 1 << p.bits)):
        raise ValueError(f"codes of shape {codes.shape} do not fit a {p.bits}-bit packing of {p.rows} x {p.cols}")
    padded = np.zeros((p.rows, p.row_words * p.per_word), np.uint32)
    padded[:, :p.cols] = codes
    lanes = padded.reshape(p.rows, p.row_words, p.per_word) << (np.arange(p.per_word, dtype=np.uint32) * p.bits)
    words = np.bitwise_or.reduce(lanes, axis=2).reshape(-1)
    group = [np.asarray(scales, np.float32).reshape(p.rows, p.groups)]
    if p.zero_points:
        group.append(np.asarray(zeros, np.float32).reshape(p.rows, p.groups))
    params = np.stack(group, axis=2).reshape(-1).view(np.uint32)
    return np.concatenate([words, params])


def unpack(words: np.ndarray, packing: Packing) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(codes [rows, cols], scales [rows, G], zeros [rows, G]) of packed `words` (zeros filled with the
    midpoint when none are stored)."""
    p = packing
    words = np.asarray(words).view(np.uint32).reshape(-1)
    shifts = np.arange(p.per_word, dtype=np.uint32) * p.bits
    rows = words[:p.params_offset].reshape(p.rows, p.row_words, 1)
    codes = ((rows >> shifts) & ((1 << p.bits) - 1)).reshape(p.rows, -1)[:, :p.cols]
    params = words[p.params_offset:p.words].view(np.float32).reshape(p.rows, p.groups, -1)
    zeros = params[:, :, 1] if p.zero_points else np.full((p.rows, p.groups), p.midpoint, np.float32)
    return codes.astype(np.int64), params[:, :, 0].copy(), zeros.copy()


def take_rows(parts: list[tuple[np.ndarray, Packing]], order: np.ndarray) -> tuple[np.ndarray, Packing]:
    """The packed matrix whose row i is row order[i] of `parts`' matrices stacked (each its words and packing,
    all of one bits, cols, group and zero_points): codes, scales and zero points move with their rows, so every
    value is the same."""
    first = parts[0][1]
    if any((p.bits, p.cols, p.group, p.zero_points) != (first.bits, first.cols, first.group, first.zero_points)
           for _, p in parts):
        raise ValueError("rows are taken from packed matrices of one bits, width, group and zero points only")
    codes, scales, zeros = (np.concatenate(a)[order] for a in zip(*(unpack(w, p) for w, p in parts), strict=True))
    packing = Packing(first.bits, len(order), first.cols, first.group, first.zero_points)
    return pack(codes, scales, zeros if first.zero_points else None, packing), packing


def dequantize(words: np.ndarray, packing: Packing) -> np.ndarray:
    """The float32 matrix packed `words` hold, as the kernels compute it: (code − zero) · scale in f32."""
    codes, scales, zeros = unpack(words, packing)
    per_element = np.repeat(np.arange(packing.groups), packing.group)[:packing.cols]
    return (codes.astype(np.float32) - zeros[:, per_element]) * scales[:, per_element]


# (data address, shape, strides, dtype, bits, group) -> (the matrix, kept alive so its address stays its own,
# quantize's result), while `quantizing_once` is in force.
_ONCE: ContextVar[dict | None] = ContextVar("quantized_once", default=None)


@contextmanager
def quantizing_once() -> Iterator[None]:
    """Within it, quantize packs each weight matrix once (the same memory, the same view): the programs one
    model compiles to (a decoder step and its prefill) share their packed weights' words."""
    token = _ONCE.set({})
    try:
        yield
    finally:
        _ONCE.reset(token)


def quantize(w: np.ndarray, bits: int, group: int) -> tuple[np.ndarray, Packing]:
    """Round-to-nearest symmetric quantization of a float matrix [rows, cols] along its rows: each group's
    scale is its largest magnitude / (2^(bits−1) − 1), each code round(w / scale) + 2^(bits−1), so an
    element's error is at most half its group's scale, max|w_group| / (2^bits − 2). Returns the packed words
    and their Packing (no zero points)."""
    once = _ONCE.get()
    if once is None:
        return _quantize(w, bits, group)
    key = (w.__array_interface__["data"][0], w.shape, w.strides, w.dtype.str, bits, group)
    if key not in once:
        once[key] = w, _quantize(w, bits, group)
    return once[key][1]


def _quantize(w: np.ndarray, bits: int, group: int) -> tuple[np.ndarray, Packing]:
    w = np.asarray(w, np.float64)
    rows, cols = w.shape
    packing = Packing(bits, rows, cols, min(group, cols), False)
    g = packing.groups
    padded = np.zeros((rows, g * packing.group))
    padded[:, :cols] = w
    top = (1 << (bits - 1)) - 1
    amax = np.abs(padded.reshape(rows, g, packing.group)).max(axis=2)
    scales = (np.where(amax > 0, amax, 1.0) / top).astype(np.float32)
    per_element = np.repeat(np.arange(g), packing.group)[:cols]
    q = np.clip(np.rint(w / scales[:, per_element].astype(np.float64)), -top, top)
    return pack(q.astype(np.int64) + packing.midpoint, scales, None, packing), packing
