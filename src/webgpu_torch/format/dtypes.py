"""Tensor dtypes and how each is carried on the device.

WGSL has no 64-bit integers and no storable bools, so int64 travels as int32 (values are range-checked
wherever they enter: constants at compile time, inputs at call time) and bool as u32 (0 or 1). float16 and
bfloat16 tensors are computed and stored in float32 on the device (each 16-bit value is exact in float32;
a cast to them rounds to nearest even, kept as f32); they meet the host in their own 16 bits. numpy has no
bfloat16: its host form in numpy is the uint16 array of its bits (torch callers get torch.bfloat16).

Beside the model dtypes, storage dtypes: how some constants are kept in the artifact and read by the kernels
that widen them (`F16`, `BF16`); no model tensor has them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class DType:
    name: str  # torch's name without the prefix ("float32", "int64", "bool"), or a storage dtype's ("f16")
    wgsl: str  # element type of the device array
    device: np.dtype  # numpy dtype of the device representation
    host: np.dtype  # numpy dtype users see

    @property
    def itemsize(self) -> int:
        return self.device.itemsize


DTYPES = {
    d.name: d
    for d in (
        DType("float32", "f32", np.dtype("<f4"), np.dtype("float32")),
        DType("float16", "f32", np.dtype("<f4"), np.dtype("float16")),
        DType("bfloat16", "f32", np.dtype("<f4"), np.dtype("uint16")),  # host: its bits (numpy has no bfloat16)
        DType("int32", "i32", np.dtype("<i4"), np.dtype("int32")),
        DType("int64", "i32", np.dtype("<i4"), np.dtype("int64")),
        DType("bool", "u32", np.dtype("<u4"), np.dtype("bool")),
    )
}
FLOATS = ("float32", "float16", "bfloat16")  # the floating model dtypes: all computed in f32 on the device


def category(name: str) -> int:
    """Type-promotion category: 0 bool, 1 integer, 2 floating point."""
    return 0 if name == "bool" else 1 if name.startswith("int") else 2


def is_float(name: str) -> bool:
    return name in FLOATS


def promote(*operands: str | bool | int | float) -> str:
    """The dtype torch computes a binary op in: operands are tensor dtype names or Python scalars. The highest
    category wins; a scalar decides only when it is of a higher category than every tensor. Among floats the
    widest wins, and float16 with bfloat16 gives float32."""
    tensors = [o for o in operands if isinstance(o, str)]
    best = max(category(t) for t in tensors)
    scalars = [2 if isinstance(o, float) else 0 if isinstance(o, bool) else 1
               for o in operands if not isinstance(o, str)]
    if scalars and max(scalars) > best:
        return "float32" if max(scalars) == 2 else "int64"
    names = {t for t in tensors if category(t) == best}
    if names == {"int32", "int64"} or names == {"float16", "bfloat16"} or "float32" in names:
        return "int64" if best == 1 else "float32"
    return names.pop()


# Storage dtypes, not model dtypes: constants that kernels read in 16 bits and widen to f32 as they load them.
# F16: float16 weights (compile option weights="float16", or a float16 model's GEMM weights), read as WGSL
# f16 by kernels that require shader-f16 (each with a float32 fallback). BF16: bfloat16 weights, two to a u32
# word (the lower half first), widened by the kernels that read them (bitcast<f32>(bits << 16)): no feature.
F16 = DType("f16", "f16", np.dtype("<f2"), np.dtype("float16"))
BF16 = DType("bf16", "u32", np.dtype("<u2"), np.dtype("uint16"))
STORAGE = {F16.name: F16, BF16.name: BF16}


# numpy device dtype -> WGSL element: "f32", "i32", "u32", "f16"
DEVICE_NAMES = {d.device: d.wgsl for d in (*DTYPES.values(), *STORAGE.values())}


def dtype(name: str) -> DType:
    try:
        return DTYPES[name] if name in DTYPES else STORAGE[name]
    except KeyError:
        raise TypeError(f"dtype {name} is not supported (supported: {', '.join(DTYPES)})") from None


def scalar(value: float | int | bool, name: str) -> np.ndarray:
    """A 0-d array holding a Python number as an operand of `name` arithmetic (float dtypes compute in f32)."""
    return np.full((), value, np.float32 if is_float(name) else dtype(name).host)


def to_device(array: np.ndarray, name: str, what: str) -> np.ndarray:
    """`array` in the device representation of dtype `name`; `what` names it in errors. A bfloat16 array may
    be given as its bits (uint16) or as float values."""
    d = dtype(name)
    if name == "int64" and array.size:
        lo, hi = int(array.min()), int(array.max())
        if lo < -(2**31) or hi >= 2**31:
            raise InputError(
                f"{what}: int64 values must fit in int32 on WebGPU (which has no 64-bit integers); "
                f"range is [{lo}, {hi}]"
            )
    if name == "bfloat16" and array.dtype == np.uint16:
        return widen_bfloat16(array)
    return np.asarray(array, dtype=d.device, order="C")


def from_device(array: np.ndarray, name: str) -> np.ndarray:
    d = dtype(name)
    if name == "bool":
        return array != 0
    if name == "bfloat16":
        return round_bfloat16(array)
    return array.astype(d.host, copy=False)


def widen_bfloat16(bits: np.ndarray) -> np.ndarray:
    """bfloat16 bit patterns (uint16) as float32 values (exact), in their shape (0-d included)."""
    return (np.asarray(bits, np.uint16, order="C").astype(np.uint32) << 16).view(np.float32)


def round_bfloat16(values: np.ndarray) -> np.ndarray:
    """float32 values rounded to nearest even bfloat16, as its bit patterns (uint16) in their shape (0-d
    included: np.asarray keeps it, np.ascontiguousarray would make it 1-d); NaN stays NaN (quiet)."""
    bits = np.asarray(values, np.float32, order="C").view(np.uint32).astype(np.uint64)
    rounded = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(values)
    return np.where(nan, ((bits >> 16) | 0x40).astype(np.uint16), rounded) if nan.any() else rounded
