"""Fitting a program to its device (docs/artifact.md, Portability and Float16): which kind of adapter it is,
the program as the device runs it, and what it cannot hold. tests/conformance/device_fit.json holds the
decisions as vectors, which js/src/fit.js (this module's twin) replays too.

A program's `requires` (what its dispatches as written need) must be features the device has; a kernel that
only appears as an option may need anything, known to this runtime or not: tuning skips an option whose
kernel `runs_on` the device says no to (a feature it lacks, a workgroup past its limits). A device without
`shader-f16` runs each kernel that needs it as its `fallback` kernel (the same kernel in float32, with the
same bindings and Params) over float32 copies of the float16 constants (exact), its float16 activations
stored as float32: strides and offsets count elements, so views and uniforms are unchanged (a group's result
views of float16 activations become float32 views). The fitted program must then be within the device's
limits and the memory cap (`limit_problem`), checked before anything is allocated.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import replace

import numpy as np

from ..format.dtypes import F16 as F16_STORAGE
from ..format.errors import DeviceError
from ..format.limits import LIMITS
from ..format.program import F16, Kernel, Program

CPU = "cpu"  # the kind of adapter whose invocations run on CPU threads (Kernel.targets, the memory cap)


def kebab(name: str) -> str:
    """A WebGPU limit's name as wgpu-py spells it: maxComputeWorkgroupSizeX -> max-compute-workgroup-size-x."""
    return "".join(f"-{c.lower()}" if c.isupper() else c for c in name)


# WebGPU's defaults, which every adapter offers: what a limit the device does not report allows.
DEFAULT_LIMITS = {kebab(name): value for name, value in LIMITS["webgpu_limits"].items()}
# The device limits a kernel's declared workgroup is checked against.
WORKGROUP_LIMITS = ("max-compute-workgroup-size-x", "max-compute-workgroup-size-y", "max-compute-workgroup-size-z",
                    "max-compute-invocations-per-workgroup", "max-compute-workgroup-storage-size")


def adapter_kind(info: dict) -> str:
    """"cpu" for an adapter whose invocations run on CPU threads (SwiftShader, lavapipe, WARP): Dawn and
    wgpu-native say so in `adapter_type`, browsers and Dawn for Node by `is_fallback_adapter`
    (`isFallbackAdapter`) or an `architecture` of "software"; else "gpu". Tuning (which kernels it times
    first) and the memory cap (a CPU adapter's memory is the host's) both ask this."""
    cpu = str(info.get("adapter_type", "")).lower() == CPU or info.get("is_fallback_adapter") is True
    return CPU if cpu or info.get("architecture") == "software" else "gpu"


def workgroup_problem(kernel: Kernel, limits: dict[str, int]) -> str | None:
    """Why a workgroup of `kernel` exceeds the device's `limits`, or None when it fits."""
    size_x, size_y, size_z, invocations, storage = (limits.get(n, DEFAULT_LIMITS[n]) for n in WORKGROUP_LIMITS)
    x, y, z = kernel.workgroup_size
    if x > size_x or y > size_y or z > size_z or x * y * z > invocations:
        return (f"its workgroup of {x}×{y}×{z} invocations exceeds this adapter's {size_x}×{size_y}×{size_z}, "
                f"{invocations} in all (maxComputeWorkgroupSize*, maxComputeInvocationsPerWorkgroup)")
    if kernel.workgroup_bytes > storage:
        return (f"its {kernel.workgroup_bytes:,} bytes of workgroup memory exceed this adapter's {storage:,} "
                "(maxComputeWorkgroupStorageSize)")
    return None


def allocated(size: int) -> int:
    """The bytes a buffer of `size` takes on the device: a multiple of 16 (kernels may bind any as vec4s)."""
    return -(-size // 16) * 16


def limit_problem(program: Program, limits: dict[str, int], cap, shared: Collection[int] = ()) -> str | None:
    """Why a device with `limits` (as wgpu-py spells them; WebGPU's defaults where absent) and the memory cap
    `cap` (runtime/memory.py's Cap) cannot hold `program` as fitted, or None: every buffer within one binding
    and one buffer, all of them but those `shared` with a program already loaded within the cap, and each
    kernel a dispatch runs within a shader stage's storage bindings, uniform size and workgroup limits."""
    lim = {**DEFAULT_LIMITS, **limits}
    binding, largest = lim["max-storage-buffer-binding-size"], lim["max-buffer-size"]
    for i, b in enumerate(program.buffers):
        if allocated(b.size) > min(binding, largest):
            what = f"{b.role} buffer {i}" + (f" ({b.name})" if b.name else "")
            return (f"{what} needs {allocated(b.size):,} bytes; this adapter binds at most {binding:,} "
                    f"(maxStorageBufferBindingSize; maxBufferSize {largest:,})")
    total = sum(allocated(b.size) for i, b in enumerate(program.buffers) if i not in shared)
    if total > cap.bytes:
        return (f"the program needs {total / 2**30:.2f} GiB of buffers, over the {cap.bytes / 2**30:.2f} GiB this "
                f"process allows: {cap.why}")
    storage, uniform = lim["max-storage-buffers-per-shader-stage"], lim["max-uniform-buffer-binding-size"]
    for k in sorted({d.kernel for d in program.dispatches}):
        kernel = program.kernels[k]
        if kernel.storage_bindings > storage:
            return (f"kernel {kernel.name} binds {kernel.storage_bindings} storage buffers; this adapter allows "
                    f"{storage} per shader stage (maxStorageBuffersPerShaderStage)")
        if kernel.uniform is not None and kernel.uniform.size > uniform:
            return (f"kernel {kernel.name}: its {kernel.uniform.size}-byte Params exceed this adapter's {uniform}-byte "
                    "uniform bindings (maxUniformBufferBindingSize)")
        too_large = workgroup_problem(kernel, lim)
        if too_large:
            return f"kernel {kernel.name}: {too_large}"
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
