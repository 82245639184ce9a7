"""The compiled program: plain data between the compiler and the runtimes.

A Program lists its WGSL sources, the pipelines made from them (with each one's bindings and uniform layout,
so no runtime reads WGSL), the device buffers (inputs, constants, planned scratch), and the dispatches of one
call in order. Tensors are strided views of buffers, so views cost no dispatch and outputs that are views are
read back as such. Nothing here runs anything: `runtime.Session` runs a Program, `artifact` saves and loads
one (docs/artifact.md is the format).
"""

from __future__ import annotations

import re
import struct
from dataclasses import dataclass, field, replace
from math import prod
from typing import Any

import numpy as np

from . import compile_cost, dtypes, symbolic, tree
from .limits import LIMITS
from .packing import Packing

FORMAT_VERSION = LIMITS["format"]
BINDING_KINDS = ("read", "read_write", "uniform")
SCALARS = ("u32", "i32", "f32")
SCALAR_FORMAT = {"u32": "<I", "i32": "<i", "f32": "<f"}  # a Params word of each scalar type, for struct
F16 = "shader-f16"
SUBGROUP_MATRIX = "chromium-experimental-subgroup-matrix"  # the matrix units (docs/artifact.md, "requires")
FEATURES = tuple(LIMITS["features"])  # the optional WebGPU features the format defines; a file may name others
ROLES = ("input", "constant", "scratch", "status", "state")
WRITABLE = ("scratch", "status", "state")  # the roles a dispatch may bind read_write
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")  # an entry point's or override's name (engines cut at a NUL)
# Bounds no program we compile comes near; past them a file is damaged or hostile (a grid of 65,535² never
# finishes; what a WGSL source may cost to compile: compile_cost.py).
MAX_WORKGROUPS = LIMITS["max_workgroups"]  # per dispatch
MAX_RANK = LIMITS["max_rank"]  # dimensions of an input, output, constant or state
MAX_INVOCATIONS = LIMITS["max_workgroup_invocations"]
MAX_WORKGROUP_BYTES = LIMITS["max_workgroup_bytes"]
SYMBOL_LIMIT = LIMITS["symbol_limit"]
SCALAR_RANGE = {k: tuple(v) for k, v in LIMITS["scalar_ranges"].items()}
MAX_WORKGROUPS_PER_DIM = LIMITS["max_workgroups_per_dim"]  # WebGPU's guaranteed maxComputeWorkgroupsPerDimension


def fold_grid(workgroups: int) -> tuple[int, int, int]:
    """A 1-D count of workgroups as an (x, y, 1) grid; kernels number workgroups x-fastest and those past
    the count exit at once."""
    if workgroups <= MAX_WORKGROUPS_PER_DIM:
        return (workgroups, 1, 1)
    y = -(-workgroups // MAX_WORKGROUPS_PER_DIM)
    if y > MAX_WORKGROUPS_PER_DIM:
        raise ValueError(f"{workgroups} workgroups exceed a {MAX_WORKGROUPS_PER_DIM}² grid")
    return (-(-workgroups // y), y, 1)



def contiguous_strides(shape: tuple[int, ...]) -> tuple[int, ...]:
    strides, acc = [], 1
    for n in reversed(shape):
        strides.append(acc)
        acc *= n if isinstance(n, symbolic.Expr) else max(n, 1)  # a dynamic size is never 0
    return tuple(reversed(strides))


@dataclass(frozen=True)
class Tensor:
    """A strided view of a buffer; strides and offset count elements of `dtype`."""

    buffer: int
    shape: tuple[int, ...]
    strides: tuple[int, ...]
    offset: int = 0
    dtype: str = "float32"

    @property
    def numel(self) -> int:
        return prod(self.shape)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    def is_contiguous(self) -> bool:
        """Whether the view is its elements in C order, densely (one without elements always is)."""
        if self.numel == 0:
            return True
        return all(s == c for n, s, c in zip(self.shape, self.strides, contiguous_strides(self.shape),
                                              strict=True) if n != 1)

    def span(self) -> int:
        """Elements from `offset` to one past the furthest element this view reaches."""
        if self.numel == 0:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))

    def at(self, env: dict[str, int]) -> Tensor:
        """This view with its dynamic sizes evaluated."""
        def e(v):
            return symbolic.evaluate(v, env)

        return Tensor(self.buffer, tuple(map(e, self.shape)), tuple(map(e, self.strides)), e(self.offset),
                      self.dtype)


@dataclass(frozen=True)
class Buffer:
    size: int  # bytes
    role: str  # one of ROLES
    name: str = ""  # the input's or constant's name, for messages


@dataclass(frozen=True)
class State:
    """A tensor the program keeps between calls (a KV cache): its "state" buffer holds zeros when the program
    is loaded, and each call's dispatches read and write it in place (docs/artifact.md, State)."""

    name: str  # the model's buffer it stands for, e.g. "key_cache_0"
    buffer: int
    shape: tuple[int, ...]
    dtype: str


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple  # ints, and Exprs for dynamic dimensions
    dtype: str
    buffer: int


@dataclass(frozen=True)
class UniformField:
    name: str
    offset: int  # bytes
    scalar: str  # element type: u32 | i32 | f32
    count: int  # number of scalars (1 for a scalar, 4 for vec4, 4*N for array<vec4, N>)


@dataclass(frozen=True)
class UniformLayout:
    """A kernel's `Params` struct in WGSL's uniform address space (wgsl.parse_uniform derives it)."""

    fields: tuple[UniformField, ...]
    size: int  # bytes, a multiple of 16


@dataclass(frozen=True)
class Kernel:
    """One compute pipeline: an entry point of a (specialised) source, with its override constants, its bind
    group 0 (`bindings`: "read", "read_write" or "uniform" per binding, in order), its Params layout, and what
    a workgroup of its entry point takes (`workgroup_size`, `workgroup_bytes`: checked against the device's
    limits before anything compiles).

    `engine_sources` names a different source for some engines: the same computation in a style that
    engine's shader compiler handles better, with identical bindings and Params. `requires` names the
    optional WebGPU features its source uses: a kernel needing `subgroups` or subgroup matrices is only ever
    an option beside one that needs neither (tuning takes it where the device has them and it runs faster);
    any other needing `shader-f16` names a `fallback` kernel, the same one in float32, for devices without
    the feature. `needs` is what a device must have to run it as a dispatch. `targets` names the kinds of
    adapter its shape is built for ("cpu": adapters whose invocations run on CPU threads): tuning times such
    an option first on such an adapter."""

    name: str  # readable variant name, e.g. "gemm[128x128]"; shown in profiles
    source: int  # index into Program.sources
    entry: str
    bindings: tuple[str, ...] = ()
    uniform: UniformLayout | None = None  # present exactly when a binding is "uniform"
    overrides: tuple[tuple[str, float], ...] = ()
    engine_sources: tuple[tuple[str, int], ...] = ()  # (engine name, source index)
    requires: tuple[str, ...] = ()  # optional WebGPU features its source uses
    fallback: int | None = None  # kernel index: this kernel in float32, for devices without shader-f16
    workgroup_size: tuple[int, int, int] = (1, 1, 1)  # the entry point's @workgroup_size, overrides applied
    workgroup_bytes: int = 0  # the workgroup memory its entry point uses (each variable rounded up to 16)
    targets: tuple[str, ...] = ()  # kinds of adapter it is shaped for; a ranking hint for tuning

    @property
    def needs(self) -> tuple[str, ...]:
        """The features a device must have to run this kernel: `requires`, less shader-f16 when a fallback
        (which requires nothing) runs in its place without it."""
        return tuple(f for f in self.requires if not (f == F16 and self.fallback is not None))

    def source_for(self, engine: str) -> int:
        return dict(self.engine_sources).get(engine, self.source)

    @property
    def storage_bindings(self) -> int:
        return sum(b != "uniform" for b in self.bindings)


@dataclass(frozen=True)
class Patch:
    """A uniform word whose value is a dynamic size, evaluated per call: `scalar` is its WGSL type."""

    offset: int  # bytes into the packed struct
    scalar: str  # u32 | i32 | f32
    value: Any  # symbolic.Expr


@dataclass(frozen=True)
class Check:
    node: str  # the graph node whose kernel checks
    message: str  # what failed, as the error says it: "index out of range for a table of 11 rows"


@dataclass(frozen=True)
class Option:
    """Another kernel that computes a dispatch's result from the same buffers (a different GEMM tile
    configuration, or another split of K): the runtime may time the options on its device and run the
    fastest (runtime/tuning.py). With dynamic sizes, its own patches and workgroup count, as a dispatch's."""

    kernel: int
    uniform: bytes
    grid: tuple[int, int, int]
    patches: tuple[Patch, ...] = ()
    count: Any = None  # Expr | None

    def at(self, env: dict[str, int]) -> tuple[bytes, tuple[int, int, int]]:
        """The Params and grid it runs with at the dynamic sizes `env` (the uniform's patched words filled in,
        the count folded): what a tuning probe runs."""
        words = bytearray(self.uniform)
        for q in self.patches:
            value = symbolic.evaluate(q.value, env)
            struct.pack_into(SCALAR_FORMAT[q.scalar], words, q.offset, float(value) if q.scalar == "f32" else value)
        grid = fold_grid(symbolic.evaluate(self.count, env)) if self.count is not None else self.grid
        return bytes(words), grid


@dataclass(frozen=True)
class Dispatch:
    kernel: int  # index into Program.kernels
    buffers: tuple[int, ...]  # storage bindings, in binding order; the uniform (if any) binds after them
    uniform: bytes  # the packed Params struct, b"" when the kernel has none
    grid: tuple[int, int, int]  # workgroup counts, each within WebGPU's 65,535 per dimension
    node: str  # the graph node this dispatch implements
    # With dynamic sizes: the uniform words to fill in per call, and the workgroup count to fold per call
    # (`grid` is then the grid for the largest sizes).
    patches: tuple[Patch, ...] = ()
    count: Any = None  # Expr | None
    options: tuple[Option, ...] = ()  # equivalent alternatives; this one is the default
    # > 0: the dispatch `follows` places earlier leads a group chosen as a whole (a split GEMM and the
    # reduction of its slices): this one has as many options and runs option i when the leader does.
    follows: int = 0
    # A leader's: the views its group computes, which every candidate must reproduce (tuning compares each
    # one's with the default's before it may be chosen), and how closely: within `tolerance` times the largest
    # finite magnitude of the default's, integer views exactly. A group without a result runs its default.
    result: tuple[Tensor, ...] = ()
    tolerance: float = 0.0

    @property
    def launch(self) -> Option:
        """What this dispatch runs (its kernel, Params, grid, patches and count), as an option would say it."""
        return Option(self.kernel, self.uniform, self.grid, self.patches, self.count)

    def choose(self, option: Option) -> Dispatch:
        """This dispatch running `option` instead (and offering no options)."""
        return Dispatch(option.kernel, self.buffers, option.uniform, option.grid, self.node, option.patches,
                        option.count)


@dataclass
class Program:
    sources: list[str]
    kernels: list[Kernel]
    buffers: list[Buffer]
    constants: dict[int, np.ndarray]  # buffer index -> its bytes, in device representation
    inputs: list[Input]
    outputs: list[Tensor]
    input_tree: dict
    output_tree: dict
    dispatches: list[Dispatch]
    meta: dict = field(default_factory=dict)  # free-form provenance: model name, torch version …
    symbols: dict = field(default_factory=dict)  # name -> symbolic.Symbol: the dynamic dimensions
    # Device-side checks (out-of-range indices): check i's kernels set word i of the "status" buffer to a
    # nonzero value when it fails; the runtime raises `checks[i]` naming its node (docs/artifact.md).
    checks: list[Check] = field(default_factory=list)
    states: list[State] = field(default_factory=list)  # tensors kept between calls, each in a "state" buffer
    # Constants that hold packed integer weights (docs/artifact.md, "Packed weights"): buffer index -> how its
    # u32 words are laid out. Their arrays are the words.
    packings: dict[int, Packing] = field(default_factory=dict)

    def __post_init__(self):
        self._checked = False  # check() passed: a Program is not changed in place once checked

    @property
    def requires(self) -> tuple[str, ...]:
        """The optional features a device needs to run the dispatches as written (their options aside): the
        header's `requires`, sorted."""
        return tuple(sorted({f for d in self.dispatches for f in self.kernels[d.kernel].needs}))

    # -- inspection ----------------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise ValueError unless every index, size, binding and expression is consistent, so that a damaged
        or hand-edited program fails here with a message rather than inside a WebGPU engine."""
        for what, ok in _problems(self):
            if not ok:
                raise ValueError(what)
        self._checked = True

    def checked(self) -> Program:
        """This program, checked unless it already was in this process: what a boundary a program crosses
        (a Session, an Executor, a save) asks for, so that a compiled or loaded program is scanned once."""
        if not self._checked:
            self.check()
        return self

    def derived(self, **changes: Any) -> Program:
        """`dataclasses.replace(self, **changes)`, checked when this program is: for the runtime's fitting and
        tuning, which keep a valid program valid (a kernel swapped for its fallback or one of its dispatch's
        options, float16 constants widened: tests/test_conformance.py and tests/test_cross_product.py)."""
        out = replace(self, **changes)
        out._checked = self._checked
        return out

    def summary(self) -> str:
        """A readable listing: inputs, outputs, buffers by role, and every dispatch."""
        by_role: dict[str, list[int]] = {}
        for b in self.buffers:
            by_role.setdefault(b.role, []).append(b.size)
        lines = [f"Program: {len(self.dispatches)} dispatches, {len(self.kernels)} pipelines"]
        lines += [f"  dynamic {s.name} in [{s.lo}, {s.hi}]: {s.about}" for s in self.symbols.values()]
        lines += [f"  input  {i.name}: {i.dtype}{show_shape(i.shape)}" for i in self.inputs]
        lines += [f"  output {k}: {t.dtype}{show_shape(t.shape)}" for k, t in enumerate(self.outputs)]
        lines += [f"  state  {s.name}: {s.dtype}{show_shape(s.shape)}" for s in self.states]
        for role, sizes in sorted(by_role.items()):
            lines.append(f"  {role:8s} {len(sizes)} buffers, {sum(sizes) / 2**20:.2f} MiB")
        for i, d in enumerate(self.dispatches):
            grid = f"workgroups={d.count}" if d.count is not None else f"grid={list(d.grid)}"
            lines.append(f"  [{i:4d}] {self.kernels[d.kernel].name:28s} {grid} buffers={list(d.buffers)}  <- {d.node}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()



def _problems(p: Program):
    """(message, holds) for every rule docs/artifact.md states, in an order where each rule may rely on the
    ones before it (indices are checked before they are used)."""
    nb = len(p.buffers)
    for name, s in p.symbols.items():
        yield f"symbol {name}: range [{s.lo}, {s.hi}] with hint {s.hint}", 0 <= s.lo <= s.hint <= s.hi < SYMBOL_LIMIT
    for i, source in enumerate(p.sources):
        why = compile_cost.problem(source)
        yield f"source {i}: {why}", why is None
    for i, b in enumerate(p.buffers):
        yield f"buffer {i}: bad size {b.size!r}", _is_int(b.size) and b.size > 0
        yield f"buffer {i}: unknown role {b.role!r}", b.role in ROLES
        if b.role == "constant":
            yield f"buffer {i} ({b.name}): constant data is missing", i in p.constants
            yield f"buffer {i} ({b.name}): constant larger than buffer", p.constants[i].nbytes <= b.size
    yield "constant data for a buffer that is not a constant", all(
        0 <= i < nb and p.buffers[i].role == "constant" for i in p.constants)
    for i, packing in p.packings.items():
        yield f"packed weights for buffer {i}, which holds no constant", i in p.constants
        yield f"buffer {i}: packed weights of {packing.nbytes} bytes in {p.constants[i].nbytes}", (
            p.constants[i].dtype == np.uint32 and p.constants[i].nbytes == packing.nbytes)
    used = {b for d in p.dispatches for b in d.buffers} | {t.buffer for t in p.outputs}
    yield "a scratch buffer no dispatch binds", all(b.role != "scratch" or i in used for i, b in enumerate(p.buffers))
    status = [i for i, b in enumerate(p.buffers) if b.role == "status"]
    yield "more than one status buffer", len(status) <= 1
    yield "checks without a status buffer large enough for them", not p.checks or (
        status and p.buffers[status[0]].size >= 4 * len(p.checks))
    yield "a status buffer an output reads", not set(status) & {t.buffer for t in p.outputs}
    stated = [s.buffer for s in p.states]
    for s in p.states:
        yield f"state {s.name}: bad buffer", _is_int(s.buffer) and 0 <= s.buffer < nb
        yield f"state {s.name}: buffer {s.buffer} is not a state buffer", p.buffers[s.buffer].role == "state"
        yield f"state {s.name}: unknown dtype {s.dtype!r}", s.dtype in dtypes.DTYPES
        yield f"state {s.name}: {len(s.shape)} dimensions, over {MAX_RANK}", len(s.shape) <= MAX_RANK
        yield f"state {s.name}: bad shape or buffer too small", all(_is_int(n) and n >= 0 for n in s.shape) and (
            max(1, prod(s.shape)) * dtypes.dtype(s.dtype).itemsize <= p.buffers[s.buffer].size)
    yield "a state buffer that is not exactly one state's", sorted(stated) == [
        i for i, b in enumerate(p.buffers) if b.role == "state"]
    yield "an output views a state buffer", not set(stated) & {t.buffer for t in p.outputs}
    for x in p.inputs:
        yield f"input {x.name}: {len(x.shape)} dimensions, over {MAX_RANK}", len(x.shape) <= MAX_RANK
        yield f"input {x.name}: bad buffer", _is_int(x.buffer) and 0 <= x.buffer < nb
        yield f"input {x.name}: buffer {x.buffer} is not an input buffer", p.buffers[x.buffer].role == "input"
        yield f"input {x.name}: unknown dtype {x.dtype!r}", x.dtype in dtypes.DTYPES
        yield f"input {x.name}: buffer too small", (max(1, symbolic.bound(prod(x.shape))) * dtypes.dtype(
            x.dtype).itemsize <= p.buffers[x.buffer].size and all(symbolic.bounds(n)[0] >= 0 for n in x.shape))
    yield "input tree does not match the inputs", len(p.inputs) == tree.count_leaves(p.input_tree)
    yield "input_tree is not a tuple of (positional arguments, keyword arguments)", (
        p.input_tree["type"] == "tuple" and [t["type"] for t in p.input_tree["items"]] == ["tuple", "dict"])
    sized = {s.args[0].name for x in p.inputs for s in x.shape if isinstance(s, symbolic.Expr) and s.op == "sym"}
    for name, s in p.symbols.items():
        yield f"symbol {name} ({s.about}) is not the size of any input dimension", name in sized
    yield "output tree does not match the outputs", len(p.outputs) == tree.count_leaves(p.output_tree)
    for k, t in enumerate(p.outputs):
        yield f"output {k}: {len(t.shape)} dimensions, over {MAX_RANK}", len(t.shape) <= MAX_RANK
        yield f"output {k}: bad buffer {t.buffer}", _is_int(t.buffer) and 0 <= t.buffer < nb
        yield f"output {k}: unknown dtype {t.dtype!r}", t.dtype in dtypes.DTYPES
        yield f"output {k}: view reaches past its buffer", _within(t, p.buffers[t.buffer].size)
    for k in p.kernels:
        yield from _kernel_problems(p, k)
    for i, d in enumerate(p.dispatches):
        yield from _dispatch_problems(p, i, d)
    for i, d in enumerate(p.dispatches):  # after the dispatches: it reads their followers' bindings
        yield from _result_problems(p, i, d)
    for k, t in enumerate(p.outputs):  # after the dispatches: it reads their bindings
        why = _disagreement(p, t)
        yield f"output {k}: {why}", why is None


def _kernel_problems(p: Program, k: Kernel):
    sources = len(p.sources)
    yield f"kernel {k.name}: bad source index", _is_int(k.source) and 0 <= k.source < sources
    yield f"kernel {k.name}: bad engine source", all(_is_int(s) and 0 <= s < sources for _, s in k.engine_sources)
    yield f"kernel {k.name}: unknown binding kind", all(b in BINDING_KINDS for b in k.bindings)
    yield f"kernel {k.name}: entry point or override name {k.entry[:40]!r} is not a WGSL identifier", all(
        IDENTIFIER.fullmatch(n) for n in (k.entry, *(name for name, _ in k.overrides)))
    yield f"kernel {k.name}: a uniform binding needs a uniform layout, and only one", (
        k.bindings.count("uniform") == (k.uniform is not None))
    if k.uniform is not None:
        yield f"kernel {k.name}: bad uniform layout", _is_int(k.uniform.size) and k.uniform.size % 16 == 0 and all(
            f.scalar in SCALARS and f.count >= 1 and f.offset >= 0 and f.offset + 4 * f.count <= k.uniform.size
            for f in k.uniform.fields)
    x, y, z = k.workgroup_size
    yield f"kernel {k.name}: bad workgroup size {list(k.workgroup_size)}", (
        all(_is_int(n) and n >= 1 for n in k.workgroup_size) and x * y * z <= MAX_INVOCATIONS)
    yield f"kernel {k.name}: bad workgroup memory {k.workgroup_bytes!r}", (
        _is_int(k.workgroup_bytes) and 0 <= k.workgroup_bytes <= MAX_WORKGROUP_BYTES)
    if k.fallback is not None:
        yield f"kernel {k.name}: bad fallback index", _is_int(k.fallback) and 0 <= k.fallback < len(p.kernels)
        alt = p.kernels[k.fallback]
        yield f"kernel {k.name}: a fallback on a kernel that does not require shader-f16", F16 in k.requires
        yield f"kernel {k.name}: its fallback {alt.name} requires features or differs in bindings or Params", (
            not alt.requires and alt.bindings == k.bindings and alt.uniform == k.uniform)


def _dispatch_problems(p: Program, i: int, d: Dispatch):
    yield f"dispatch {i}: bad kernel index", _is_int(d.kernel) and 0 <= d.kernel < len(p.kernels)
    k = p.kernels[d.kernel]
    yield f"dispatch {i}: binds {len(d.buffers)} of {k.storage_bindings} buffers", (
        len(d.buffers) == k.storage_bindings)
    yield f"dispatch {i}: bad buffer index", all(_is_int(b) and 0 <= b < len(p.buffers) for b in d.buffers)
    storage = [kind for kind in k.bindings if kind != "uniform"]
    yield f"dispatch {i}: writes an input or a constant", all(
        p.buffers[b].role in WRITABLE for b, kind in zip(d.buffers, storage, strict=True)
        if kind == "read_write")
    size = k.uniform.size if k.uniform else 0
    yield f"dispatch {i}: {len(d.uniform) // 4} uniform words for a {size}-byte Params", len(d.uniform) == size
    writes = written(p, d)
    yield f"dispatch {i}: binds a buffer it writes twice", all(d.buffers.count(b) == 1 for b in writes)
    # Every workgroup writes something: a grid of more workgroups than the words its dispatch writes only runs
    # longer than the data implies.
    words = max(1, sum(p.buffers[b].size for b in writes) // 4)
    yield f"dispatch {i}: bad grid", _grid_ok(d.grid)
    yield f"dispatch {i}: {prod(d.grid):,} workgroups for {words:,} words written", prod(d.grid) <= words
    yield from _sizing_problems(f"dispatch {i}", d.launch)
    for o in d.options:
        yield f"dispatch {i}: bad option", _is_int(o.kernel) and 0 <= o.kernel < len(p.kernels)
        yield f"dispatch {i}: bad grid {list(o.grid)} in an option", _grid_ok(o.grid)
        yield f"dispatch {i}: an option of {prod(o.grid):,} workgroups for {words:,} words written", (
            prod(o.grid) <= words)
        alt = p.kernels[o.kernel]
        yield f"dispatch {i}: option {alt.name} differs in bindings or Params", (
            alt.bindings == k.bindings and alt.uniform == k.uniform and len(o.uniform) == len(d.uniform))
        yield f"dispatch {i}: option {alt.name} is not sized as the dispatch is (a workgroup count where it has one)", (
            (o.count is None) == (d.count is None))
        yield from _sizing_problems(f"dispatch {i} option {alt.name}", o)
    if d.follows:
        lead = p.dispatches[i - d.follows] if 0 < d.follows <= i else None
        yield f"dispatch {i}: follows no group leader with as many options", (
            lead is not None and not lead.follows and len(lead.options) == len(d.options) > 0
            and all(p.dispatches[i - j].follows == d.follows - j for j in range(1, d.follows)))


def _sizing_problems(what: str, o: Option):
    """A dispatch's or an option's dynamic sizing: each patch a word of its Params whose values fit its
    type; its grid the workgroup count's largest value folded."""
    yield f"{what}: bad uniform patch", all(
        _is_int(q.offset) and 0 <= q.offset <= len(o.uniform) - 4 and q.offset % 4 == 0 and q.scalar in SCALARS
        and SCALAR_RANGE[q.scalar][0] <= symbolic.bounds(q.value)[0] <= symbolic.bound(q.value)
        <= SCALAR_RANGE[q.scalar][1] for q in o.patches)
    if o.count is not None:
        lo, hi = symbolic.bounds(o.count)
        yield f"{what}: its grid is not its workgroup count's largest value folded", (
            lo >= 0 and hi <= MAX_WORKGROUPS_PER_DIM**2 and fold_grid(max(1, hi)) == tuple(o.grid))


def group(dispatches: list[Dispatch], leader: int) -> list[int]:
    """The indices of the group `leader` leads: itself, then each dispatch after it whose `follows` is 1, 2, …"""
    members = [leader]
    while members[-1] + 1 < len(dispatches) and dispatches[members[-1] + 1].follows == len(members):
        members.append(members[-1] + 1)
    return members


def written(p: Program, d: Dispatch) -> set[int]:
    """The buffers dispatch `d` binds read_write."""
    kinds = [kind for kind in p.kernels[d.kernel].bindings if kind != "uniform"]
    return {b for b, kind in zip(d.buffers, kinds, strict=True) if kind == "read_write"}


def _result_problems(p: Program, i: int, d: Dispatch):
    if not d.result:
        return
    yield f"dispatch {i}: a result on a dispatch that leads no group", bool(d.options) and not d.follows
    yield f"dispatch {i}: tolerance {d.tolerance!r} is not a number in [0, 1]", (
        isinstance(d.tolerance, (int, float)) and not isinstance(d.tolerance, bool) and 0 <= d.tolerance <= 1)
    writes = set().union(*(written(p, p.dispatches[j]) for j in group(p.dispatches, i)))
    for t in d.result:
        yield f"dispatch {i}: a result view of buffer {t.buffer!r}, which its group does not write", (
            _is_int(t.buffer) and t.buffer in writes)
        yield f"dispatch {i}: a result view of unknown dtype {t.dtype!r}", t.dtype in (*dtypes.DTYPES, dtypes.F16.name)
        yield f"dispatch {i}: a result view of {len(t.shape)} dimensions, over {MAX_RANK}", len(t.shape) <= MAX_RANK
        yield f"dispatch {i}: a result view reaches past its buffer", _within(t, p.buffers[t.buffer].size)


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _grid_ok(grid) -> bool:
    return (len(grid) == 3 and all(_is_int(g) and 1 <= g <= MAX_WORKGROUPS_PER_DIM for g in grid)
            and prod(grid) <= MAX_WORKGROUPS)


def _disagreement(p: Program, t: Tensor) -> str | None:
    """How output `t` disagrees with what holds its buffer's data at the end of a call, or None: a scratch
    buffer must be written by some dispatch (unless the output has no element), an input buffer must hold an
    input and a constant buffer constants stored as the output's device form (int64 read as int32 is a view)."""
    role, form = p.buffers[t.buffer].role, dtypes.dtype(t.dtype).wgsl
    empty = any(symbolic.bound(n) == 0 for n in t.shape)
    if role == "scratch" and not empty and not any(
            b == t.buffer and kind == "read_write" for d in p.dispatches
            for b, kind in zip(d.buffers, [k for k in p.kernels[d.kernel].bindings if k != "uniform"], strict=True)):
        return f"buffer {t.buffer} is scratch that no dispatch writes"
    if role == "input" and not any(x.buffer == t.buffer and dtypes.dtype(x.dtype).wgsl == form for x in p.inputs):
        return f"buffer {t.buffer} holds no input stored as {form} ({t.dtype})"
    stored = dtypes.DEVICE_NAMES[p.constants[t.buffer].dtype] if role == "constant" else form
    if stored != form:
        return f"buffer {t.buffer} holds constants stored as {stored}, not {form} ({t.dtype})"
    return None


def _within(t: Tensor, size: int) -> bool:
    """Whether every element view `t` can reach, at any sizes in its symbols' ranges, lies inside `size` bytes."""
    lows = [symbolic.bounds(v)[0] for v in (t.offset, *t.strides, *t.shape)]
    end = symbolic.bound((t.offset + t.span()) * dtypes.dtype(t.dtype).itemsize)
    return min(lows, default=0) >= 0 and end <= size


def show_shape(shape: tuple) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"
