"""The builder ops lower into: outputs with `ctx.new`, work with `ctx.dispatch`, and `ctx.contiguous` for an
operand a kernel cannot read strided. Buffers here are virtual: the planner maps scratch ones onto shared
device buffers afterwards (see lowering.py). The builder keeps the buffer table, device-side checks and the
dequantized weights not computed yet; the constants (constants.py) and the dispatches (emitter.py) have
their own stores, which it hands its calls to.
"""

from __future__ import annotations

from collections.abc import Callable
from math import prod
from typing import Any

import numpy as np

from ..format import dtypes, symbolic
from ..format.packing import Packing
from ..format.program import Buffer, Check, Tensor, contiguous_strides
from . import layout
from .constants import ConstantStore, Packed
from .emitter import Emitter, KernelSpec
from .options import Options


class Builder:
    def __init__(self, options: Options, copy: Callable[[Builder, Tensor], Tensor],
                 dequantize: Callable[[Builder, Packed, Tensor], None]):
        """`copy(builder, t)`: a dispatch making a contiguous copy of view `t`; `dequantize(builder, w, out)`:
        one computing packed weights `w` into flat float32 `out` (op families' kernels, passed in so that the
        builder imports no op family)."""
        self.options = options
        self._copy = copy
        self._dequantize = dequantize
        self.buffers: list[Buffer] = []
        self.constants = ConstantStore(self.buffers)
        self.emitter = Emitter()
        self.checks: list[Check] = []
        self.status: int | None = None  # the status buffer, made by the first check
        self._dummy: Tensor | None = None
        self._pending: dict[int, Packed] = {}  # scratch buffer of a dequantized weight not computed yet -> it
        self._once: dict[Any, Tensor] = {}

    @property
    def node(self) -> str:
        """The node being lowered, recorded on its dispatches."""
        return self.emitter.node

    @node.setter
    def node(self, name: str) -> None:
        self.emitter.node = name

    def buffer(self, b: Buffer) -> int:
        """Add `b` to the program's buffers; its index."""
        self.buffers.append(b)
        return len(self.buffers) - 1

    # -- for op lowerings -------------------------------------------------------------------------------------
    def new(self, shape: tuple, dtype: str = "float32") -> Tensor:
        """A fresh contiguous scratch tensor; a dynamic shape gets a buffer for its largest size. An f16
        activation's buffer is sized for float32: a device without shader-f16 runs the float32 fallback of
        every kernel over the same buffers (half_storage.py)."""
        size = max(1, symbolic.bound(prod(shape))) * max(dtypes.dtype(dtype).itemsize, 4)
        return Tensor(self.buffer(Buffer(size, "scratch")), tuple(shape), contiguous_strides(tuple(shape)), 0, dtype)

    def dummy(self) -> Tensor:
        """A small zero buffer to bind where a kernel's optional operand is absent (it is never read)."""
        if self._dummy is None:
            self._dummy = self.constant("__dummy__", np.zeros(4, np.float32))
        return self._dummy

    def sink(self) -> Tensor:
        """A small scratch buffer to bind where a kernel has an output it is told not to write (an override
        flag): the slot is read_write, and inputs and constants are never bound read_write."""
        return self.new((4,), "int32")

    def constant(self, name: str, array: np.ndarray, dtype: str = "float32") -> Tensor:
        return self.constants.add(name, array, dtype)

    def half(self, t: Tensor) -> Tensor:
        """Float constant view `t` over its float16 copy (ConstantStore.half)."""
        return self.constants.half(t)

    def bfloat(self, t: Tensor) -> Tensor:
        """Float constant view `t` over its bfloat16 copy (ConstantStore.bfloat)."""
        return self.constants.bfloat(t)

    def stored_float(self, t: Tensor) -> Tensor:
        """Float view `t` as a kernel reading weights binds it: a constant of a float16 or bfloat16 model in its
        16 bits, a float32 one in float16 under weights="float16" (options.WeightFormat; one copy a buffer, so
        a tied embedding and LM head share it); anything else as it is."""
        if self.buffers[t.buffer].role != "constant":
            return t
        if t.dtype == "bfloat16":
            return self.bfloat(t)
        if t.dtype == "float16" or (t.dtype == "float32" and self.options.weights.bits == 16):
            return self.half(t)
        return t

    def packed_row_bytes(self, w: Tensor) -> int | None:
        """Bytes per row of float32 constant weight `w` [N, K] (its whole buffer, row-major; K a multiple of 4, as
        the kernels decode codes four at a time) as weights="int8" | "int4" packs it along its rows (rows pack
        independently: row chunks pack as the whole would); None where the option packs no such weight."""
        weights = self.options.weights
        if (not weights.packed or w.dtype != "float32" or self.buffers[w.buffer].role != "constant" or w.ndim != 2
                or not w.is_contiguous() or w.offset != 0 or w.numel != self.constants[w.buffer].size
                or w.shape[1] % 4):
            return None
        k = w.shape[1]
        return Packing(weights.bits, 1, k, min(weights.group_along(k), k), False).nbytes

    def packed(self, words: Tensor, layout: Packing) -> Packed:
        """The packed weights a constant of `layout.words` u32 words holds, as a view of their elements."""
        return self.constants.packed(words, layout)

    def quantized(self, t: Tensor) -> Packed:
        """Float32 constant view `t` [..., K, N] of a weight W [N, K] quantized and packed as weights="int8" |
        "int4" says, in its groups along K (ConstantStore.quantized: once a buffer, so a tied table and its LM
        head, or a chunk of each, share one copy)."""
        weights = self.options.weights
        return self.constants.quantized(t, weights.bits, weights.group_along(t.shape[-2]))

    def dequantized(self, w: Packed, shape: tuple[int, ...]) -> Tensor:
        """A float32 tensor of `shape` whose elements (row-major) are packed weights `w`'s. Kernels that decode
        them read `w` instead (`packed_view`); the first dispatch that binds the tensor itself is preceded by a
        dispatch computing it (`materialize`), so a weight only they read is never widened."""
        t = self.new(shape)
        self._pending[t.buffer] = w
        return t

    def packed_view(self, t: Tensor) -> Packed | None:
        """View `t` of a dequantized weight that is not computed yet, as the same view of its packed elements;
        None when `t` views anything else."""
        w = self._pending.get(t.buffer)
        return None if w is None else Packed(w.buffer, t.shape, t.strides, t.offset, w.dtype, w.packing)

    def materialize(self, t: Tensor) -> None:
        """Compute the dequantized weight `t` views, if it is one not computed yet (one dispatch, once)."""
        w = self._pending.pop(t.buffer, None)
        if w is not None:
            self._dequantize(self, w, Tensor(t.buffer, (w.packing.rows * w.packing.cols,), (1,)))

    def too_large(self, t: Tensor) -> bool:
        """Whether t is a constant over the binding limit, which an op must split (see row_chunks). Other
        tensors over it are refused when lowering ends."""
        return self.constants.holds(t) and self.buffers[t.buffer].size > self.options.max_binding

    def row_chunks(self, t: Tensor, row_bytes: int | None = None) -> list[tuple[int, int, Tensor]]:
        """A contiguous constant over the binding limit as (lo, hi, rows lo..hi as a constant of their own),
        each under the limit as stored at `row_bytes` a row (packed; default: as it is). Chunks are made once
        per constant and row range."""
        return self.constants.row_chunks(t, self.options.max_binding, row_bytes)

    def contiguous(self, t: Tensor) -> Tensor:
        """`t` itself when contiguous, else a contiguous copy: of a constant (a permuted weight), made now as a
        constant of its own; of anything else, one dispatch. A view that repeats elements (an expanded
        constant) is copied on the device rather than stored larger."""
        if t.is_contiguous():
            return t
        copy = self.constants.host_copy(t)
        return copy if copy is not None else self._copy(self, t)

    def walkable(self, t: Tensor, steps) -> Tensor:
        """`t` for a kernel loop of `steps` steps that walks it (an int or an Expr): itself when its buffer holds
        that many elements, else a contiguous copy (a view broadcast along the loop). Kernels bound such loops
        by the length of the buffer they walk (ops/bounded.wgsl), which a program compiled here then never
        reaches."""
        return t if self.holds(t, steps) else self.contiguous(t)

    def holds(self, t: Tensor, steps) -> bool:
        """Whether t's buffer holds at least `steps` elements of its dtype (at the largest sizes); packed
        weights count their u32 words, as the kernels that bound loops by them do."""
        itemsize = 4 if isinstance(t, Packed) else dtypes.dtype(t.dtype).itemsize
        return symbolic.bound(steps) <= self.buffers[t.buffer].size // itemsize

    def check(self, message: str) -> tuple[Tensor, int]:
        """A device-side check of the node being lowered: the status buffer (bind it read_write: an array of
        u32) and the word of it the kernel sets to 1 when the check fails; the runtime then raises an
        IndexError saying `message` and naming the node (docs/artifact.md, Checks)."""
        if self.status is None:
            self.status = self.buffer(Buffer(4, "status"))  # sized for every check when lowering ends
        self.checks.append(Check(self.node, message))
        return Tensor(self.status, (1,), (1,), 0, "int32"), len(self.checks) - 1

    def once(self, key, make: Callable[[], Tensor]) -> Tensor:
        """make() the first time `key` is asked for, the same tensor after: a layout copy that several ops read
        (every tensor here is written once, by the dispatch that makes it, so a copy of it stays valid)."""
        if key not in self._once:
            self._once[key] = make()
        return self._once[key]

    def reshaped(self, t: Tensor, shape: tuple) -> Tensor:
        """`t` viewed as `shape` (same element count), through `contiguous` only where its strides forbid it."""
        return layout.view(t, shape) or layout.view(self.contiguous(t), shape)

    def dispatch(self, spec: KernelSpec, tensors: list[Tensor], params: dict | None, workgroups=None, *,
                 elements=None) -> None:
        """Emit one dispatch of `workgroups` workgroups, or of enough for one invocation per element of
        `elements` (Emitter.dispatch): none when either is 0. The dequantized weights it binds are computed
        first."""
        if (isinstance(workgroups, int) and workgroups == 0) or (isinstance(elements, int) and elements == 0):
            return
        for t in tensors:
            if not isinstance(t, Packed):
                self.materialize(t)
        self.emitter.dispatch(spec, tensors, params, workgroups, elements=elements)

    def alternatives(self, emitters: list[Callable[[], None]], result: Tensor | tuple[Tensor, ...]) -> None:
        """Emit `emitters[0]`'s dispatches, offering every other emitter's as tuning options
        (Emitter.alternatives)."""
        self.emitter.alternatives(emitters, result)
