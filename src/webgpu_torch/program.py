"""The compiled program: plain data between the compiler and the runtime.

Nothing here imports torch or a WebGPU engine. A Program lists its WGSL sources, the pipelines made from them,
the device buffers (inputs, constants, planned scratch), and the dispatches of one call in order. Tensors are
strided views of buffers, so views cost no dispatch and outputs that are views are read back as such.
Calling a Program hands it to the runtime, which builds everything once and then runs it.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field, replace
from math import prod
from typing import Any

import numpy as np

from . import dtypes, symbolic, tree
from .errors import InputError, InputTypeError

FORMAT_VERSION = 1


MAX_WORKGROUPS_PER_DIM = 65535  # WebGPU's guaranteed maxComputeWorkgroupsPerDimension


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
        return all(s == c for n, s, c in zip(self.shape, self.strides, contiguous_strides(self.shape),
                                              strict=True) if n != 1)

    def span(self) -> int:
        """Elements from `offset` to one past the furthest element this view reaches."""
        if self.numel == 0:
            return 0
        return 1 + sum((n - 1) * s for n, s in zip(self.shape, self.strides, strict=True))

    def to_json(self) -> dict:
        j = symbolic.to_json
        return {"buffer": self.buffer, "shape": [j(s) for s in self.shape], "strides": [j(s) for s in self.strides],
                "offset": j(self.offset), "dtype": self.dtype}

    @staticmethod
    def from_json(d: dict, symbols: dict) -> Tensor:
        def e(v):
            return symbolic.from_json(v, symbols)

        return Tensor(d["buffer"], tuple(map(e, d["shape"])), tuple(map(e, d["strides"])), e(d["offset"]),
                      d["dtype"])

    def at(self, env: dict[str, int]) -> Tensor:
        """This view with its dynamic sizes evaluated."""
        def e(v):
            return symbolic.evaluate(v, env)

        return Tensor(self.buffer, tuple(map(e, self.shape)), tuple(map(e, self.strides)), e(self.offset),
                      self.dtype)


@dataclass(frozen=True)
class Buffer:
    size: int  # bytes
    role: str  # "input" | "constant" | "scratch"
    name: str = ""  # the input's or constant's name, for messages


@dataclass(frozen=True)
class Input:
    name: str
    shape: tuple  # ints, and Exprs for dynamic dimensions
    dtype: str
    buffer: int


@dataclass(frozen=True)
class Kernel:
    """One compute pipeline: an entry point of a (specialised) source, with its override constants.

    `engine_sources` names a different source for some engines: the same computation in a style that
    engine's shader compiler handles better, with identical bindings and Params (Program.check verifies).
    `requires` names the optional WebGPU features its source uses (`subgroups`): the compiler offers such a
    kernel only as an option beside one that needs none, and tuning takes it where the device has the
    features and it runs faster (runtime/tuning.py)."""

    name: str  # readable variant name, e.g. "gemm[128x128]"; shown in profiles
    source: int  # index into Program.sources
    entry: str
    overrides: tuple[tuple[str, float], ...] = ()
    engine_sources: tuple[tuple[str, int], ...] = ()  # (engine name, source index)
    requires: tuple[str, ...] = ()  # optional WebGPU features its source uses

    def source_for(self, engine: str) -> int:
        return dict(self.engine_sources).get(engine, self.source)


@dataclass(frozen=True)
class Option:
    """Another kernel that computes a dispatch's result from the same buffers (a different GEMM tile
    configuration, or another split of K): the runtime may time the options on its device and run the
    fastest (runtime/tuning.py)."""

    kernel: int
    uniform: bytes
    grid: tuple[int, int, int]


@dataclass(frozen=True)
class Dispatch:
    kernel: int  # index into Program.kernels
    buffers: tuple[int, ...]  # storage bindings, in binding order; the uniform (if any) binds after them
    uniform: bytes  # the packed Params struct, b"" when the kernel has none
    grid: tuple[int, int, int]  # workgroup counts, each within WebGPU's 65,535 per dimension
    node: str  # the graph node this dispatch implements
    # With dynamic sizes: the uniform words to fill in per call, and the workgroup count to fold per call
    # (`grid` is then the grid for the largest sizes).
    patches: tuple = ()  # wgsl.Patch
    count: Any = None  # Expr | None
    options: tuple[Option, ...] = ()  # equivalent alternatives (static dispatches only); this one is the default
    # > 0: the dispatch `follows` places earlier leads a group chosen as a whole (a split GEMM and the
    # reduction of its slices): this one has as many options and runs option i when the leader does.
    follows: int = 0

    def choose(self, option: Option) -> Dispatch:
        """This dispatch running `option` instead (and offering no options)."""
        return Dispatch(option.kernel, self.buffers, option.uniform, option.grid, self.node)


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
    _executor: Any = field(default=None, repr=False, compare=False)
    _restore_outputs: Any = field(default=None, repr=False, compare=False)

    # -- running -------------------------------------------------------------------------------------------
    def __call__(self, *args, **kwargs):
        """Run on the GPU: inputs as torch tensors, numpy arrays or DeviceTensors; outputs in the structure the
        model returns, as torch tensors when any input was one, else numpy arrays."""
        leaves = tree.flatten(self.input_tree, (args, kwargs))
        as_torch = any(_is_torch(x) for x in leaves)
        values = [self._check_input(spec, x) for spec, x in zip(self.inputs, leaves, strict=True)]
        env = self.bind(values)
        outs = [dtypes.from_device(a, t.dtype) for a, t in zip(self.executor().run(values, env), self.outputs,
                                                               strict=True)]
        if as_torch:
            import torch  # the caller passed torch tensors, so torch is already imported

            outs = [torch.from_numpy(np.asarray(o, order="C")) for o in outs]
        return self._structure(outs)

    def on_device(self, *args, **kwargs):
        """Like calling the program, but the outputs stay in GPU memory as DeviceTensors (nothing is read
        back); pass them to later calls as inputs, or read one with `.numpy()`."""
        leaves = tree.flatten(self.input_tree, (args, kwargs))
        values = [self._check_input(spec, x) for spec, x in zip(self.inputs, leaves, strict=True)]
        return self._structure(self.executor().run(values, self.bind(values), keep_on_device=True))

    def _structure(self, leaves: list):
        if self._restore_outputs is not None:
            return self._restore_outputs(leaves)
        return tree.unflatten(self.output_tree, leaves)

    def executor(self, engine: str | None = None):
        """The runtime instance (pipelines, bind groups, buffers), built on first use."""
        if self._executor is None or (engine and self._executor.engine.name != engine):
            from .runtime.executor import Executor

            self._executor = Executor(self, engine)
        return self._executor

    def bind(self, values: list) -> dict[str, int]:
        """The dynamic dimensions' values for these inputs (checked against every input's shape and each
        dimension's range); {} for a program of static shapes."""
        if not self.symbols:
            return {}
        env: dict[str, int] = {}
        for spec, v in zip(self.inputs, values, strict=True):
            for size, dim in zip(spec.shape, v.shape, strict=True):
                if isinstance(size, symbolic.Expr) and size.op == "sym":
                    env.setdefault(size.args[0].name, dim)
        for name, s in self.symbols.items():
            if name not in env:
                raise InputError(f"dynamic dimension {name} ({s.about}) is not the size of any input dimension")
            if not s.lo <= env[name] <= s.hi:
                raise InputError(f"{s.about} (dynamic dimension {name}) must be in [{s.lo}, {s.hi}], got {env[name]}")
        for spec, v in zip(self.inputs, values, strict=True):
            want = tuple(symbolic.evaluate(s, env) for s in spec.shape)
            if tuple(v.shape) != want:
                raise InputError(f"input {spec.name!r}: expected shape {_show(spec.shape)} = {list(want)}, "
                                 f"got {list(v.shape)}")
        return env

    def _check_input(self, spec: Input, value: Any):
        """Dtype and rank here; sizes in bind(), which knows the dynamic dimensions."""
        if type(value).__name__ == "DeviceTensor":
            if len(value.shape) != len(spec.shape) or value.dtype != spec.dtype:
                raise InputError(f"input {spec.name!r}: expected {spec.dtype}{_show(spec.shape)}, got {value}")
            return value
        array = value.detach().cpu().numpy() if _is_torch(value) else np.asarray(value)
        static = not any(isinstance(s, symbolic.Expr) for s in spec.shape)
        if array.ndim != len(spec.shape) or (static and tuple(array.shape) != spec.shape):
            raise InputError(f"input {spec.name!r}: expected shape {_show(spec.shape)}, got {list(array.shape)}")
        want = dtypes.dtype(spec.dtype).host
        same_kind = array.dtype == want or (array.dtype.kind in "iu" and want.kind in "iu")
        if not same_kind:
            raise InputTypeError(f"input {spec.name!r}: expected dtype {spec.dtype}, got {array.dtype}")
        return dtypes.to_device(array, spec.dtype, f"input {spec.name!r}")

    # -- adapting to the device -----------------------------------------------------------------------------
    @property
    def uses_f16(self) -> bool:
        """Whether some kernel needs the `shader-f16` feature (constants stored in float16: weights="float16")."""
        from . import wgsl

        return any(wgsl.uses_f16(s) for s in self.sources)

    def without_f16(self) -> Program:
        """This program for an adapter without `shader-f16`: float16 constants widened to float32 (exact) and
        every source in its float32 form (wgsl.without_f16); strides and offsets count elements, so views,
        dispatches and Params are unchanged. It computes what the f16 kernels compute, which widen each value
        as they read it. Kernel names say so (",f16" becomes ",f16 widened"), for profiles."""
        from . import wgsl

        half = {i for i, a in self.constants.items() if a.dtype == np.float16}
        constants = {i: a.astype(np.float32) if i in half else a for i, a in self.constants.items()}
        buffers = [replace(b, size=max(4, constants[i].nbytes)) if i in half else b
                   for i, b in enumerate(self.buffers)]
        kernels = [replace(k, name=k.name.replace(",f16", ",f16 widened")) for k in self.kernels]
        return replace(self, sources=[wgsl.without_f16(s) for s in self.sources], kernels=kernels, buffers=buffers,
                       constants=constants, _executor=None)

    # -- inspection ----------------------------------------------------------------------------------------
    def check(self) -> None:
        """Raise ValueError unless every index, size and binding is consistent, so that a damaged or
        hand-edited program fails here with a message rather than inside the WebGPU engine."""
        from . import wgsl

        def need(ok: bool, msg: str) -> None:
            if not ok:
                raise ValueError(msg)

        nb = len(self.buffers)
        for i, b in enumerate(self.buffers):
            need(isinstance(b.size, int) and b.size > 0, f"buffer {i}: bad size {b.size!r}")
            need(b.role in ("input", "constant", "scratch"), f"buffer {i}: unknown role {b.role!r}")
            if b.role == "constant":
                need(i in self.constants, f"buffer {i} ({b.name}): constant data is missing")
                need(self.constants[i].nbytes <= b.size, f"buffer {i} ({b.name}): constant larger than buffer")
        need(set(self.constants) <= {i for i, b in enumerate(self.buffers) if b.role == "constant"},
             "constant data for a buffer that is not a constant")
        for x in self.inputs:
            need(0 <= x.buffer < nb and self.buffers[x.buffer].role == "input", f"input {x.name}: bad buffer")
            need(max(1, symbolic.bound(prod(x.shape))) * dtypes.dtype(x.dtype).itemsize <= self.buffers[x.buffer].size,
                 f"input {x.name}: buffer too small")
        need(len(self.inputs) == tree.count_leaves(self.input_tree), "input tree does not match the inputs")
        need(len(self.outputs) == tree.count_leaves(self.output_tree), "output tree does not match the outputs")
        for k, t in enumerate(self.outputs):
            need(0 <= t.buffer < nb, f"output {k}: bad buffer {t.buffer}")
            end = symbolic.bound((t.offset + t.span()) * dtypes.dtype(t.dtype).itemsize)
            lows = [symbolic.bounds(v)[0] for v in (t.offset, *t.strides)]
            need(min(lows) >= 0 and end <= self.buffers[t.buffer].size, f"output {k}: view reaches past its buffer")
        for k in self.kernels:
            for _, src in ((None, k.source), *k.engine_sources):
                need(isinstance(src, int) and 0 <= src < len(self.sources), f"kernel {k.name}: bad source index")
                need(f"fn {k.entry}(" in self.sources[src], f"kernel {k.name}: no entry point {k.entry}")
                need(_interface(self.sources[src]) == _interface(self.sources[k.source]),
                     f"kernel {k.name}: its engine sources differ in bindings or Params")
        for i, d in enumerate(self.dispatches):
            need(0 <= d.kernel < len(self.kernels), f"dispatch {i}: bad kernel index")
            source = self.sources[self.kernels[d.kernel].source]
            binds = wgsl.bindings(source)
            storage = [b for b in binds if b.kind != "uniform"]
            need(len(storage) == len(d.buffers), f"dispatch {i}: binds {len(d.buffers)} of {len(storage)}")
            need(all(0 <= b < nb for b in d.buffers), f"dispatch {i}: bad buffer index")
            if len(storage) < len(binds):
                need(len(d.uniform) >= wgsl.UniformLayout.parse(source).size, f"dispatch {i}: short uniform")
            need(len(d.grid) == 3 and all(1 <= g <= 65535 for g in d.grid), f"dispatch {i}: bad grid")
            need(all(0 <= p.offset <= len(d.uniform) - 4 and p.scalar in ("u32", "i32", "f32") for p in d.patches),
                 f"dispatch {i}: bad uniform patch")
            if d.count is not None:
                need(symbolic.bounds(d.count)[0] >= 0, f"dispatch {i}: negative workgroup count")
            need(not d.options or (d.count is None and not d.patches), f"dispatch {i}: a dynamic one has options")
            for o in d.options:
                need(0 <= o.kernel < len(self.kernels) and len(o.grid) == 3 and all(1 <= g <= 65535 for g in o.grid),
                     f"dispatch {i}: bad option")
                need(_interface(self.sources[self.kernels[o.kernel].source]) == _interface(source),
                     f"dispatch {i}: option {self.kernels[o.kernel].name} differs in bindings or Params")
            if d.follows:
                lead = self.dispatches[i - d.follows] if d.follows <= i else None
                need(lead is not None and not lead.follows and len(lead.options) == len(d.options) > 0,
                     f"dispatch {i}: follows no group leader with as many options")

    def summary(self) -> str:
        """A readable listing: inputs, outputs, buffers by role, and every dispatch."""
        by_role: dict[str, list[int]] = {}
        for b in self.buffers:
            by_role.setdefault(b.role, []).append(b.size)
        lines = [f"Program: {len(self.dispatches)} dispatches, {len(self.kernels)} pipelines"]
        lines += [f"  dynamic {s.name} in [{s.lo}, {s.hi}]: {s.about}" for s in self.symbols.values()]
        lines += [f"  input  {i.name}: {i.dtype}{_show(i.shape)}" for i in self.inputs]
        lines += [f"  output {k}: {t.dtype}{_show(t.shape)}" for k, t in enumerate(self.outputs)]
        for role, sizes in sorted(by_role.items()):
            lines.append(f"  {role:8s} {len(sizes)} buffers, {sum(sizes) / 2**20:.2f} MiB")
        for i, d in enumerate(self.dispatches):
            grid = f"workgroups={d.count}" if d.count is not None else f"grid={list(d.grid)}"
            lines.append(f"  [{i:4d}] {self.kernels[d.kernel].name:28s} {grid} buffers={list(d.buffers)}  <- {d.node}")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return self.summary()

    # -- persistence ---------------------------------------------------------------------------------------
    def save(self, path: str) -> None:
        from . import artifact

        artifact.save(self, path)

    def to_json(self) -> dict:
        """Everything but the constants' bytes (the artifact stores those beside this header)."""
        return {
            "version": FORMAT_VERSION,
            "meta": self.meta,
            "symbols": {s.name: {"lo": s.lo, "hi": s.hi, "hint": s.hint, "about": s.about}
                        for s in self.symbols.values()},
            "sources": self.sources,
            "kernels": [{"name": k.name, "source": k.source, "entry": k.entry, "overrides": dict(k.overrides),
                         "engine_sources": dict(k.engine_sources), **({"requires": list(k.requires)}
                                                                       if k.requires else {})}
                        for k in self.kernels],
            "buffers": [{"size": b.size, "role": b.role, "name": b.name} for b in self.buffers],
            "inputs": [{"name": i.name, "shape": [symbolic.to_json(s) for s in i.shape], "dtype": i.dtype,
                        "buffer": i.buffer} for i in self.inputs],
            "outputs": [t.to_json() for t in self.outputs],
            "input_tree": self.input_tree,
            "output_tree": self.output_tree,
            "dispatches": [{"kernel": d.kernel, "buffers": list(d.buffers), "uniform": _words(d.uniform),
                            "grid": list(d.grid), "node": d.node,
                            **({"patches": [[p.offset, p.scalar, symbolic.to_json(p.value)] for p in d.patches]}
                               if d.patches else {}),
                            **({"count": symbolic.to_json(d.count)} if d.count is not None else {}),
                            **({"options": [{"kernel": o.kernel, "uniform": _words(o.uniform), "grid": list(o.grid)}
                                            for o in d.options]} if d.options else {}),
                            **({"follows": d.follows} if d.follows else {})}
                           for d in self.dispatches],
        }

    @staticmethod
    def from_json(d: dict, constants: dict[int, np.ndarray]) -> Program:
        from .wgsl import Patch

        symbols = {name: symbolic.Symbol(name, int(s["lo"]), int(s["hi"]), int(s["hint"]), s.get("about", ""))
                   for name, s in d.get("symbols", {}).items()}

        def e(v):
            return symbolic.from_json(v, symbols)

        return Program(
            sources=list(d["sources"]),
            kernels=[Kernel(k["name"], k["source"], k["entry"], tuple(sorted(k["overrides"].items())),
                            tuple(sorted(k.get("engine_sources", {}).items())), tuple(k.get("requires", ())))
                     for k in d["kernels"]],
            buffers=[Buffer(b["size"], b["role"], b["name"]) for b in d["buffers"]],
            constants=constants,
            inputs=[Input(i["name"], tuple(map(e, i["shape"])), i["dtype"], i["buffer"]) for i in d["inputs"]],
            outputs=[Tensor.from_json(t, symbols) for t in d["outputs"]],
            input_tree=d["input_tree"],
            output_tree=d["output_tree"],
            dispatches=[Dispatch(x["kernel"], tuple(x["buffers"]), _bytes(x["uniform"]), tuple(x["grid"]), x["node"],
                                 tuple(Patch(int(o), t, e(v)) for o, t, v in x.get("patches", [])),
                                 e(x["count"]) if "count" in x else None,
                                 tuple(Option(o["kernel"], _bytes(o["uniform"]), tuple(o["grid"]))
                                       for o in x.get("options", ())), int(x.get("follows", 0)))
                        for x in d["dispatches"]],
            meta=d.get("meta", {}),
            symbols=symbols,
        )


def _interface(source: str) -> tuple:
    from . import wgsl

    binds = wgsl.bindings(source)
    return binds, wgsl.UniformLayout.parse(source) if any(b.kind == "uniform" for b in binds) else None


def _show(shape: tuple) -> str:
    return "[" + ", ".join(map(str, shape)) + "]"


def _words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


def _bytes(words: list[int]) -> bytes:
    return struct.pack(f"<{len(words)}I", *words)


def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")
