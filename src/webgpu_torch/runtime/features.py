"""Fitting a program to the optional features of its device (docs/artifact.md, Float16).

A device without `shader-f16` runs each kernel that needs it as its `fallback` kernel (the same kernel in
float32, with the same bindings and Params) over float32 copies of the float16 constants (exact): strides and
offsets count elements, so views and uniforms are unchanged. Kernels that need `subgroups` or subgroup
matrices are only ever options, which tuning skips on a device without them.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..program import F16, Program


def without_f16(program: Program) -> Program:
    """`program` with no dispatch or constant that needs `shader-f16`."""
    def swap(k: int) -> int:
        kernel = program.kernels[k]
        return k if kernel.fallback is None else kernel.fallback  # a matrix kernel (an option) has none

    half = {i for i, a in program.constants.items() if a.dtype == np.float16}
    constants = {i: a.astype(np.float32) if i in half else a for i, a in program.constants.items()}
    buffers = [replace(b, size=max(4, constants[i].nbytes)) if i in half else b
               for i, b in enumerate(program.buffers)]
    dispatches = [replace(d, kernel=swap(d.kernel), options=tuple(replace(o, kernel=swap(o.kernel))
                                                                  for o in d.options))
                  for d in program.dispatches]
    return replace(program, buffers=buffers, constants=constants, dispatches=dispatches)


def uses_f16(program: Program) -> bool:
    return any(F16 in program.kernels[k].requires for d in program.dispatches
               for k in (d.kernel, *(o.kernel for o in d.options)))


def for_device(program: Program, features) -> Program:
    """`program` as this device can run it."""
    return program if F16 in features or not uses_f16(program) else without_f16(program)
