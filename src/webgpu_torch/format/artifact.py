"""The saved-program file (`.wgpt`): docs/artifact.md is its contract, this module its Python reader and writer.

One file, language-neutral, versioned, never pickled: a 32-byte preamble, a JSON header that says everything
a runtime needs (WGSL sources, each kernel's bindings and uniform layout, buffers, inputs, outputs, trees,
dispatches), and the constants' raw little-endian bytes at 64-byte aligned offsets. Both the header and the
data carry a CRC-32. `load` maps the file rather than reading it (the constants are views of the map), validates
every field before anything reaches a device, in the order the JavaScript reader streams it (docs/artifact.md,
Running it), and raises ArtifactError naming the first problem.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import struct
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from math import prod
from pathlib import Path
from typing import Any

import numpy as np

from . import symbolic, tree
from .errors import ArtifactError
from .limits import LIMITS
from .packing import DTYPES as PACKED_DTYPES
from .packing import Packing
from .program import (
    F16,
    FORMAT_VERSION,
    MAX_RANK,
    Buffer,
    Check,
    Dispatch,
    Input,
    Kernel,
    Option,
    Patch,
    Program,
    State,
    Tensor,
    UniformField,
    UniformLayout,
)

MAGIC = LIMITS["magic"].encode()
CONTAINER_VERSION = LIMITS["container_version"]
PREAMBLE = struct.Struct("<8sIIQQ")  # magic, container version, header CRC-32, header length, data length
ALIGN = LIMITS["align"]
# A constant's device element type (docs/artifact.md, "tensors"): bf16 is bfloat16's bits, two to a u32 word.
DTYPES = {"f32": np.dtype("<f4"), "f16": np.dtype("<f2"), "bf16": np.dtype("<u2"), "i32": np.dtype("<i4"),
          "u32": np.dtype("<u4")}
MAX_HEADER = LIMITS["max_header_bytes"]  # a header past 1 GiB is not one we wrote


def _pad(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


# -- writing -----------------------------------------------------------------------------------------------

def to_bytes(program: Program, beside: Beside | None = None) -> bytes:
    """The file's bytes. With `beside` (a program saved in the same folder), each constant whose name, layout and
    bytes that program's constant of the same name has is written as a reference to it (`external`), not again."""
    program.checked()
    tensors, chunks, offset = [], [], 0
    for buffer, array in sorted(program.constants.items()):
        entry = _tensor_entry(program, buffer, array)
        if beside is not None and beside.holds(program, buffer):
            tensors.append({**entry, "external": {"file": beside.file, "data_crc32": beside.data_crc32}})
            continue
        data = np.ascontiguousarray(array).tobytes()
        tensors.append({**entry, "offset": offset})
        chunks.append(data + b"\0" * (_pad(len(data)) - len(data)))
        offset += _pad(len(data))
    blob = b"".join(chunks)
    header = {**to_json(program), "tensors": tensors, "data_crc32": zlib.crc32(blob)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (_pad(len(text)) - len(text))
    return PREAMBLE.pack(MAGIC, CONTAINER_VERSION, zlib.crc32(text), len(text), len(blob)) + text + blob


def _tensor_entry(program: Program, buffer: int, array: np.ndarray) -> dict:
    """A constant's `tensors` entry but where its bytes are."""
    packing = program.packings.get(buffer)
    if packing is None:
        names = {v: k for k, v in DTYPES.items()}
        return {"buffer": buffer, "dtype": names[array.dtype], "shape": list(array.shape), "nbytes": array.nbytes}
    return {"buffer": buffer, "dtype": packing.dtype, "shape": [packing.rows, packing.cols], "group": packing.group,
            "zero_points": packing.zero_points, "nbytes": array.nbytes}


def save(program: Program, path: str | Path, beside: str | Path | None = None) -> None:
    """Write `program` to `path`; with `beside`, the path of a program saved in the same folder, the constants
    both hold are written once, there (docs/artifact.md, Shared constants)."""
    path = Path(path)
    near = None
    if beside is not None:
        beside = Path(beside)
        if beside.parent.resolve() != path.parent.resolve() or beside.name == path.name:
            raise ValueError(f"{beside} is not another file of {path}'s folder")
        near = Beside(beside.name, *_load(beside, 1, {}))
    path.write_bytes(to_bytes(program, near))


@dataclass(frozen=True)
class Beside:
    """A saved program whose constants another file of its folder refers to: its file name, the program and
    the CRC-32 of its data (what the reference records, so that a file saved again is not taken for it)."""

    file: str
    program: Program
    data_crc32: int

    def holds(self, program: Program, buffer: int) -> bool:
        """Whether this program holds `program`'s constant `buffer`: a constant of the same name, layout and
        bytes."""
        j = self._constants.get(program.buffers[buffer].name)
        if j is None or program.packings.get(buffer) != self.program.packings.get(j):
            return False
        mine, other = program.constants[buffer], self.program.constants[j]
        return (mine.dtype == other.dtype and mine.shape == other.shape
                and np.array_equal(mine.reshape(-1).view(np.uint8), other.reshape(-1).view(np.uint8)))

    @cached_property
    def _constants(self) -> dict[str, int]:
        return {b.name: i for i, b in enumerate(self.program.buffers) if b.role == "constant"}


def to_json(p: Program) -> dict:
    """The header's program fields (everything but the constants' bytes)."""
    x = symbolic.to_json
    return {
        "format": FORMAT_VERSION,
        "meta": p.meta,
        "requires": list(p.requires),
        "symbols": {s.name: {"lo": s.lo, "hi": s.hi, "hint": s.hint, "about": s.about} for s in p.symbols.values()},
        "sources": p.sources,
        "kernels": [_kernel_json(k) for k in p.kernels],
        "buffers": [{"size": b.size, "role": b.role, "name": b.name} for b in p.buffers],
        "inputs": [{"name": i.name, "shape": [x(s) for s in i.shape], "dtype": i.dtype, "buffer": i.buffer}
                   for i in p.inputs],
        "outputs": [_tensor_json(t) for t in p.outputs],
        "input_tree": p.input_tree,
        "output_tree": p.output_tree,
        "dispatches": [_dispatch_json(d) for d in p.dispatches],
        "checks": [{"node": c.node, "message": c.message} for c in p.checks],
        "states": [{"name": s.name, "buffer": s.buffer, "shape": list(s.shape), "dtype": s.dtype} for s in p.states],
    }


def _kernel_json(k: Kernel) -> dict:
    out = {"name": k.name, "source": k.source, "entry": k.entry, "overrides": dict(k.overrides),
           "bindings": list(k.bindings), "workgroup_size": list(k.workgroup_size),
           "workgroup_bytes": k.workgroup_bytes}
    if k.uniform is not None:
        out["uniform"] = {"size": k.uniform.size, "fields": [
            {"name": f.name, "offset": f.offset, "type": f.scalar, "count": f.count} for f in k.uniform.fields]}
    if k.requires:
        out["requires"] = list(k.requires)
    if k.fallback is not None:
        out["fallback"] = k.fallback
    if k.engine_sources:
        out["engine_sources"] = dict(k.engine_sources)
    if k.targets:
        out["targets"] = list(k.targets)
    return out


def _tensor_json(t: Tensor) -> dict:
    x = symbolic.to_json
    return {"buffer": t.buffer, "shape": [x(s) for s in t.shape], "strides": [x(s) for s in t.strides],
            "offset": x(t.offset), "dtype": t.dtype}


def _dispatch_json(d: Dispatch) -> dict:
    out = {"kernel": d.kernel, "buffers": list(d.buffers), **_launch_json(d.launch), "node": d.node}
    if d.options:
        out["options"] = [_launch_json(o) for o in d.options]
    if d.follows:
        out["follows"] = d.follows
    if d.result:
        out["result"] = [_tensor_json(t) for t in d.result]
        out["tolerance"] = d.tolerance
    return out


def _launch_json(o: Option) -> dict:
    """A dispatch's or an option's kernel, Params, grid, and with dynamic sizes its patches and count."""
    out = {"kernel": o.kernel, "uniform": _words(o.uniform), "grid": list(o.grid)}
    if o.patches:
        out["patches"] = [[q.offset, q.scalar, symbolic.to_json(q.value)] for q in o.patches]
    if o.count is not None:
        out["count"] = symbolic.to_json(o.count)
    return out


def _words(data: bytes) -> list[int]:
    return list(struct.unpack(f"<{len(data) // 4}I", data))


# -- reading -----------------------------------------------------------------------------------------------

def load(path: str | Path, beside: Mapping[str, Program] | None = None) -> Program:
    """Read and fully validate a saved program; raises ArtifactError naming what is wrong. The file is mapped,
    not read: its constants are views of the map, whose pages the OS reads as the checksum and the upload reach
    them and may drop again (they are the file's, not this process's memory), so a program of several GB loads
    in little more host memory than a chunk of it. The file must not shrink while the program lives.
    Constants stored in another file of the folder (Shared constants) are read from it, unless `beside` holds
    the program already loaded from that file (by file name): then only that file's header is read."""
    return _load(Path(path), 0, beside or {})[0]


def _load(path: Path, depth: int, beside: Mapping[str, Program]) -> tuple[Program, int]:
    """`load`, and the CRC-32 of the file's data; `depth`: 1 for a file another refers to."""
    return _from_bytes(_map(path), str(path), path, depth, beside)


def _map(path: Path) -> bytes | mmap.mmap:
    """The file's bytes as a read-only map (nothing read until touched)."""
    if not path.is_file():
        raise ArtifactError(f"{path}: {'not a file' if path.exists() else 'no such file'}")
    with open(path, "rb") as f:
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) if os.fstat(f.fileno()).st_size else b""


def _data_crc32(path: Path) -> int:
    """The data CRC-32 a program file's header records (its container and header checked, its data not read)."""
    header, _ = _split(_map(path), str(path))
    crc = header.get("data_crc32") if isinstance(header, dict) else None
    if not (_is_int(crc) and 0 <= crc <= 0xFFFFFFFF):
        raise ArtifactError(f"{path}: data_crc32 is not a CRC-32")
    return crc


def from_bytes(raw: bytes | mmap.mmap, where: str = "artifact", path: Path | None = None) -> Program:
    """The program in `raw` (bytes or a map of the file), checked in the order of docs/artifact.md, Running it:
    the container, the header's checksum and JSON, its values, format and lengths' alignment, its rules, then
    the data's checksum. Constants it refers to in another file (Shared constants) are read from `path`'s
    folder, that file loaded and checked whole."""
    return _from_bytes(raw, where, path, 0, {})[0]


def _from_bytes(raw: bytes | mmap.mmap, where: str, path: Path | None, depth: int,
                beside: Mapping[str, Program]) -> tuple[Program, int]:
    header, data = _split(raw, where)
    try:
        if not isinstance(header, dict):
            raise ValueError(f"the header is a JSON {type(header).__name__}, not an object")
        _check_values(header)
        if header.get("format") != FORMAT_VERSION:
            raise ArtifactError(f"{where}: program format {header.get('format')!r}; this webgpu_torch reads format "
                                f"{FORMAT_VERSION} — recompile the model with this version")
        header_len, data_len = PREAMBLE.unpack_from(raw)[3:]
        if header_len % ALIGN or data_len % ALIGN:
            raise ValueError(f"header length {header_len} or data length {data_len} is not a multiple of {ALIGN}")
        constants, packings, external = _read_tensors(header, data)
        program = from_json(header, constants, packings)
        _take_external(program, external, path, where, depth, beside)
        program.check()
        _check_requires(program, header)
        data_crc = header["data_crc32"]
        if not (_is_int(data_crc) and 0 <= data_crc <= 0xFFFFFFFF):
            raise ValueError(f"data_crc32: {json.dumps(data_crc)[:40]} is not a CRC-32")
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, OverflowError, RecursionError) as e:
        detail = f"missing field {e}" if isinstance(e, KeyError) else str(e) or type(e).__name__
        raise ArtifactError(f"{where}: malformed program: {detail[:300]}") from None
    if zlib.crc32(data) != data_crc:
        raise ArtifactError(f"{where}: tensor data is damaged (checksum mismatch)")
    return program, data_crc


def _split(raw: bytes | mmap.mmap, where: str) -> tuple[Any, memoryview]:
    """The parsed header and a view of the data, after the container's magic, version, lengths and the header's
    CRC."""
    if not raw or raw[:len(MAGIC)] != MAGIC[:len(raw)]:
        raise ArtifactError(f"{where}: not a webgpu_torch program (it does not start with {MAGIC.decode()})")
    if len(raw) < PREAMBLE.size:
        raise ArtifactError(f"{where}: truncated ({len(raw)} bytes) — not a complete webgpu_torch program")
    _, version, header_crc, header_len, data_len = PREAMBLE.unpack_from(raw)
    if version != CONTAINER_VERSION:
        raise ArtifactError(f"{where}: container version {version}; this webgpu_torch reads version "
                            f"{CONTAINER_VERSION} — recompile the model with this version")
    expected = PREAMBLE.size + header_len + data_len
    if len(raw) != expected:
        state = "truncated" if len(raw) < expected else "has trailing bytes"
        raise ArtifactError(f"{where}: {state}: {len(raw):,} bytes, the preamble says {expected:,}")
    if header_len > MAX_HEADER:
        raise ArtifactError(f"{where}: a header of {header_len:,} bytes is past the {MAX_HEADER:,} this reader takes")
    text = memoryview(raw)[PREAMBLE.size:PREAMBLE.size + header_len]
    if zlib.crc32(text) != header_crc:
        raise ArtifactError(f"{where}: the header is damaged (checksum mismatch)")
    try:
        header = json.loads(bytes(text), parse_int=_parse_int, parse_constant=_no_constant)
    except (ValueError, RecursionError) as e:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        raise ArtifactError(f"{where}: damaged header: {str(e)[:200] or 'nested too deeply'}") from None
    return header, memoryview(raw)[PREAMBLE.size + header_len:]


MAX_JSON_DEPTH = LIMITS["max_json_depth"]  # arrays and objects nested in the header (a tree 64 deep: 131)
MAX_NUMBER = LIMITS["max_number"]  # 2^53 - 1: every number JavaScript reads exactly


def _parse_int(text: str) -> int | float:
    """An integer literal; one too long to be in range parses as an infinity, which `_check_values` refuses
    (converting thousands of digits is slow, and Python refuses past 4,300)."""
    return int(text) if len(text) <= 20 else float("-inf" if text.startswith("-") else "inf")


def _check_values(header: Any) -> None:
    """Every number in the header within ±(2^53 - 1) (so both runtimes read it exactly: a JavaScript number
    is a float64), every string (and key) well-formed Unicode (no lone surrogate: engines take UTF-8), and
    arrays and objects nested at most MAX_JSON_DEPTH deep. Walks the header without recursion."""
    stack = [(header, "the header", 0)]
    while stack:
        value, where, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth >= MAX_JSON_DEPTH:
                raise ValueError(f"{where}: nested deeper than {MAX_JSON_DEPTH}")
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if isinstance(key, str):
                    _check_string(key, where)
                stack.append((item, f"{where}.{str(key)[:40]}" if depth else str(key)[:40], depth + 1))
        elif isinstance(value, str):
            _check_string(value, where)
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and not abs(value) <= MAX_NUMBER:
            raise ValueError(f"{where}: the number {str(value)[:30]} is out of range (beyond ±(2^53 - 1))")


def _check_string(text: str, where: str) -> None:
    try:
        text.encode()
    except UnicodeEncodeError:
        raise ValueError(f"{where}: a string that is not well-formed Unicode (a lone surrogate)") from None


def _no_constant(text: str):
    raise ValueError(f"{text} is not JSON")  # NaN and Infinity, which Python's json module would accept


def _check_requires(program: Program, header: dict) -> None:
    """The header's `requires` is exactly what the dispatches' kernels need (Kernel.needs)."""
    declared = set(_str(f, "feature") for f in _list(header.get("requires", []), "requires"))
    for i, d in enumerate(program.dispatches):
        k = program.kernels[d.kernel]
        missing = sorted(set(k.needs) - declared)
        if missing:
            extra = " and names no fallback" if F16 in missing else ""
            raise ValueError(f"dispatch {i}: its kernel {k.name} needs {', '.join(missing)}, which the file does "
                             f"not require{extra}")
    unneeded = sorted(declared - set(program.requires))
    if unneeded:
        raise ValueError(f"the file requires {', '.join(unneeded)}, which no dispatch needs")


def _read_tensors(header: dict, data: memoryview) -> tuple[dict[int, np.ndarray], dict[int, Packing], dict]:
    """The constants in this file's data, the packed ones' layouts, and the entries whose bytes are in another
    file (buffer -> External)."""
    out, packings, external = {}, {}, {}
    for t in _list(header["tensors"], "tensors"):
        buffer = _int(t["buffer"], "tensor buffer")
        if t["dtype"] not in DTYPES and t["dtype"] not in PACKED_DTYPES.values():
            raise ValueError(f"tensor for buffer {buffer} has unknown dtype {t['dtype']!r}")
        shape = tuple(_int(s, "tensor shape") for s in _list(t["shape"], "tensor shape"))
        if len(shape) > MAX_RANK:
            raise ValueError(f"tensor for buffer {buffer}: {len(shape)} dimensions, over {MAX_RANK}")
        if t["dtype"] in DTYPES:
            dtype, size = DTYPES[t["dtype"]], prod(shape) * DTYPES[t["dtype"]].itemsize
        else:
            packings[buffer] = _packing(t, buffer, shape)
            dtype, size, shape = np.dtype("<u4"), packings[buffer].nbytes, (packings[buffer].words,)
        nbytes = _int(t["nbytes"], "tensor nbytes")
        if buffer in out or buffer in external:
            raise ValueError(f"two tensors for buffer {buffer}")
        if ("offset" in t) == ("external" in t):
            raise ValueError(f"tensor for buffer {buffer} needs exactly one of offset and external")
        e = External.of(t["external"], dtype, shape, buffer) if "external" in t else None
        offset = -1 if e else _int(t["offset"], "tensor offset")
        if nbytes != size or min(shape, default=0) < 0 or (not e and (
                offset < 0 or offset % ALIGN or offset + nbytes > len(data))):
            raise ValueError(f"tensor for buffer {buffer} is mis-sized or out of bounds (shape {list(shape)}, "
                             f"{nbytes} bytes at {offset}, data is {len(data)} bytes)")
        if e:
            external[buffer] = e
        else:
            out[buffer] = np.frombuffer(data, dtype, prod(shape), offset).reshape(shape)
    return out, packings, external


@dataclass(frozen=True)
class External:
    """A constant whose bytes another file of the folder holds: the constant of the same name there, whose
    layout is `dtype` and `shape` (as this file's array would be) and whose file's data has CRC `data_crc32`."""

    file: str
    data_crc32: int
    dtype: np.dtype
    shape: tuple[int, ...]

    @staticmethod
    def of(entry: Any, dtype: np.dtype, shape: tuple[int, ...], buffer: int) -> External:
        e = _dict(entry, f"tensor for buffer {buffer}: external")
        file, crc = _str(e["file"], "external file"), e["data_crc32"]
        if not FILE_NAME.fullmatch(file):
            raise ValueError(f"tensor for buffer {buffer}: external file {json.dumps(file)[:80]} is not a .wgpt "
                             "file name of this folder")
        if not (_is_int(crc) and 0 <= crc <= 0xFFFFFFFF):
            raise ValueError(f"tensor for buffer {buffer}: external data_crc32 is not a CRC-32")
        return External(file, crc, dtype, shape)


# A file an `external` entry names (the whole name): in the same folder, so no separator, and not hidden.
FILE_NAME = re.compile(LIMITS["external_file"])


def _take_external(program: Program, external: dict[int, External], path: Path | None, where: str,
                   depth: int, beside: Mapping[str, Program]) -> None:
    """Fill `program`'s constants that `external` places in other files of `path`'s folder from those files,
    each loaded whole (its own checks) unless `beside` holds it, refusing a reference its file does not answer.
    A file referred to refers to none itself (`depth` 1)."""
    files: dict[str, tuple[Program, dict[str, int]]] = {}  # file -> its program, its constants by name
    for buffer, e in external.items():
        name = program.buffers[buffer].name if 0 <= buffer < len(program.buffers) else ""
        if depth:
            raise ArtifactError(f"{where}: constant {name!r} is in {e.file}, and this file's own constants are "
                                "referred to: a file refers to one that holds all of its own")
        if path is None or e.file == path.name:
            raise ArtifactError(f"{where}: constant {name!r} is stored in {e.file}: load this file from its folder")
        if e.file not in files:
            sibling = path.parent / e.file
            if not sibling.is_file():
                raise ArtifactError(f"{where}: constant {name!r} is stored in {e.file}, which is not in its folder")
            other, crc = ((beside[e.file], _data_crc32(sibling)) if e.file in beside
                          else _load(sibling, depth + 1, {}))
            if crc != e.data_crc32:
                raise ArtifactError(f"{where}: constant {name!r} is in {e.file} as it was saved before; that file "
                                    "has been saved again since (its data checksum differs): save the folder again")
            files[e.file] = other, {b.name: i for i, b in enumerate(other.buffers) if b.role == "constant"}
        other, names = files[e.file]
        j = names.get(name)
        array = None if j is None else other.constants[j]
        if array is None or (array.dtype, array.shape) != (e.dtype, e.shape) or \
                other.packings.get(j) != program.packings.get(buffer):
            raise ArtifactError(f"{where}: constant {name!r} is not in {e.file} as this file describes it")
        program.constants[buffer] = array


def _packing(t: dict, buffer: int, shape: tuple[int, ...]) -> Packing:
    """The layout of a packed tensor entry (docs/artifact.md, "Packed weights")."""
    bits = next(b for b, name in PACKED_DTYPES.items() if name == t["dtype"])
    zero_points = t["zero_points"]
    if len(shape) != 2 or not isinstance(zero_points, bool):
        raise ValueError(f"packed tensor for buffer {buffer}: shape {list(shape)} is not [rows, cols] or "
                         "zero_points is not a boolean")
    try:
        return Packing(bits, *shape, _int(t["group"], "group"), zero_points)
    except ValueError as e:
        raise ValueError(f"packed tensor for buffer {buffer}: {e}") from None


def from_json(d: dict, constants: dict[int, np.ndarray], packings: dict[int, Packing] | None = None) -> Program:
    """A Program from the header's fields, every value type-checked (ranges and indices: Program.check)."""
    symbols = {name: _symbol(name, _dict(s, "symbol")) for name, s in _dict(d["symbols"], "symbols").items()}

    def expr(v):
        return symbolic.from_json(v, symbols)

    return Program(
        sources=[_str(s, "source") for s in _list(d["sources"], "sources")],
        kernels=[_kernel(k) for k in _list(d["kernels"], "kernels")],
        buffers=[Buffer(_int(b["size"], "buffer size"), _str(b["role"], "role"), _str(b.get("name", ""), "name"))
                 for b in _list(d["buffers"], "buffers")],
        constants=constants,
        inputs=[Input(_str(i["name"], "input name"), tuple(map(expr, _list(i["shape"], "shape"))),
                      _str(i["dtype"], "dtype"), _int(i["buffer"], "input buffer"))
                for i in _list(d["inputs"], "inputs")],
        outputs=[_tensor(t, expr) for t in _list(d["outputs"], "outputs")],
        input_tree=_tree(d["input_tree"]),
        output_tree=_tree(d["output_tree"]),
        dispatches=[_dispatch(x, expr) for x in _list(d["dispatches"], "dispatches")],
        meta=_dict(d.get("meta", {}), "meta"),
        symbols=symbols,
        checks=[Check(_str(c["node"], "check node"), _str(c["message"], "check message"))
                for c in _list(d["checks"], "checks")],
        states=[State(_str(s["name"], "state name"), _int(s["buffer"], "state buffer"),
                      tuple(_int(n, "state shape") for n in _list(s["shape"], "state shape")),
                      _str(s["dtype"], "state dtype")) for s in _list(d.get("states", []), "states")],
        packings=packings or {},
    )


def _symbol(name: str, s: dict) -> symbolic.Symbol:
    """A symbol, its range checked before any expression's interval is taken over it."""
    symbol = symbolic.Symbol(name, _int(s["lo"], "lo"), _int(s["hi"], "hi"), _int(s["hint"], "hint"),
                             _str(s.get("about", ""), "about"))
    if not 0 <= symbol.lo <= symbol.hint <= symbol.hi < 2**31:
        raise ValueError(f"symbol {name}: range [{symbol.lo}, {symbol.hi}] with hint {symbol.hint}")
    return symbol


def _kernel(k: dict) -> Kernel:
    uniform = None
    if "uniform" in k:
        u = _dict(k["uniform"], "uniform")
        uniform = UniformLayout(tuple(UniformField(_str(f["name"], "field"), _int(f["offset"], "offset"),
                                                   _str(f["type"], "type"), _int(f["count"], "count"))
                                      for f in _list(u["fields"], "fields")), _int(u["size"], "uniform size"))
    overrides = _dict(k.get("overrides", {}), "overrides")
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in overrides.values()):
        raise ValueError(f"kernel {k.get('name')!r}: an override is not a number")
    return Kernel(_str(k["name"], "kernel name"), _int(k["source"], "kernel source"), _str(k["entry"], "entry"),
                  tuple(_str(b, "binding") for b in _list(k["bindings"], "bindings")), uniform,
                  tuple(sorted((name, float(v)) for name, v in overrides.items())),
                  tuple(sorted((_str(e, "engine"), _int(s, "engine source"))
                               for e, s in _dict(k.get("engine_sources", {}), "engine_sources").items())),
                  tuple(_str(f, "feature") for f in _list(k.get("requires", []), "requires")),
                  _int(k["fallback"], "fallback") if "fallback" in k else None,
                  _triple(k["workgroup_size"], "workgroup size"),
                  _int(k["workgroup_bytes"], "workgroup bytes"),
                  tuple(_str(t, "target") for t in _list(k.get("targets", []), "targets")))


def _tensor(t: dict, expr) -> Tensor:
    return Tensor(_int(t["buffer"], "output buffer"), tuple(map(expr, _list(t["shape"], "shape"))),
                  tuple(map(expr, _list(t["strides"], "strides"))), expr(t["offset"]), _str(t["dtype"], "dtype"))


def _dispatch(x: dict, expr) -> Dispatch:
    launch = _launch(x, expr, "dispatch kernel")
    options = tuple(_launch(_dict(o, "option"), expr, "option kernel") for o in _list(x.get("options", []), "options"))
    buffers = tuple(_int(b, "buffer") for b in _list(x["buffers"], "buffers"))
    result = tuple(_tensor(t, lambda v: _int(v, "result view")) for t in _list(x.get("result", []), "result"))
    return Dispatch(launch.kernel, buffers, launch.uniform, launch.grid, _str(x["node"], "node"), launch.patches,
                    launch.count, options, _int(x.get("follows", 0), "follows"), result,
                    _number(x.get("tolerance", 0), "tolerance"))


def _launch(x: dict, expr, what: str) -> Option:
    """A dispatch's or an option's kernel, Params, grid, patches and count."""
    patches = tuple(Patch(_int(q[0], "patch offset"), _str(q[1], "patch type"), expr(q[2]))
                    for q in _list(x.get("patches", []), "patches") if len(_list(q, "patch")) == 3)
    if len(patches) != len(x.get("patches", [])):
        raise ValueError("a uniform patch is not [offset, type, expression]")
    return Option(_int(x["kernel"], what), _bytes(x["uniform"]), _grid(x["grid"]), patches,
                  expr(x["count"]) if "count" in x else None)


TREE_TYPES = ("leaf", "const", "tuple", "list", "dict")
MAX_TREE_DEPTH = 64


def _tree(t: Any, depth: int = 0) -> dict:
    """A tree spec, checked node by node (docs/artifact.md, Trees)."""
    t = _dict(t, "tree")
    kind = t.get("type")
    if kind not in TREE_TYPES or depth > MAX_TREE_DEPTH:
        raise ValueError(f"bad tree node {str(t)[:80]}")
    if kind in ("tuple", "list", "dict"):
        items = [_tree(s, depth + 1) for s in _list(t["items"], "tree items")]
        if kind == "dict" and (len(_list(t["keys"], "tree keys")) != len(items)
                               or not all(isinstance(k, str) for k in t["keys"]) or len(set(t["keys"])) != len(items)):
            raise ValueError("a dict tree node's keys do not match its items")
    why = tree.class_problem(t)
    if why:
        raise ValueError(why)
    if kind == "const" and not isinstance(t.get("value"), (type(None), bool, int, float, str)):
        raise ValueError(f"a const tree node holds {type(t.get('value')).__name__}")
    return t


def _grid(g: Any) -> tuple[int, int, int]:
    return _triple(g, "grid")


def _triple(g: Any, what: str) -> tuple[int, int, int]:
    g = _list(g, what)
    if len(g) != 3:
        raise ValueError(f"{what} {str(g)[:60]} is not [x, y, z]")
    return tuple(_int(v, what) for v in g)


def _bytes(words: Any) -> bytes:
    words = _list(words, "uniform")
    if not all(_is_int(w) and 0 <= w < 2**32 for w in words):
        raise ValueError("a uniform word is not a u32")
    return struct.pack(f"<{len(words)}I", *map(int, words))


def _is_int(v: Any) -> bool:
    """Whether JSON value `v` is an integer as JavaScript reads JSON (16.0 and 1e2 are integers)."""
    return (isinstance(v, int) and not isinstance(v, bool)) or (isinstance(v, float) and v.is_integer())


def _int(v: Any, what: str) -> int:
    if not _is_int(v) or abs(v) >= 2**53:
        raise ValueError(f"{what}: {str(v)[:40]} is not an integer")
    return int(v)


def _number(v: Any, what: str) -> float:
    if not isinstance(v, (int, float)) or isinstance(v, bool):
        raise ValueError(f"{what}: {str(v)[:40]} is not a number")
    return float(v)


def _str(v: Any, what: str) -> str:
    if not isinstance(v, str):
        raise ValueError(f"{what}: {str(v)[:40]} is not a string")
    return v


def _list(v: Any, what: str) -> list:
    if not isinstance(v, list):
        raise ValueError(f"{what}: expected a list, got {type(v).__name__}")
    return v


def _dict(v: Any, what: str) -> dict:
    if not isinstance(v, dict):
        raise ValueError(f"{what}: expected an object, got {type(v).__name__}")
    return v
