"""Running a Program: everything is built once here, so a call only writes inputs, encodes and reads back.

At construction (the program already fitted to the device's features and tuned: runtime/session.py's
`open_executor`, as js/src/session.js's `load`): checks against the device's limits, buffers (constants uploaded
a chunk at a time), one shader module per source, explicit bind-group and pipeline layouts from each kernel's
declared bindings, one pipeline per kernel a dispatch runs, all dispatch uniforms in one uniform buffer (written
once), one bind group per dispatch, and one mappable staging buffer for all outputs. Any failure is a one-line
DeviceError.
A call: write the inputs, encode every dispatch into one compute pass of one command encoder, copy the
outputs' byte ranges into the staging buffer, submit once, map once — all under the device's lock.

Dynamic sizes: buffers are sized for the largest values. When a call's sizes differ from the last call's,
prepare() fills the uniform words that depend on them (one write per such dispatch), folds those dispatches'
grids and evaluates the output views; calls at the same sizes repeat nothing.
"""

from __future__ import annotations

import contextlib
import struct
import time
import weakref
from collections.abc import Collection
from dataclasses import dataclass

import numpy as np

from ..format import compile_cost, dtypes, symbolic
from ..format.errors import DeviceError, DeviceIndexError, InputError
from ..format.limits import LIMITS
from ..format.program import SCALAR_FORMAT, Program, Tensor, contiguous_strides, fold_grid
from . import memory, transfer
from .device_tensor import DeviceTensor, read_view
from .engine import Engine, default_timeout
from .fit import allocated, limit_problem

_BUFFER_TYPE = {"read": "read-only-storage", "read_write": "storage", "uniform": "uniform"}
# Constants are written UPLOAD_CHUNK bytes at a time, and the queue drained after every UPLOAD_WINDOW bytes
# (the engine keeps each write's staging copy until the queue has run it): a load holds that much host memory
# beyond the file's map, whatever the program's size (js/src/upload.js: the same).
UPLOAD_CHUNK = 1 << 22
UPLOAD_WINDOW = 16 * UPLOAD_CHUNK


def _interface(k) -> tuple[tuple[str, ...], int]:
    """What a kernel's bind group layout depends on: its binding kinds and its Params size."""
    return k.bindings, k.uniform.size if k.uniform is not None else 0


def _round_up(n: int, k: int) -> int:
    return -(-n // k) * k


def _shared(program: Program, other: Executor | None) -> dict:
    """The buffers of `other` (an executor on the same engine) that `program` uses instead of its own, by buffer
    index (docs/artifact.md, State and Shared constants): its states of the same names (each must need a buffer
    of the same size), and its constants of the same names whose layout and bytes are the same."""
    if other is None:
        return {}
    theirs = {b.name: j for j, b in enumerate(other.program.buffers) if b.role == "constant"}
    out = {}
    for i, b in enumerate(program.buffers):
        j = theirs.get(b.name) if b.role == "constant" else None
        if j is not None and _same(program, i, other.program, j):
            out[i] = other.buffers[j]
    states = {s.name: s.buffer for s in other.program.states}
    for s in program.states:
        if s.name in states:
            need, have = allocated(program.buffers[s.buffer].size), other.buffers[states[s.name]].size
            if have != need:
                raise InputError(f"state {s.name!r} needs a {need}-byte buffer; the one shared is {have} bytes")
            out[s.buffer] = other.buffers[states[s.name]]
    return out


def _same(a: Program, i: int, b: Program, j: int) -> bool:
    """Whether constant buffer `i` of `a` holds what constant buffer `j` of `b` does, in the same layout."""
    x, y = a.constants[i], b.constants[j]
    return (a.buffers[i].size == b.buffers[j].size and a.packings.get(i) == b.packings.get(j)
            and (x.dtype, x.shape) == (y.dtype, y.shape)
            and (x is y or np.array_equal(x.reshape(-1).view(np.uint8), y.reshape(-1).view(np.uint8))))


COMPILE_SECONDS = LIMITS["call_timeout"]["first_call_seconds_per_token"]


def first_call_seconds(program: Program, engine: str, timeout: float) -> float:
    """How long a program's first reading call may take: `timeout`, and COMPILE_SECONDS for each token of what
    the sources its dispatches run on `engine` cost to compile (compile_cost.cost): lavapipe compiles a kernel
    at its first dispatch (1.3 s for a source costing 103,610 tokens)."""
    sources = sorted({program.kernels[d.kernel].source_for(engine) for d in program.dispatches})
    return timeout + COMPILE_SECONDS * sum(compile_cost.cost(program.sources[i]) for i in sources)


def readback(t: Tensor, env: dict[str, int]) -> tuple[Tensor, int, int]:
    """Output view `t` at sizes `env`, and the byte range of its buffer a call copies out (or into a
    DeviceTensor of its own): from its first element's offset rounded down to 4 bytes, up to one past its
    furthest element rounded up to 4 (docs/artifact.md, "Reading outputs")."""
    view = t.at(env)
    item = dtypes.dtype(view.dtype).itemsize
    start = view.offset * item // 4 * 4
    end = _round_up((view.offset + view.span()) * item, 4)
    return view, start, end - start


@dataclass(frozen=True)
class _Readback:
    tensor: Tensor
    src_offset: int  # bytes, 4-aligned, in the tensor's buffer
    size: int  # bytes, 4-aligned
    dst_offset: int  # bytes, in the staging buffer


class Executor:
    def __init__(self, program: Program, engine: Engine, share: Executor | None = None,
                 timeout: float | None = None, borrowed: dict[int, object] | None = None):
        """Build `program`, whose dispatches run as written (fitted to `engine`'s features and tuned). `share`:
        another executor on the same engine whose states of the same names, and whose constants this program
        holds too, this program uses instead of buffers of its own (_shared); `borrowed`: buffers by index, their
        contents written, that it uses too (a tuning probe's constants, its program's). A call may take
        `timeout` seconds (default_timeout() when None), its first reading call more (first_call_seconds)."""
        self._allocate(program, engine, share, timeout, borrowed or {})
        self.build(program)

    @classmethod
    def allocated(cls, program: Program, engine: Engine, share: Executor | None = None,
                  timeout: float | None = None) -> Executor:
        """The first half of building (js/src/executor.js's `allocate`): `program` checked against the device's
        limits, its buffers allocated and its constants uploaded, for tuning to probe over (`constant_buffers`)
        before `build` finishes it."""
        executor = cls.__new__(cls)
        executor._allocate(program, engine, share, timeout, {})
        return executor

    def _allocate(self, program: Program, engine: Engine, share: Executor | None, timeout: float | None,
                  borrowed: dict[int, object]) -> None:
        if share is not None and share.engine is not engine:
            raise InputError("a program shares buffers only with a program on its engine's device")
        self.engine = engine
        self.program = program.checked()
        self._shared = {**_shared(program, share), **borrowed}  # buffer index -> a GPU buffer not its own
        self.timeout = default_timeout() if timeout is None else timeout
        self.poison_scratch = False  # tests: fill scratch with NaN before each call to catch unwritten output
        self._failed = ""  # why this program refuses calls (a call that timed out), "" while usable
        self._env: dict[str, int] | None = None
        self._held: dict[int, weakref.ref] = {}  # input buffer -> the DeviceTensor the last call copied into it
        with self.engine.lock, self._engine_errors("this program"):
            self._check_limits()
            self._build_buffers()

    def build(self, program: Program) -> Executor:
        """The second half: pipelines, bind groups and the readback for `program`, the allocated one with each
        group of options resolved (runtime/tuning.py: over the same buffers)."""
        self.program = program.checked()
        self._limit = first_call_seconds(program, self.engine.name, self.timeout)  # until a call has been read
        with self.engine.lock, self._engine_errors("this program"):
            self._build_pipelines()
            self._build_bind_groups()
            self._build_readback()
            if not program.symbols:
                self.prepare({})
        return self

    def constant_buffers(self) -> dict[int, object]:
        """The GPU buffer of each constant, by buffer index, its contents written."""
        return {i: self.buffers[i] for i in self.program.constants}

    @contextlib.contextmanager
    def _engine_errors(self, what: str):
        """An error the engine raises (validation, out of memory) as a one-line DeviceError: whatever a file
        asks for, what reaches the user is the package's error."""
        try:
            yield
        except self.engine.wgpu.GPUError as e:
            raise DeviceError(f"the {self.engine.name} engine refused {what}: {one_line(e)}") from None

    # -- load time --------------------------------------------------------------------------------------------
    def _check_limits(self) -> None:
        """Refuse, naming it, what this device cannot hold: before anything is allocated or compiled."""
        problem = limit_problem(self.program, self.engine.limits, memory.cap(self.engine), set(self._shared))
        if problem:
            raise DeviceError(problem)

    def _build_buffers(self) -> None:
        wgpu, device = self.engine.wgpu, self.engine.device
        usage = wgpu.BufferUsage.STORAGE | wgpu.BufferUsage.COPY_DST | wgpu.BufferUsage.COPY_SRC
        self.buffers = [self._shared.get(i) or device.create_buffer(size=allocated(b.size), usage=usage)
                        for i, b in enumerate(self.program.buffers)]
        queued = 0
        for index, data in self.program.constants.items():
            if index in self._shared:
                continue
            raw = data.reshape(-1).view(np.uint8)  # a view of the file's map, for a loaded program
            for at in range(0, raw.nbytes, UPLOAD_CHUNK):
                piece = raw[at:at + UPLOAD_CHUNK]
                if piece.nbytes % 4:  # writes are 4-byte multiples: an odd count of 16-bit values gets a zero pad
                    piece = np.concatenate([piece, np.zeros(-piece.nbytes % 4, np.uint8)])
                device.queue.write_buffer(self.buffers[index], at, piece)
                queued += piece.nbytes
                if queued >= UPLOAD_WINDOW:
                    self.engine.drain("uploading the constants")
                    queued = 0
        self._staged = {x.buffer: transfer.StagedInput(self.engine, self.buffers[x.buffer].size)
                        for x in self.program.inputs if self.program.buffers[x.buffer].size >= transfer.STAGED_BYTES}

    def _build_pipelines(self) -> None:
        """One module per source this engine uses (a kernel may name its own source per engine), layouts from
        each kernel's declared bindings, one pipeline per kernel a dispatch runs."""
        wgpu, device = self.engine.wgpu, self.engine.device
        self._kernel_source = [k.source_for(self.engine.name) for k in self.program.kernels]
        used = {d.kernel for d in self.program.dispatches}  # not the options tuning passed over
        for k in sorted(used):
            lacking = [f for f in self.program.kernels[k].requires if f not in device.features]
            if lacking:
                features = " and ".join(lacking) + (" features" if len(lacking) > 1 else " feature")
                raise DeviceError(f"kernel {self.program.kernels[k].name} needs the {features}, which this "
                                  f"{self.engine.name} device lacks; run the compiled program as saved (its "
                                  "dispatches' defaults need no optional feature)")
        # One bind group layout per distinct interface (explicit, never "auto": an operand a variant never
        # reads still has its slot). The uniform binding's minimum size is the declared Params size, so a
        # kernel whose WGSL Params is larger than the file says fails here, not at a call.
        self._group_layouts, pipeline_layouts, modules = {}, {}, {}
        for key in {_interface(self.program.kernels[k]) for k in used}:
            kinds, params = key
            entries = [{"binding": i, "visibility": wgpu.ShaderStage.COMPUTE,
                        "buffer": {"type": _BUFFER_TYPE[kind], "min_binding_size": params if kind == "uniform" else 0}}
                       for i, kind in enumerate(kinds)]
            self._group_layouts[key] = device.create_bind_group_layout(entries=entries)
            pipeline_layouts[key] = device.create_pipeline_layout(bind_group_layouts=[self._group_layouts[key]])
        for i in sorted({self._kernel_source[k] for k in used}):
            try:
                modules[i] = device.create_shader_module(code=self.program.sources[i], label=f"source{i}")
            except Exception as e:
                users = sorted({k.name for k, s in zip(self.program.kernels, self._kernel_source, strict=True)
                                if s == i})
                raise DeviceError(f"WGSL source {i} (kernels {', '.join(users)}) does not compile on the "
                                  f"{self.engine.name} engine: {one_line(e)}") from None
        self.pipelines = []
        for index, (k, i) in enumerate(zip(self.program.kernels, self._kernel_source, strict=True)):
            if index not in used:
                self.pipelines.append(None)
                continue
            try:
                self.pipelines.append(device.create_compute_pipeline(
                    layout=pipeline_layouts[_interface(k)], label=k.name,
                    compute={"module": modules[i], "entry_point": k.entry, "constants": dict(k.overrides)}))
            except Exception as e:
                raise DeviceError(f"kernel {k.name}: the {self.engine.name} engine rejected it: "
                                  f"{one_line(e)}") from None

    def _build_bind_groups(self) -> None:
        wgpu, device = self.engine.wgpu, self.engine.device
        align = self.engine.limits.get("min-uniform-buffer-offset-alignment", 256)
        offsets, total = [], 0
        for d in self.program.dispatches:
            offsets.append(total)
            total += _round_up(len(d.uniform), align) if d.uniform else 0
        self.uniforms = device.create_buffer(size=max(total, 16),
                                             usage=wgpu.BufferUsage.UNIFORM | wgpu.BufferUsage.COPY_DST)
        blob = bytearray(max(total, 16))
        for off, d in zip(offsets, self.program.dispatches, strict=True):
            blob[off:off + len(d.uniform)] = d.uniform
        device.queue.write_buffer(self.uniforms, 0, bytes(blob))
        self._uniform_blob = blob  # the uniform buffer's contents, patched in place per dynamic sizes
        # Each dynamic uniform word: (its byte offset in the buffer, struct format, value as a function).
        self._patches = [(off + q.offset, SCALAR_FORMAT[q.scalar], symbolic.compiled(q.value), q.scalar == "f32")
                         for off, d in zip(offsets, self.program.dispatches, strict=True) for q in d.patches]
        self._counts = [symbolic.compiled(d.count) if d.count is not None else None for d in self.program.dispatches]
        self.bind_groups = []
        for off, d in zip(offsets, self.program.dispatches, strict=True):
            entries, storage = [], iter(d.buffers)
            for i, kind in enumerate(self.program.kernels[d.kernel].bindings):
                if kind == "uniform":
                    res = {"buffer": self.uniforms, "offset": off, "size": _round_up(len(d.uniform), 16)}
                else:
                    buf = self.buffers[next(storage)]
                    res = {"buffer": buf, "offset": 0, "size": buf.size}
                entries.append({"binding": i, "resource": res})
            layout = self._group_layouts[_interface(self.program.kernels[d.kernel])]
            try:
                self.bind_groups.append(device.create_bind_group(layout=layout, entries=entries))
            except Exception as e:
                raise DeviceError(f"dispatch of node {d.node}: the {self.engine.name} engine rejected its "
                                  f"bindings: {one_line(e)}") from None

    def _build_readback(self) -> None:
        """One staging buffer with a slot per output, each as large as its output can get, then the status
        words of the program's checks (more are made while calls are in flight together)."""
        self._staging_offsets, total = [], 0
        for t in self.program.outputs:
            self._staging_offsets.append(total)
            total += symbolic.bound(_round_up((t.span() + 1) * dtypes.dtype(t.dtype).itemsize, 4))
        self._status = next((i for i, b in enumerate(self.program.buffers) if b.role == "status"), None)
        self._status_offset = total
        total += 4 * len(self.program.checks)
        self._staging_size = max(total, 4)
        self.staging = self._new_staging()
        self._stagings = [self.staging]  # the staging buffers no call in flight holds
        self._scratch = [self.buffers[i] for i, b in enumerate(self.program.buffers) if b.role == "scratch"]

    def _new_staging(self):
        wgpu = self.engine.wgpu
        return self.engine.device.create_buffer(size=self._staging_size,
                                                usage=wgpu.BufferUsage.MAP_READ | wgpu.BufferUsage.COPY_DST)

    def prepare(self, env: dict[str, int]) -> None:
        """Make the dispatch plan and output reads for these dynamic sizes (a no-op when they are the last
        call's); `env` is Program.bind's result."""
        if env == self._env:
            return
        if self._patches:  # one write covering every patched word
            blob = self._uniform_blob
            for at, fmt, value, as_float in self._patches:
                v = value(env)
                struct.pack_into(fmt, blob, at, float(v) if as_float else v)
            lo, hi = self._patches[0][0] // 16 * 16, _round_up(self._patches[-1][0] + 4, 16)
            self.engine.device.queue.write_buffer(self.uniforms, lo, blob[lo:hi])
        grids = [fold_grid(count(env)) if count is not None else d.grid
                 for d, count in zip(self.program.dispatches, self._counts, strict=True)]
        self._plan = [(self.pipelines[d.kernel], bg, grid)
                      for d, bg, grid in zip(self.program.dispatches, self.bind_groups, grids, strict=True)]
        self._readbacks = [_Readback(*readback(t, env), dst)
                           for t, dst in zip(self.program.outputs, self._staging_offsets, strict=True)]
        self._env = dict(env)

    def destroy(self) -> None:
        """Free this program's GPU buffers now, not those it shares or borrows (a tuning probe's, once its group
        is chosen: js/src/executor.js's `destroy`); it refuses calls after."""
        shared = {id(b) for b in self._shared.values()}
        owned = [b for b in self.buffers if id(b) not in shared] + [self.uniforms, *self._stagings]
        for b in owned + [s.buffer for s in self._staged.values()]:
            b.destroy()
        self._failed = "it was destroyed"

    # -- state ------------------------------------------------------------------------------------------------
    def read_state(self, name: str) -> np.ndarray:
        """The state `name` as the calls so far left it (host form)."""
        s = self._state(name)
        view = Tensor(s.buffer, s.shape, contiguous_strides(s.shape), 0, s.dtype)
        return read_view(self.engine, self.buffers[s.buffer], view, f"reading state {name!r}")

    def reset_state(self, names: Collection[str] | None = None) -> None:
        """Zero the states `names` (all by default), as at load; ordered after the calls made so far."""
        with self.engine.lock, self._engine_errors("a reset"):
            for s in self.program.states if names is None else map(self._state, names):
                buffer = self.buffers[s.buffer]
                self.engine.device.queue.write_buffer(buffer, 0, bytes(buffer.size))

    def _state(self, name: str):
        for s in self.program.states:
            if s.name == name:
                return s
        known = ", ".join(s.name for s in self.program.states) or "none"
        raise KeyError(f"no state {name!r} in this program (its states: {known})")

    # -- call time --------------------------------------------------------------------------------------------
    def run(self, inputs: list, env: dict[str, int] | None = None, keep: Collection[int] = ()) -> list:
        """Outputs for `inputs` (in Program.inputs order, each a device-format array or a DeviceTensor) at the
        dynamic sizes `env`, in one submit: those whose index is in `keep` as DeviceTensors, the others read
        back as device-format arrays (when every output is kept, nothing is mapped or waited for)."""
        return self.start(inputs, env, keep).result()

    def start(self, inputs: list, env: dict[str, int] | None = None, keep: Collection[int] = (),
              read: Collection[int] | None = None) -> Call:
        """Write the inputs, encode and submit one call, and return without waiting for it: the outputs in
        `keep` are DeviceTensors at once (`Call.kept`, to feed the next call), those in `read` (by default the
        others; an output may be both) come back from `Call.result()`, which waits for them. Several calls
        may be in flight — each reads back through a staging buffer of its own — so a decoder submits its
        next step before it reads this one's token. Holds the device's lock while it encodes and submits."""
        with self.engine.lock, self._engine_errors("the call"):
            if self._failed:
                raise DeviceError(f"this program cannot run again: {self._failed}")
            self.prepare(env or {})
            start = time.perf_counter()
            encoder = self.engine.device.create_command_encoder()
            try:
                self.write_inputs(encoder, inputs)
                self.encode(encoder)
                kept = {i: self._copy_out(encoder, self._readbacks[i]) for i in keep}
                read = [i for i in range(len(self._readbacks)) if i not in kept] if read is None else sorted(read)
                staging = (self._stagings.pop() if self._stagings else self._new_staging()) if read else None
                if read:
                    self.stage(encoder, read, staging)
                encoded = time.perf_counter()
                self.submit(encoder, awaited=bool(read))
            except BaseException:
                self._held.clear()  # the copies into the input buffers were never submitted
                raise
            if not read:
                self.engine.device._poll()  # lets the engine retire finished submissions: no map will
            call = Call(self, kept, read, staging)
            call.host.update(encode=encoded - start, submit=time.perf_counter() - encoded)
            return call

    def write_inputs(self, encoder, inputs: list) -> None:
        """Write host inputs and encode device-tensor copies; submit() remaps the staging buffers used. A
        DeviceTensor that is already in its input buffer (the one the last call copied there: DeviceTensors
        never change, and nothing else writes an input buffer) is not copied again: a decoder's cross K/V."""
        device = self.engine.device
        for spec, value in zip(self.program.inputs, inputs, strict=True):
            held = self._held.pop(spec.buffer, None)
            if isinstance(value, DeviceTensor):
                if held is None or held() is not value:
                    self._copy_in(encoder, value, self.buffers[spec.buffer])
                self._held[spec.buffer] = weakref.ref(value)
            elif spec.buffer in self._staged and value.nbytes:
                self._staged[spec.buffer].write(encoder, value, self.buffers[spec.buffer])
            elif value.nbytes:
                device.queue.write_buffer(self.buffers[spec.buffer], 0, value)
        if self.poison_scratch:
            for buf in self._scratch:
                device.queue.write_buffer(buf, 0, b"\xff" * buf.size)

    def submit(self, encoder, awaited: bool) -> None:
        """Submit `encoder`'s work (Engine.submit), then map again the input staging buffers it read."""
        self.engine.submit(encoder.finish(), awaited)
        for staged in self._staged.values():
            staged.remap()

    # The steps of reading back, apart so that timing.call_phases can time each.
    def stage(self, encoder, which: Collection[int] | None = None, staging=None) -> None:
        """Encode the copies of the outputs' byte ranges (those whose indices are in `which`, or all) into a
        staging buffer (`self.staging` by default), and of the status words."""
        staging = staging or self.staging
        for r in self._readbacks if which is None else [self._readbacks[i] for i in which]:
            if r.size:
                encoder.copy_buffer_to_buffer(self.buffers[r.tensor.buffer], r.src_offset, staging,
                                              r.dst_offset, r.size)
        if self.program.checks:
            encoder.copy_buffer_to_buffer(self.buffers[self._status], 0, staging, self._status_offset,
                                          4 * len(self.program.checks))

    def map(self, staging=None) -> None:
        """Wait for a staging buffer (`self.staging` by default) to map: the call's work done."""
        try:
            self.engine.read(staging or self.staging, "the call", self._limit)
        except BaseException as e:  # a timeout or Ctrl-C: the map may still complete; never reuse it
            self._failed = f"an earlier call was interrupted ({type(e).__name__}: {e})"
            self.engine.stuck.append(self)
            raise
        self._limit = self.timeout

    def copy_mapped(self, which: Collection[int] | None = None, staging=None) -> list[np.ndarray]:
        """The outputs staged (`which`, or all) copied out of the mapped staging buffer (`self.staging` by
        default; one copy each), then unmap. A failed device check (its status word set, by this call or an
        on_device call since the last read) raises instead."""
        staged = self._readbacks if which is None else [self._readbacks[i] for i in which]
        staging = staging or self.staging
        try:
            data = np.frombuffer(staging.read_mapped(copy=False), dtype=np.uint8)
            failed = np.flatnonzero(data[self._status_offset:].view("<u4")) if self.program.checks else ()
            outputs = [self._view(data, r) for r in staged] if not len(failed) else []
        finally:
            staging.unmap()
        if len(failed):
            self.engine.device.queue.write_buffer(self.buffers[self._status], 0, bytes(4 * len(self.program.checks)))
            check = self.program.checks[failed[0]]
            raise DeviceIndexError(f"node {check.node!r}: {check.message}")
        return outputs

    def _copy_in(self, encoder, value: DeviceTensor, buffer) -> None:
        if value.engine.device is not self.engine.device:
            raise DeviceError(f"{value} lives on another device or engine than this program")
        if not value.is_contiguous():
            raise InputError(f"{value} is a strided view; pass a contiguous tensor (or its .numpy())")
        nbytes = value.view.numel * dtypes.dtype(value.dtype).itemsize
        if nbytes:
            encoder.copy_buffer_to_buffer(value.buffer, value.view.offset * dtypes.dtype(value.dtype).itemsize,
                                          buffer, 0, _round_up(nbytes, 4))

    def _copy_out(self, encoder, r: _Readback) -> DeviceTensor:
        item = dtypes.dtype(r.tensor.dtype).itemsize
        view = Tensor(0, r.tensor.shape, r.tensor.strides, r.tensor.offset - r.src_offset // item, r.tensor.dtype)
        kept = DeviceTensor(self.engine, r.size, view)
        if r.size:
            encoder.copy_buffer_to_buffer(self.buffers[r.tensor.buffer], r.src_offset, kept.buffer, 0, r.size)
        return kept

    def encode(self, encoder, timestamp_writes=None) -> None:
        """Record every dispatch of one call into one compute pass of `encoder`."""
        cpass = encoder.begin_compute_pass(timestamp_writes=timestamp_writes)
        current = None
        for pipeline, bind_group, grid in self._plan:
            if pipeline is not current:
                cpass.set_pipeline(pipeline)
                current = pipeline
            cpass.set_bind_group(0, bind_group)
            cpass.dispatch_workgroups(*grid)
        cpass.end()

    @staticmethod
    def _view(data: np.ndarray, r: _Readback) -> np.ndarray:
        t = r.tensor
        d = dtypes.dtype(t.dtype).device
        if t.numel == 0:
            return np.zeros(t.shape, d)
        skip = t.offset * d.itemsize - r.src_offset
        region = data[r.dst_offset + skip: r.dst_offset + r.size]
        usable = region.nbytes // d.itemsize * d.itemsize
        base = region[:usable].view(d)
        strides = tuple(s * d.itemsize for s in t.strides)
        return transfer.copy(np.lib.stride_tricks.as_strided(base, t.shape, strides, writeable=False))


class Call:
    """A submitted call (Executor.start): `kept` its outputs kept on the device, by index, at once; `result()`
    waits for the outputs it reads and returns every output in order (an output both kept and read comes back
    read; one neither kept nor read as None). Its staging buffer goes back to the executor with result() or
    discard()."""

    def __init__(self, executor: Executor, kept: dict, read: list[int], staging):
        self.executor, self.kept, self._read, self._staging = executor, kept, read, staging
        # Host seconds: "encode" (inputs written, dispatches and copies encoded), "submit", then with
        # result() "map" (waiting for the GPU) and "copy" (outputs out of mapped memory).
        self.host: dict[str, float] = {}

    def result(self) -> list:
        ex, outputs = self.executor, dict(self.kept)
        if self._staging is not None:
            with ex.engine.lock, ex._engine_errors("the call"):
                try:
                    start = time.perf_counter()
                    ex.map(self._staging)
                    mapped = time.perf_counter()
                    outputs.update(zip(self._read, ex.copy_mapped(self._read, self._staging), strict=True))
                    self.host.update(map=mapped - start, copy=time.perf_counter() - mapped)
                finally:
                    self.discard()
        return [outputs.get(i) for i in range(len(ex.program.outputs))]

    def discard(self) -> None:
        """Give the staging buffer back unread (the work itself still runs): a decoder's step past EOS."""
        if self._staging is not None:
            self.executor._stagings.append(self._staging)
            self._staging = None


def one_line(e: BaseException) -> str:
    """An engine's error as one line: its first line, with a count of the lines left out (compiler output)."""
    lines = [line for line in str(e).splitlines() if line.strip()] or [type(e).__name__]
    rest = f" (and {len(lines) - 1} more lines)" if len(lines) > 1 else ""
    return lines[0][:300] + rest
