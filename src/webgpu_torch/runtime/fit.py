"""Fitting a program to its device (docs/artifact.md, Portability and Float16).

A program's `requires` (what its dispatches as written need) must be features the device has; a kernel that
only appears as an option may need anything, known to this runtime or not: tuning skips an option whose
kernel `runs_on` the device says no to (a feature it lacks, a workgroup past its limits). A device without
`shader-f16` runs each kernel that needs it as its `fallback` kernel (the same kernel in float32, with the
same bindings and Params) over float32 copies of the float16 constants (exact), its float16 activations
stored as float32: strides and offsets count elements, so views and uniforms are unchanged (a group's result
views of float16 activations become float32 views).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..format.dtypes import F16 as F16_STORAGE
from ..format.errors import DeviceError
from ..format.program import F16, Kernel, Program

# The device limits a kernel's declared workgroup is checked against (WebGPU's names, as wgpu-py spells them).
WORKGROUP_LIMITS = ("max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
                    "max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size")
# WebGPU's defaults, which every adapter offers.
DEFAULT_LIMITS = dict(zip(WORKGROUP_LIMITS, (256, 256, 64, 256, 16384), strict=True))


def workgroup_problem(kernel: Kernel, limits: dict[str, int]) -> str | None:
    """Why a workgroup of `kernel` exceeds the device's `limits`, or None when it fits."""
    lim = {name: limits.get(name, DEFAULT_LIMITS[name]) for name in WORKGROUP_LIMITS}
    size_x, size_y, size_z, invocations, storage = (lim[n] for n in WORKGROUP_LIMITS)
    x, y, z = kernel.workgroup_size
    if x > size_x or y > size_y or z > size_z or x * y * z > invocations:
        return (f"its workgroup of {x}×{y}×{z} invocations exceeds this adapter's {size_x}×{size_y}×{size_z}, "
                f"{invocations} in all (maxComputeWorkgroupSize*, maxComputeInvocationsPerWorkgroup)")
    if kernel.workgroup_bytes > storage:
        return (f"its {kernel.workgroup_bytes:,} bytes of workgroup memory exceed this adapter's {storage:,} "
                "(maxComputeWorkgroupStorageSize)")
    return None


def runs_on(kernel: Kernel, features, limits: dict[str, int]) -> bool:
    """Whether a device with `features` and `limits` can run `kernel` (as fitted by for_device)."""
    return set(kernel.requires) <= set(features) and workgroup_problem(kernel, limits) is None


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
                                                                  for o in d.options),
                          result=tuple(replace(t, dtype="float32") if t.dtype == F16_STORAGE else t
                                       for t in d.result))
                  for d in program.dispatches]
    return program.derived(buffers=buffers, constants=constants, dispatches=dispatches)


def uses_f16(program: Program) -> bool:
    return any(F16 in program.kernels[k].requires for d in program.dispatches
               for k in (d.kernel, *(o.kernel for o in d.options)))


def for_device(program: Program, features) -> Program:
    """`program` as a device with `features` runs it; DeviceError when its dispatches need a feature the
    device lacks (a program saved with an option forced)."""
    lacking = [f for f in program.requires if f not in features]
    if lacking:
        raise DeviceError(f"the program needs the {', '.join(lacking)} feature{'s' * (len(lacking) > 1)}, which "
                          "this device lacks (its dispatches were saved with such a kernel chosen; compile it "
                          "without forcing one)")
    return program if F16 in features or not uses_f16(program) else without_f16(program)
