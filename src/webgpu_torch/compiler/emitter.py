"""Emitting dispatches: what a kernel is (`KernelSpec`), the program's sources and kernels, each interned once,
and its dispatches, in the order they run — with the options a dispatch offers for tuning (a kernel's
subgroup twin, `alternatives`) and the result and tolerance their candidates must agree within.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from math import prod
from typing import Any

from ..format import symbolic
from ..format.program import (
    F16,
    FEATURES,
    SUBGROUP_MATRIX,
    Dispatch,
    Kernel,
    Option,
    Tensor,
    UniformLayout,
    fold_grid,
)
from . import wgsl
from .wgsl import SUBGROUPS

# Consts that say a kernel's storage is f16 where no type can (gemv.wgsl's C_HALF): false in its float32 twin.
HALF_FLAGS = frozenset({"C_HALF"})


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
        """This kernel over float32 operands, for a device without shader-f16 (its fallback): every f16 type
        f32, every HALF_FLAGS const false."""
        return replace(self, name=self.name.replace(",f16", ",f16 widened"), requires=(),
                       consts=tuple((k, False if k in HALF_FLAGS else "f32" if v == "f16" else v)
                                    for k, v in self.consts))

    def source(self, file: str | None = None, subgroups: bool = False) -> str:
        """The WGSL text: the `enable` directives of `requires` (and of subgroups, for the twin), then `file`
        (default: the kernel's own) specialised."""
        features = (*self.requires, SUBGROUPS) if subgroups else self.requires
        return wgsl.enables(features) + _specialized(file or self.file, self.consts, subgroups)


# How closely a tuning candidate must reproduce its group's default (Dispatch.tolerance): relative to the
# largest magnitude of the default's result. Candidates in float32 differ only in the order they sum in
# (~1e-7 here); float16 products or 16-bit results may also round differently (~1e-3). A wrong kernel is off
# by the scale of the result.
AGREE = 1e-4
AGREE_HALF = 1e-2
SIXTEEN_BITS = ("f16", "float16", "bfloat16")


class Emitter:
    """The program's sources, kernels and dispatches as lowering emits them; `node` names the node being
    lowered on each dispatch. A source or kernel is added on first use and shared after."""

    def __init__(self):
        self.sources: list[str] = []
        self.kernels: list[Kernel] = []
        self.dispatches: list[Dispatch] = []
        self.node = ""
        self._source_ids: dict[str, int] = {}
        self._kernel_ids: dict[Kernel, int] = {}
        self._made: dict[KernelSpec, Kernel] = {}

    def dispatch(self, spec: KernelSpec, tensors: list[Tensor], params: dict | None, workgroups=None, *,
                 elements=None) -> None:
        """One dispatch of `spec` over `tensors` (in binding order, Params after them): `workgroups`
        workgroups, or one invocation per element of `elements`, in workgroups of the kernel's declared size;
        either an int or an Expr of dynamic sizes (then the runtime folds the grid per call)."""
        kernel, uniform, patches = self._kernel(spec, params, len(tensors))
        if elements is not None:
            workgroups = -(-elements // prod(self.kernels[kernel].workgroup_size))
        count = workgroups if isinstance(workgroups, symbolic.Expr) else None
        grid = fold_grid(symbolic.bound(workgroups) if count is not None else workgroups)
        # A kernel whose helpers have subgroup twins offers its twin, for tuning to time where the device has
        # subgroups.
        twin = self._subgroup_twin(spec)
        options = (Option(twin, uniform, grid, patches, count),) if twin is not None else ()
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
        its later dispatches `follow` its first. With dynamic sizes each option has its own patches and count;
        tuning runs the candidates at the sizes' hints, so `result` is the views there."""
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
        others = runs[1:]
        for j, d in enumerate(default):
            options = tuple(run[j].launch for run in others)
            self.dispatches.append(replace(d, options=options, follows=j if options else 0))
        if others and default:
            kernels = [d.kernel for run in runs for d in run]
            self._agree(len(self.dispatches) - len(default), result, kernels)

    def _agree(self, leader: int, result: Tensor | tuple[Tensor, ...], kernels: list[int]) -> None:
        """Give the group `leader` leads its result and the tolerance its candidates must agree within:
        AGREE_HALF where any of `kernels` multiplies or stores in float16, or a result is a 16-bit float,
        else AGREE."""
        views = tuple(_at_hints(t) for t in ((result,) if isinstance(result, Tensor) else result))
        half = any(F16 in self.kernels[k].requires or SUBGROUP_MATRIX in self.kernels[k].requires for k in kernels)
        half = half or any(t.dtype in SIXTEEN_BITS for t in views)
        self.dispatches[leader] = replace(self.dispatches[leader], result=views,
                                          tolerance=AGREE_HALF if half else AGREE)

    def _kernel(self, spec: KernelSpec, params: dict | None, n_tensors: int) -> tuple[int, bytes, tuple]:
        """The kernel index of `spec` (added on first use), its packed Params and their dynamic patches."""
        kernel = self._make_kernel(spec)
        if kernel.storage_bindings != n_tensors:
            raise RuntimeError(f"{spec.name}: kernel binds {kernel.storage_bindings} buffers, lowering gave "
                               f"{n_tensors}")
        if (kernel.uniform is None) != (params is None):
            raise RuntimeError(f"{spec.name}: Params given {params is not None}, declared {kernel.uniform is not None}")
        uniform, patches = wgsl.pack(kernel.uniform, params) if kernel.uniform is not None else (b"", ())
        return self._kernel_index(kernel), uniform, patches

    def _make_kernel(self, spec: KernelSpec) -> Kernel:
        """The Kernel of `spec` (sources added on first use, made once per spec); one that needs shader-f16
        alone gets its float32 twin as its fallback."""
        if spec in self._made:
            return self._made[spec]
        source = spec.source()
        kinds, layout = _interface(source)
        texts = [source, *(spec.source(file) for _, file in spec.engine_files)]
        if any(_interface(text) != (kinds, layout) for text in texts):
            raise RuntimeError(f"{spec.name}: its engine sources differ in bindings or Params")
        engine_sources = tuple((engine, self._source(text))
                               for (engine, _), text in zip(spec.engine_files, texts[1:], strict=True))
        fallback = self._kernel_index(self._make_kernel(spec.widened())) if spec.requires == (F16,) else None
        kernel = Kernel(spec.name, self._source(source), spec.entry, kinds, layout, spec.overrides, engine_sources,
                        spec.requires, fallback, **_workgroup(spec, texts), targets=spec.targets)
        self._made[spec] = kernel
        return kernel

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

    def _source(self, text: str) -> int:
        if text not in self._source_ids:
            self._source_ids[text] = len(self.sources)
            self.sources.append(text)
        return self._source_ids[text]


@cache
def _specialized(file: str, consts: tuple, subgroups: bool = False) -> str:
    return wgsl.without_comments(wgsl.specialize(wgsl.kernel_source(file, subgroups), dict(consts)))


@cache
def _interface(source: str) -> tuple[tuple[str, ...], UniformLayout | None]:
    """A source's bind group 0 (each binding's kind, in order) and its Params layout, if it binds one."""
    kinds = tuple(b.kind for b in wgsl.bindings(source))
    return kinds, wgsl.uniform_layout(source) if "uniform" in kinds else None


def _workgroup(spec: KernelSpec, sources: list[str]) -> dict:
    """The declared workgroup of `spec`'s entry point over its sources (one per engine): the same size in
    each, and the most workgroup memory any of them uses."""
    points = {wgsl.entry_point(text, spec.entry, dict(spec.overrides)) for text in sources}
    if len({p.workgroup_size for p in points}) != 1:
        raise RuntimeError(f"{spec.name}: its engine sources differ in workgroup size")
    return {"workgroup_size": next(iter(points)).workgroup_size,
            "workgroup_bytes": max(p.workgroup_bytes for p in points)}


def _at_hints(t: Tensor) -> Tensor:
    """View `t` at the hints of the dynamic sizes it depends on (itself when static)."""
    values = [*t.shape, *t.strides, t.offset]
    symbols = {s for v in values if isinstance(v, symbolic.Expr) for s in v.symbols()}
    return t.at({s.name: s.hint for s in symbols}) if symbols else t
