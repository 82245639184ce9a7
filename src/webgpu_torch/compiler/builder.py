"""The builder ops lower into: outputs with `ctx.new`, work with `ctx.dispatch`, and `ctx.contiguous` for an
operand a kernel cannot read strided. Buffers here are virtual: the planner maps scratch ones onto shared
device buffers afterwards (see lowering.py).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from math import prod
from typing import Any

import numpy as np

from ..format import dtypes, packing, symbolic
from ..format.errors import InputError
from ..format.packing import Packing
from ..format.program import (
    F16,
    FEATURES,
    SUBGROUP_MATRIX,
    Buffer,
    Check,
    Dispatch,
    Kernel,
    Option,
    Tensor,
    UniformLayout,
    contiguous_strides,
    fold_grid,
)
from . import layout, wgsl
from .options import Options
from .wgsl import SUBGROUPS


@dataclass(frozen=True)
class KernelSpec:
    """What is compiled: a kernel file, its entry point, const substitutions, override constants, and the
    optional WebGPU features its code needs (`requires`: the source gets their `enable` directives, the
    artifact's kernel their names). A kernel that needs `shader-f16` alone (float16 operands, through an
    f16 alias) gets a float32 fallback, `widened()`; one that needs more is only ever a tuning option."""

    file: str
    name: str
    entry: str = "main"
    consts: tuple[tuple[str, Any], ...] = ()
    overrides: tuple[tuple[str, float], ...] = ()
    engine_files: tuple[tuple[str, str], ...] = ()  # (engine, file): that engine's version of the kernel
    requires: tuple[str, ...] = ()  # in the format's order (program.FEATURES)
    targets: tuple[str, ...] = ()  # kinds of adapter it is shaped for (program.Kernel.targets)

    @staticmethod
    def of(file: str, name: str, *, entry: str = "main", consts: dict | None = None,
           overrides: dict | None = None, engine_files: dict | None = None, requires=(),
           targets: tuple[str, ...] = ()) -> KernelSpec:
        consts = consts or {}
        if "f16" in consts.values() and F16 not in requires:
            raise ValueError(f"{name}: an f16 substitution needs requires=({F16!r},)")
        return KernelSpec(file, name, entry, tuple(sorted(consts.items())),
                          tuple(sorted((k, float(v)) for k, v in (overrides or {}).items())),
                          tuple(sorted((engine_files or {}).items())), tuple(f for f in FEATURES if f in requires),
                          tuple(targets))

    def widened(self) -> KernelSpec:
        """This kernel over float32 operands, for a device without shader-f16 (its fallback)."""
        return replace(self, name=self.name.replace(",f16", ",f16 widened"), requires=(),
                       consts=tuple((k, "f32" if v == "f16" else v) for k, v in self.consts))

    def source(self, file: str | None = None, subgroups: bool = False) -> str:
        """The WGSL text: the `enable` directives of `requires` (and of subgroups, for the twin), then `file`
        (default: the kernel's own) specialised."""
        features = (*self.requires, SUBGROUPS) if subgroups else self.requires
        return wgsl.enables(features) + _specialized(file or self.file, self.consts, subgroups)


@dataclass(frozen=True)
class Packed(Tensor):
    """A view of packed integer weights (packing.py): `shape`, `strides` and `offset` address the elements of
    the float matrix they hold (row-major [rows, cols]: element (n, k) at n·cols + k), while `buffer` holds
    the packed words, which kernels decode through `packing`."""

    packing: Packing | None = None


# How closely a tuning candidate must reproduce its group's default (Dispatch.tolerance): relative to the
# largest magnitude of the default's result. Candidates in float32 differ only in the order they sum in
# (~1e-7 here); float16 products or 16-bit results may also round differently (~1e-3). A wrong kernel is off
# by the scale of the result.
AGREE = 1e-4
AGREE_HALF = 1e-2
SIXTEEN_BITS = ("f16", "float16", "bfloat16")

@cache
def _specialized(file: str, consts: tuple, subgroups: bool = False) -> str:
    return wgsl.specialize(wgsl.kernel_source(file, subgroups), dict(consts))


@cache
def _interface(source: str) -> tuple[tuple[str, ...], UniformLayout | None]:
    """A source's bind group 0 (each binding's kind, in order) and its Params layout, if it binds one."""
    kinds = tuple(b.kind for b in wgsl.bindings(source))
    return kinds, wgsl.uniform_layout(source) if "uniform" in kinds else None


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
        self.constants: dict[int, np.ndarray] = {}
        self.sources: list[str] = []
        self.kernels: list[Kernel] = []
        self.dispatches: list[Dispatch] = []
        self.node = ""  # the node being lowered, recorded on its dispatches
        self._source_ids: dict[str, int] = {}
        self._kernel_ids: dict[Kernel, int] = {}
        self._dummy: Tensor | None = None
        self._folded: dict[Tensor, Tensor] = {}
        self._narrow: dict[tuple[int, str], int] = {}  # (buffer, storage dtype) -> its copy
        self.packings: dict[int, Packing] = {}  # constant buffers of packed integer weights
        self._pending: dict[int, Packed] = {}  # scratch buffer of a dequantized weight not computed yet -> it
        self._quantized: dict[tuple, Packed] = {}
        self._once: dict[Any, Tensor] = {}
        self.checks: list[Check] = []
        self.status: int | None = None  # the status buffer, made by the first check

    # -- for op lowerings -------------------------------------------------------------------------------------
    def new(self, shape: tuple, dtype: str = "float32") -> Tensor:
        """A fresh contiguous scratch tensor; a dynamic shape gets a buffer for its largest size. An f16
        activation's buffer is sized for float32: a device without shader-f16 runs the float32 fallback of
        every kernel over the same buffers (half_storage.py)."""
        size = max(1, symbolic.bound(prod(shape))) * max(dtypes.dtype(dtype).itemsize, 4)
        return Tensor(self._buffer(Buffer(size, "scratch")), tuple(shape), contiguous_strides(tuple(shape)), 0,
                      dtype)

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
        data = dtypes.to_device(array, dtype, f"constant {name!r}")
        index = self._buffer(Buffer(max(data.nbytes, 4), "constant", name))
        self.constants[index] = data
        return Tensor(index, tuple(array.shape), contiguous_strides(tuple(array.shape)), 0, dtype)

    def half(self, t: Tensor) -> Tensor:
        """Float constant view `t` over a float16 copy of its buffer (storage dtype "f16", made once per buffer;
        same strides and offset). Raises InputError naming the constant when a finite value is out of
        float16's range."""
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
        to nearest even, exact for a bfloat16 model's weights; made once per buffer; same strides and offset)."""
        return self._narrowed(t, dtypes.BF16.name, lambda data, name: dtypes.round_bfloat16(data))

    def _narrowed(self, t: Tensor, storage: str, narrow: Callable[[np.ndarray, str], np.ndarray]) -> Tensor:
        key = (t.buffer, storage)
        if key not in self._narrow:
            name = self.buffers[t.buffer].name
            data = narrow(self.constants[t.buffer], name)
            index = self._buffer(Buffer(max(data.nbytes, 4), "constant", f"{name}.{storage}"))
            self.constants[index] = data
            self._narrow[key] = index
        return replace(t, buffer=self._narrow[key], dtype=storage)

    def packed(self, words: Tensor, layout: Packing) -> Packed:
        """The packed weights a constant of `layout.words` u32 words holds, as a view of their elements."""
        self.constants[words.buffer] = self.constants[words.buffer].view(np.uint32)
        self.packings[words.buffer] = layout
        return Packed(words.buffer, (layout.rows, layout.cols), (layout.cols, 1), 0, layout.dtype, layout)

    def quantized(self, t: Tensor, bits: int, group: int) -> Packed:
        """Float32 constant view `t` [K, N] of a weight W [N, K] (its buffer, whole and row-major: t's strides
        are (1, K), offset 0) over W quantized to `bits` in groups of `group` along K (packing.quantize), made
        once per buffer."""
        key = (t.buffer, bits, group)
        if key not in self._quantized:
            k = t.shape[-2]
            words, layout = packing.quantize(self.constants[t.buffer].reshape(-1, k), bits, group)
            index = self._buffer(Buffer(layout.nbytes, "constant", f"{self.buffers[t.buffer].name}.{layout.dtype}"))
            self.constants[index] = words
            self.packings[index] = layout
            self._quantized[key] = Packed(index, (layout.rows, k), (k, 1), 0, layout.dtype, layout)
        w = self._quantized[key]
        return Packed(w.buffer, t.shape, t.strides, t.offset, w.dtype, w.packing)

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
        b = self.buffers[t.buffer]
        return b.role == "constant" and b.size > self.options.max_binding

    def row_chunks(self, t: Tensor) -> list[tuple[int, int, Tensor]]:
        """A contiguous constant over the binding limit as (lo, hi, rows lo..hi as a constant of their own),
        each under the limit. Chunks are made once per constant and row range."""
        if self.buffers[t.buffer].role != "constant" or not t.is_contiguous() or t.ndim < 1:
            raise ValueError(f"only contiguous constants are split into row chunks, not {self.buffers[t.buffer]}")
        row_bytes = max(1, prod(t.shape[1:])) * dtypes.dtype(t.dtype).itemsize
        per = max(1, self.options.max_binding // row_bytes)
        return [(lo, hi, self._fold(layout.slice_(t, 0, lo, hi, 1), f"{self.buffers[t.buffer].name}[{lo}:{hi}]"))
                for lo, hi in ((lo, min(lo + per, t.shape[0])) for lo in range(0, t.shape[0], per))]

    def contiguous(self, t: Tensor) -> Tensor:
        """`t` itself when contiguous, else a contiguous copy: of a constant (a permuted weight), made now as a
        constant of its own; of anything else, one dispatch. A view that repeats elements (an expanded
        constant) is copied on the device rather than stored larger."""
        if t.is_contiguous():
            return t
        if self.buffers[t.buffer].role == "constant" and _static(t) and t.numel <= self.constants[t.buffer].size:
            return self._fold(t, f"{self.buffers[t.buffer].name}{list(t.shape)}")
        return self._copy(self, t)

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
            self.status = self._buffer(Buffer(4, "status"))  # sized for every check when lowering ends
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
        `elements` (ceil(elements / the entry's workgroup size)); either an int or an Expr of dynamic sizes
        (then the runtime folds the grid per call). `tensors` bind in binding order, Params after them."""
        if elements is not None:
            per = wgsl.workgroup_invocations(spec.source(), spec.entry, dict(spec.overrides))
            workgroups = -(-elements // per)
        if workgroups == 0:
            return
        for t in tensors:
            if not isinstance(t, Packed):
                self.materialize(t)
        kernel, uniform, patches = self._kernel(spec, params, len(tensors))
        count = workgroups if isinstance(workgroups, symbolic.Expr) else None
        grid = fold_grid(symbolic.bound(workgroups) if count is not None else workgroups)
        # A kernel whose helpers have subgroup twins offers its twin, for tuning to time where the device has
        # subgroups (static sizes only, as every option).
        twin = self._subgroup_twin(spec) if not (patches or count is not None) else None
        options = (Option(twin, uniform, grid),) if twin is not None else ()
        self.dispatches.append(Dispatch(kernel, tuple(t.buffer for t in tensors), uniform, grid, self.node, patches,
                                        count, options))
        if options:  # the twin computes what the kernel writes
            kinds = [kind for kind in self.kernels[kernel].bindings if kind != "uniform"]
            written = tuple(t for t, kind in zip(tensors, kinds, strict=True) if kind == "read_write")
            self._agree(len(self.dispatches) - 1, written, [kernel, twin])

    def alternatives(self, emitters: list[Callable[[], None]], result: Tensor | tuple[Tensor, ...]) -> None:
        """Emit `emitters[0]`'s dispatches, offering every other emitter's as options for the runtime to time
        (runtime/tuning.py): each computes `result` (the views its dispatches write that the program reads
        on) into the same tensors, in as many dispatches, each binding the buffers its counterpart binds
        (GEMM tile configurations; a split of K or none). A group of several dispatches is chosen as a whole:
        its later dispatches `follow` its first. With dynamic sizes (patched uniforms) the first emitter's
        dispatches run, offering nothing."""
        runs = []
        for emit in emitters:
            start = len(self.dispatches)
            emit()
            runs.append(self.dispatches[start:])
            del self.dispatches[start:]
        if any(d.options for run in runs for d in run):
            raise RuntimeError(f"{self.node}: alternatives of dispatches that offer options of their own")
        default = runs[0]
        for other in runs[1:]:
            if [d.buffers for d in other] != [d.buffers for d in default]:
                raise RuntimeError(f"{self.node}: alternatives differ in their dispatches or buffers")
        dynamic = any(d.patches or d.count is not None for run in runs for d in run)
        others = [] if dynamic else runs[1:]
        for j, d in enumerate(default):
            options = tuple(Option(run[j].kernel, run[j].uniform, run[j].grid) for run in others)
            self.dispatches.append(replace(d, options=options, follows=j if options else 0))
        if others and default:
            kernels = [d.kernel for run in runs for d in run]
            self._agree(len(self.dispatches) - len(default), result, kernels)

    def _agree(self, leader: int, result: Tensor | tuple[Tensor, ...], kernels: list[int]) -> None:
        """Give the group `leader` leads its result and the tolerance its candidates must agree within:
        AGREE_HALF where any of `kernels` multiplies or stores in float16, or a result is a 16-bit float,
        else AGREE."""
        views = (result,) if isinstance(result, Tensor) else tuple(result)
        half = any(F16 in self.kernels[k].requires or SUBGROUP_MATRIX in self.kernels[k].requires for k in kernels)
        half = half or any(t.dtype in SIXTEEN_BITS for t in views)
        self.dispatches[leader] = replace(self.dispatches[leader], result=views,
                                          tolerance=AGREE_HALF if half else AGREE)

    def _kernel(self, spec: KernelSpec, params: dict | None, n_tensors: int) -> tuple[int, bytes, tuple]:
        """The kernel index of `spec` (added on first use), its packed Params and their dynamic patches."""
        kinds, layout = _interface(spec.source())
        storage = len(kinds) - (layout is not None)
        if storage != n_tensors:
            raise RuntimeError(f"{spec.name}: kernel binds {storage} buffers, lowering gave {n_tensors}")
        if (layout is None) != (params is None):
            raise RuntimeError(f"{spec.name}: Params given {params is not None}, declared {layout is not None}")
        uniform, patches = wgsl.pack(layout, params) if layout is not None else (b"", ())
        return self._kernel_index(self._make_kernel(spec)), uniform, patches

    def _make_kernel(self, spec: KernelSpec) -> Kernel:
        """The Kernel of `spec` (sources added on first use); one that needs shader-f16 alone gets its float32
        twin as its fallback."""
        source = spec.source()
        kinds, layout = _interface(source)
        texts = [source, *(spec.source(file) for _, file in spec.engine_files)]
        if any(_interface(text) != (kinds, layout) for text in texts):
            raise RuntimeError(f"{spec.name}: its engine sources differ in bindings or Params")
        engine_sources = tuple((engine, self._source(text))
                               for (engine, _), text in zip(spec.engine_files, texts[1:], strict=True))
        fallback = self._kernel_index(self._make_kernel(spec.widened())) if spec.requires == (F16,) else None
        return Kernel(spec.name, self._source(source), spec.entry, kinds, layout, spec.overrides, engine_sources,
                      spec.requires, fallback, **_workgroup(spec, texts), targets=spec.targets)

    def _subgroup_twin(self, spec: KernelSpec) -> int | None:
        """The kernel of `spec` built with its helpers' subgroup twins (wgsl.kernel_source), if it has any."""
        if _specialized(spec.file, spec.consts, True) == _specialized(spec.file, spec.consts):
            return None
        twin = spec.source(subgroups=True)
        kinds, layout = _interface(twin)
        return self._kernel_index(Kernel(f"{spec.name}+{SUBGROUPS}", self._source(twin), spec.entry, kinds,
                                         layout, spec.overrides, requires=(*spec.requires, SUBGROUPS),
                                         **_workgroup(spec, [twin])))

    def _kernel_index(self, kernel: Kernel) -> int:
        if kernel not in self._kernel_ids:
            self._kernel_ids[kernel] = len(self.kernels)
            self.kernels.append(kernel)
        return self._kernel_ids[kernel]

    # -- internals ----------------------------------------------------------------------------------------------
    def _fold(self, t: Tensor, name: str) -> Tensor:
        """The elements of constant view `t` as a contiguous constant of their own, made once per view."""
        if t not in self._folded:
            flat = self.constants[t.buffer].reshape(-1)
            data = np.lib.stride_tricks.as_strided(flat[t.offset:], t.shape, [s * flat.itemsize for s in t.strides])
            data = np.ascontiguousarray(data)
            index = self._buffer(Buffer(max(data.nbytes, 4), "constant", name))
            self.constants[index] = data
            self._folded[t] = Tensor(index, data.shape, contiguous_strides(data.shape), 0, t.dtype)
        return self._folded[t]

    def _buffer(self, b: Buffer) -> int:
        self.buffers.append(b)
        return len(self.buffers) - 1

    def _source(self, text: str) -> int:
        if text not in self._source_ids:
            self._source_ids[text] = len(self.sources)
            self.sources.append(text)
        return self._source_ids[text]


def _workgroup(spec: KernelSpec, sources: list[str]) -> dict:
    """The declared workgroup of `spec`'s entry point over its sources (one per engine): the same size in
    each, and the most workgroup memory any of them uses."""
    points = {wgsl.entry_point(text, spec.entry, dict(spec.overrides)) for text in sources}
    if len({p.workgroup_size for p in points}) != 1:
        raise RuntimeError(f"{spec.name}: its engine sources differ in workgroup size")
    return {"workgroup_size": next(iter(points)).workgroup_size,
            "workgroup_bytes": max(p.workgroup_bytes for p in points)}


def _static(t: Tensor) -> bool:
    return all(isinstance(v, int) for v in (*t.shape, *t.strides, t.offset))
