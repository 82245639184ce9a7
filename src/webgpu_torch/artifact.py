"""The saved-program file: one file, language-neutral, versioned. Never pickle.

Layout (all integers little-endian):
    0   8 bytes   magic  b"WGPUTRCH"
    8   u32       container version (1)
    12  u32       reserved, 0
    16  u64       header length H (bytes of UTF-8 JSON, space-padded to a multiple of 64)
    24  u64       data length D
    32  H bytes   header: {"program": Program.to_json(), "tensors": [...], "data_crc32": ...}
    32+H D bytes  data: each constant's raw little-endian bytes at a 64-byte aligned offset
Each tensor entry is {"buffer", "dtype" (numpy's "<f4", "<i4", "<u4"), "shape", "offset", "nbytes"}, offsets
counted from the start of the data. A JavaScript loader reads the header with JSON.parse and each constant
as a typed array over the data (the alignment makes that zero-copy).
"""

from __future__ import annotations

import json
import struct
import zlib
from math import prod
from pathlib import Path

import numpy as np

from .errors import ArtifactError
from .program import FORMAT_VERSION, Program

MAGIC = b"WGPUTRCH"
CONTAINER_VERSION = 1
PREAMBLE = struct.Struct("<8sIIQQ")
ALIGN = 64
DEVICE_DTYPES = {"<f4", "<i4", "<u4", "<f2"}


def _pad(n: int) -> int:
    return -(-n // ALIGN) * ALIGN


def save(program: Program, path: str | Path) -> None:
    tensors, chunks, offset = [], [], 0
    for buffer, array in sorted(program.constants.items()):
        data = np.ascontiguousarray(array).tobytes()
        tensors.append({"buffer": buffer, "dtype": array.dtype.str, "shape": list(array.shape),
                        "offset": offset, "nbytes": len(data)})
        chunks.append(data + b"\0" * (_pad(len(data)) - len(data)))
        offset += _pad(len(data))
    blob = b"".join(chunks)
    header = {"program": program.to_json(), "tensors": tensors, "data_crc32": zlib.crc32(blob)}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (_pad(len(text)) - len(text))
    with open(path, "wb") as f:
        f.write(PREAMBLE.pack(MAGIC, CONTAINER_VERSION, 0, len(text), len(blob)))
        f.write(text)
        f.write(blob)


def load(path: str | Path) -> Program:
    """Read and fully validate a saved program; raises ArtifactError naming what is wrong."""
    where = str(path)
    if not Path(path).is_file():
        raise ArtifactError(f"{where}: {'not a file' if Path(path).exists() else 'no such file'}")
    raw = Path(path).read_bytes()
    if raw[:len(MAGIC)] != MAGIC[:len(raw)] or not raw:
        what = "an empty file" if not raw else f"it does not start with {MAGIC.decode()}"
        raise ArtifactError(f"{where}: not a webgpu_torch program ({what})")
    if len(raw) < PREAMBLE.size:
        raise ArtifactError(f"{where}: truncated ({len(raw)} bytes) — not a complete webgpu_torch program")
    _, version, _, header_len, data_len = PREAMBLE.unpack_from(raw)
    if version != CONTAINER_VERSION:
        raise ArtifactError(f"{where}: container version {version}; this webgpu_torch reads version "
                            f"{CONTAINER_VERSION}")
    expected = PREAMBLE.size + header_len + data_len
    if len(raw) != expected:
        state = "truncated" if len(raw) < expected else "has trailing bytes"
        raise ArtifactError(f"{where}: {state}: {len(raw):,} bytes, the header says {expected:,}")
    try:
        header = json.loads(raw[PREAMBLE.size:PREAMBLE.size + header_len])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ArtifactError(f"{where}: damaged header: {e}") from None
    data = memoryview(raw)[PREAMBLE.size + header_len:]
    if zlib.crc32(data) != header.get("data_crc32"):
        raise ArtifactError(f"{where}: tensor data is damaged (checksum mismatch)")
    try:
        version = header["program"]["version"]
        if version != FORMAT_VERSION:
            raise ArtifactError(f"{where}: program format version {version}; this webgpu_torch reads "
                                f"version {FORMAT_VERSION} — recompile the model with this version")
        constants = _read_tensors(header["tensors"], data, where)
        program = Program.from_json(header["program"], constants)
        program.check()
    except ArtifactError:
        raise
    except (KeyError, TypeError, ValueError, IndexError, struct.error) as e:
        raise ArtifactError(f"{where}: malformed program: {type(e).__name__}: {e}") from None
    return program


def _read_tensors(entries: list[dict], data: memoryview, where: str) -> dict[int, np.ndarray]:
    out = {}
    for t in entries:
        if t["dtype"] not in DEVICE_DTYPES:
            raise ArtifactError(f"{where}: tensor for buffer {t['buffer']} has unsupported dtype {t['dtype']}")
        dtype = np.dtype(t["dtype"])
        shape = tuple(int(s) for s in t["shape"])
        nbytes, offset = int(t["nbytes"]), int(t["offset"])
        if nbytes != prod(shape) * dtype.itemsize or offset < 0 or offset + nbytes > len(data):
            raise ArtifactError(f"{where}: tensor for buffer {t['buffer']} is mis-sized or out of bounds "
                                f"(shape {list(shape)}, {nbytes} bytes at {offset}, data is {len(data)} bytes)")
        out[int(t["buffer"])] = np.frombuffer(data, dtype, prod(shape), offset).reshape(shape)
    return out
