"""A Session runs a Program: what `webgpu_torch.compile` and `webgpu_torch.load` return.

It takes a call as the model took it (positional and keyword arguments, nested the way the model was
exported), checks every tensor's dtype and shape and every non-tensor argument against the program, binds the
dynamic dimensions, and hands the flat device-form inputs to its Executor (built on the first call, so
compiling never needs a GPU). Outputs come back in the model's structure: torch tensors when any input was
one, else numpy arrays; with `on_device`, DeviceTensors that stay in GPU memory.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from ..format import artifact, dtypes, symbolic, tree
from ..format.errors import InputError, InputTypeError
from ..format.program import Input, Program, show_shape
from . import fit, tuning
from .device_tensor import DeviceTensor
from .engine import get_engine
from .executor import Call, Executor


class Session:
    def __init__(self, program: Program, engine: str | None = None, timeout: float | None = None):
        """`engine`: "dawn" | "wgpu" | None, the default engine (runtime/engine.py); `timeout`: the seconds a
        call may take (None: WEBGPU_TORCH_TIMEOUT, else 60), its first more, for compiling its shaders
        (executor.first_call_seconds)."""
        self.program = program.checked()
        self.engine = engine
        self.timeout = timeout
        self._executor: Executor | None = None
        self._shares: Session | None = None  # the session whose states and constants this one uses (share)

    @staticmethod
    def load(path: str | Path, engine: str | None = None, timeout: float | None = None) -> Session:
        return Session(artifact.load(path), engine, timeout)

    def save(self, path: str | Path, beside: str | Path | None = None) -> None:
        """Write the program to `path`; with `beside`, a program's file in the same folder, the constants that
        one holds too are not written again but referred to (a prefill beside its decoder step)."""
        artifact.save(self.program, path, beside)

    def executor(self, engine: str | None = None) -> Executor:
        """Pipelines, bind groups and buffers on the device, built on first use (again for another engine: naming
        the engine the executor already runs on returns that executor, its buffers and state)."""
        if engine is not None and engine != self.engine:
            self.engine = engine
            if self._executor is not None and self._executor.engine.name != engine:
                self._executor = None
        if self._executor is None:
            other = self._shares.executor(self.engine) if self._shares else None
            self._executor = open_executor(self.program, self.engine, other, self.timeout)
        return self._executor

    def share(self, other: Session) -> None:
        """Make the states this program and `other` both have (by name) one set of GPU buffers: what one's calls
        write, the other's read (a prefill writes the KV cache a decoder step reads). Each such state must have
        the same shape and dtype in both. The constants both hold (by name, with the same layout and bytes: a
        decoder's weights) are `other`'s buffers too, uploaded once. Call before this session's first call."""
        theirs = {s.name: s for s in other.program.states}
        for s in self.program.states:
            t = theirs.get(s.name)
            if t is not None and (t.shape, t.dtype) != (s.shape, s.dtype):
                raise InputError(f"state {s.name!r} is {s.dtype}{list(s.shape)} here and {t.dtype}{list(t.shape)} "
                                 "in the program sharing it")
        self._shares, self._executor = other, None

    def __call__(self, *args, **kwargs):
        """Run on the GPU; inputs as torch tensors, numpy arrays or DeviceTensors."""
        return self.run(args, kwargs)

    def on_device(self, *args, **kwargs):
        """Like a call, but the outputs stay in GPU memory as DeviceTensors (nothing is read back); pass them
        to later calls of any program on the same device, or read one with `.numpy()`."""
        return self.run(args, kwargs, keep_on_device=range(len(self.program.outputs)))

    def run(self, args: tuple = (), kwargs: dict | None = None, keep_on_device: Iterable[int] = ()):
        """A call with its arguments spelled out: the outputs whose indices (in the flat order of the output
        tree's leaves) are in `keep_on_device` stay on the GPU as DeviceTensors, the others are read back —
        all in one submit (a decoder step keeps its caches and reads its next token). Read outputs are torch
        tensors when any input was one (or, for a program without inputs, when torch is loaded), else numpy
        arrays."""
        return self.start(args, kwargs, keep_on_device).result()

    def start(self, args: tuple = (), kwargs: dict | None = None, keep_on_device: Iterable[int] = (),
              read: Iterable[int] | None = None) -> Pending:
        """Submit a call and return before it finishes: `.kept` holds the outputs in `keep_on_device` as
        DeviceTensors at once, `.result()` waits for those in `read` (by default the others; an output may be
        both kept and read) and returns the output structure as `run` does. Calls may be in flight together:
        a decoder passes this step's token, kept on the device, to the next step before reading it."""
        leaves = tree.flatten(self.program.input_tree, (tuple(args), dict(kwargs or {})))
        # torch tensors out when torch tensors came in (or, with no tensor in, when torch is loaded at all)
        as_torch = any(_is_torch(x) for x in leaves) if leaves else "torch" in sys.modules
        values = [check_input(spec, x) for spec, x in zip(self.program.inputs, leaves, strict=True)]
        call = self.executor().start(values, bind(self.program, values), frozenset(keep_on_device),
                                     None if read is None else frozenset(read))
        return Pending(self.program, call, as_torch)

    # -- state: tensors the program keeps between calls (a KV cache), zero at load --------------------------
    @property
    def states(self) -> list[str]:
        return [s.name for s in self.program.states]

    def read_state(self, name: str) -> np.ndarray:
        """State `name` as the calls so far left it."""
        return self.executor().read_state(name)

    def reset_state(self, *names: str) -> None:
        """Zero the named states (every state when none is named), as when the program was loaded."""
        self.executor().reset_state(names or None)

    def summary(self) -> str:
        return self.program.summary()

    def __repr__(self) -> str:
        return f"Session({self.program.summary()})"


def open_executor(program: Program, engine: str | None = None, share: Executor | None = None,
                  timeout: float | None = None) -> Executor:
    """`program` built on an engine's device, as js/src/session.js's `load` does: fitted to the device's
    features (runtime/fit.py), each group of options resolved to this device's fastest
    (runtime/tuning.py, probing over the constants as uploaded), then an Executor of the resolved program over
    those buffers (with `share` and `timeout`, Executor's)."""
    device = get_engine(engine)
    with device.lock:
        fitted = fit.for_device(program, device.device.features)
        executor = Executor.allocated(fitted, device, share, timeout)
        return executor.build(tuning.resolve(fitted, device, executor.constant_buffers()))


class Pending:
    """A call in flight (Session.start)."""

    def __init__(self, program: Program, call: Call, as_torch: bool):
        self.program, self.call, self.as_torch = program, call, as_torch

    @property
    def kept(self) -> dict[int, DeviceTensor]:
        """The outputs kept on the device, by flat output index."""
        return self.call.kept

    @property
    def host(self) -> dict[str, float]:
        """Host seconds: encode and submit, then once read map and copy (Executor.start)."""
        return self.call.host

    def result(self):
        """Wait for the call's read outputs; the model's output structure (kept outputs as DeviceTensors)."""
        outs = [o if o is None or isinstance(o, DeviceTensor) else _to_host(o, t.dtype, self.as_torch)
                for o, t in zip(self.call.result(), self.program.outputs, strict=True)]
        return tree.unflatten(self.program.output_tree, outs)

    def discard(self) -> None:
        """Never read this call's outputs (its work still runs)."""
        self.call.discard()


def bind(program: Program, values: list) -> dict[str, int]:
    """The dynamic dimensions' values for these inputs (checked against every input's shape and each
    dimension's range); {} for a program of static shapes."""
    env: dict[str, int] = {}
    for spec, v in zip(program.inputs, values, strict=True):
        for size, dim in zip(spec.shape, v.shape, strict=True):
            if isinstance(size, symbolic.Expr) and size.op == "sym":
                env.setdefault(size.args[0].name, dim)
    for name, s in program.symbols.items():
        if name not in env:
            raise InputError(f"dynamic dimension {name} ({s.about}) is not the size of any input dimension")
        if not s.lo <= env[name] <= s.hi:
            raise InputError(f"{s.about} (dynamic dimension {name}) must be in [{s.lo}, {s.hi}], got {env[name]}")
    for spec, v in zip(program.inputs, values, strict=True):
        want = tuple(symbolic.evaluate(s, env) for s in spec.shape)
        if tuple(v.shape) != want:
            raise InputError(f"input {spec.name!r}: expected shape {show_shape(spec.shape)} = {list(want)}, "
                             f"got {list(v.shape)}")
    return env


def check_input(spec: Input, value: Any):
    """`value` in the device form of `spec` (a DeviceTensor as it is); dtype and rank are checked here, sizes
    in bind(), which knows the dynamic dimensions."""
    if isinstance(value, DeviceTensor):
        if len(value.shape) != len(spec.shape) or value.dtype != spec.dtype:
            raise InputError(f"input {spec.name!r}: expected {spec.dtype}{show_shape(spec.shape)}, got {value}")
        return value
    array = _torch_to_numpy(spec, value) if _is_torch(value) else np.asarray(value)
    static = not any(isinstance(s, symbolic.Expr) for s in spec.shape)
    if array.ndim != len(spec.shape) or (static and tuple(array.shape) != spec.shape):
        raise InputError(f"input {spec.name!r}: expected shape {show_shape(spec.shape)}, got {list(array.shape)}")
    want = dtypes.dtype(spec.dtype).host
    if not (array.dtype == want or (array.dtype.kind in "iu" and want.kind in "iu")):
        raise InputTypeError(f"input {spec.name!r}: expected dtype {spec.dtype}, got {array.dtype}")
    return dtypes.to_device(array, spec.dtype, f"input {spec.name!r}")


def _torch_to_numpy(spec: Input, value) -> np.ndarray:
    """A dense torch tensor's values (a bfloat16 one as its bits, uint16: its numpy host form); meta, sparse
    and dtypes WebGPU lacks refused in one line."""
    if value.device.type == "meta":
        raise InputTypeError(f"input {spec.name!r}: a tensor on the meta device has no values to run on")
    if str(value.layout) != "torch.strided":
        raise InputTypeError(f"input {spec.name!r}: a {value.layout} tensor; pass a dense one (.to_dense())")
    name = str(value.dtype).removeprefix("torch.")
    if name not in dtypes.DTYPES or (name == "bfloat16") != (spec.dtype == "bfloat16"):  # bits, past this point
        raise InputTypeError(f"input {spec.name!r}: expected dtype {spec.dtype}, got {name}")
    value = value.detach().cpu()
    if name == "bfloat16":
        import torch  # the caller passed a torch tensor, so torch is already imported

        return value.contiguous().view(torch.int16).numpy().view(np.uint16)
    return value.numpy()


def _to_host(array: np.ndarray, dtype: str, as_torch: bool):
    array = dtypes.from_device(array, dtype)
    if not as_torch:
        return array
    import torch  # the caller passed torch tensors, so torch is already imported

    array = np.asarray(array, order="C")
    if dtype == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)




def _is_torch(x: Any) -> bool:
    return type(x).__module__.startswith("torch") and hasattr(x, "detach")
