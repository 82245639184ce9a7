"""Tensor dtypes and how each is carried on the device.

WGSL has no 64-bit integers and no storable bools, so int64 travels as int32 (values are range-checked
wherever they enter: constants at compile time, inputs at call time) and bool as u32 (0 or 1).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .errors import InputError


@dataclass(frozen=True)
class DType:
    name: str  # torch's name without the prefix: "float32", "int64", "bool"
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
        DType("int32", "i32", np.dtype("<i4"), np.dtype("int32")),
        DType("int64", "i32", np.dtype("<i4"), np.dtype("int64")),
        DType("bool", "u32", np.dtype("<u4"), np.dtype("bool")),
    )
}


def category(name: str) -> int:
    """Type-promotion category: 0 bool, 1 integer, 2 floating point."""
    return 0 if name == "bool" else 1 if name.startswith("int") else 2


def promote(*operands: str | bool | int | float) -> str:
    """The dtype torch computes a binary op in: operands are tensor dtype names or Python scalars. The highest
    category wins; a scalar decides only when it is of a higher category than every tensor."""
    tensors = [o for o in operands if isinstance(o, str)]
    best = max(category(t) for t in tensors)
    scalars = [2 if isinstance(o, float) else 0 if isinstance(o, bool) else 1
               for o in operands if not isinstance(o, str)]
    if scalars and max(scalars) > best:
        return "float32" if max(scalars) == 2 else "int64"
    names = {t for t in tensors if category(t) == best}
    return "int64" if names == {"int32", "int64"} else names.pop()


# A storage dtype, not a model dtype: constant weights that the GEMM kernels read in half precision (compile
# option weights="float16"; the products accumulate in float32). No model tensor has it (lowering checks
# model tensors against DTYPES).
FLOAT16 = DType("float16", "f16", np.dtype("<f2"), np.dtype("float16"))


DEVICE_NAMES = {d.device: d.wgsl for d in (*DTYPES.values(), FLOAT16)}  # numpy dtype -> "f32", "i32", "u32", "f16"


def dtype(name: str) -> DType:
    if name == FLOAT16.name:
        return FLOAT16
    try:
        return DTYPES[name]
    except KeyError:
        raise TypeError(f"dtype {name} is not supported (supported: {', '.join(DTYPES)})") from None


def to_device(array: np.ndarray, name: str, what: str) -> np.ndarray:
    """`array` in the device representation of dtype `name`; `what` names it in errors."""
    d = dtype(name)
    if name == "int64" and array.size:
        lo, hi = int(array.min()), int(array.max())
        if lo < -(2**31) or hi >= 2**31:
            raise InputError(
                f"{what}: int64 values must fit in int32 on WebGPU (which has no 64-bit integers); "
                f"range is [{lo}, {hi}]"
            )
    return np.asarray(array, dtype=d.device, order="C")


def from_device(array: np.ndarray, name: str) -> np.ndarray:
    d = dtype(name)
    if name == "bool":
        return array != 0
    return array.astype(d.host, copy=False)
