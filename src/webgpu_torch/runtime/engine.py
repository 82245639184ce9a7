"""Choosing a WebGPU engine and opening its device.

Two engines share wgpu-py's API: Dawn (`wgpudawn`, Chrome's implementation) and wgpu-native (`wgpu`, naga).
The default is Dawn when it yields an adapter, else wgpu-native; `WEBGPU_TORCH_ENGINE=dawn|wgpu` (or the
`engine` argument) forces one. The device is opened once per engine and process, with the adapter's own
limits (not WebGPU's defaults: those cap a binding at 128 MiB) and the optional features we can use.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from dataclasses import dataclass
from functools import cache
from typing import Any

from ..errors import DeviceError

ENV_VAR = "WEBGPU_TORCH_ENGINE"
MODULES = {"dawn": "wgpudawn", "wgpu": "wgpu"}
OPTIONAL_FEATURES = ("timestamp-query", "shader-f16", "subgroups", "chromium-experimental-subgroup-matrix")
# Dawn offers subgroup matrices only with unsafe APIs allowed, and shader-f16 on NVIDIA's Vulkan driver only
# when asked; both are toggles of its instance, set before the first adapter is requested.
DAWN_TOGGLES = ("allow_unsafe_apis", "vulkan_enable_f16_on_nvidia")
# What the matrix-unit kernels need of subgroup matrices (docs/artifact.md, "requires"): f16 operands and f32
# results 16 x 16 x 16, in subgroups of at most 32 invocations, and 32 KiB of workgroup memory.
MATRIX_SHAPE = {"component_type": "f16", "result_component_type": "f32", "m": 16, "n": 16, "k": 16}
MATRIX_MAX_SUBGROUP = 32
MATRIX_WORKGROUP_BYTES = 32768

NO_ADAPTER_HELP = (
    "No WebGPU adapter was found. On a machine without a GPU, install the software Vulkan driver "
    "(lavapipe): on Debian 12, `scripts/setup` does it (Dawn needs Mesa >= 25, from the bookworm-backports "
    "suite); or set WEBGPU_TORCH_ENGINE=wgpu to use wgpu-native, which also runs on Mesa 22."
)


@dataclass(frozen=True)
class Engine:
    name: str  # "dawn" | "wgpu"
    wgpu: Any  # the engine's module, with wgpu-py's API
    adapter: Any
    device: Any

    @property
    def limits(self) -> dict[str, int]:
        return dict(self.device.limits)


def engine_names(choice: str | None = None) -> list[str]:
    choice = (choice or os.environ.get(ENV_VAR) or "auto").lower()
    if choice == "auto":
        return ["dawn", "wgpu"]
    if choice not in MODULES:
        raise DeviceError(f"unknown WebGPU engine {choice!r} (from {ENV_VAR} or engine=): use dawn, wgpu or auto")
    return [choice]


def get_engine(choice: str | None = None) -> Engine:
    errors = []
    for name in engine_names(choice):
        try:
            return _open(name)
        except Exception as e:  # an engine that fails to load or finds no adapter: try the next
            errors.append(f"  {name} ({MODULES[name]}): {e}")
    raise DeviceError("\n".join([NO_ADAPTER_HELP, "Tried:", *errors]))


@cache
def _open(name: str) -> Engine:
    wgpu = importlib.import_module(MODULES[name])
    if name == "dawn":
        _set_dawn_toggles()
    adapter = wgpu.gpu.request_adapter_sync(power_preference="high-performance")
    if adapter is None:
        raise DeviceError("the engine found no adapter")
    features = [f for f in OPTIONAL_FEATURES if f in adapter.features]
    if "chromium-experimental-subgroup-matrix" in features and not _matrix_units(adapter):
        features.remove("chromium-experimental-subgroup-matrix")
    # Every limit the adapter offers, except dynamic-offset bindings (unused here; Dawn warns when asked).
    limits = {k: v for k, v in adapter.limits.items()
              if v and k.startswith(("max", "min")) and not k.startswith("max-dynamic")}
    device = adapter.request_device_sync(required_features=features, required_limits=limits)
    return Engine(name, wgpu, adapter, device)


def _set_dawn_toggles() -> None:
    from wgpudawn.backends.dawn import extras

    known = extras.all_toggles()
    # RuntimeError: the instance exists already (made by another user of wgpudawn); it keeps its toggles.
    with contextlib.suppress(RuntimeError):
        extras.set_instance_extras(enable_toggles=[t for t in DAWN_TOGGLES if t in known])


def _matrix_units(adapter) -> bool:
    """Whether Dawn's adapter offers subgroup matrices of MATRIX_SHAPE as the matrix-unit kernels need them."""
    from wgpudawn.backends.dawn import extras

    configs = extras.get_adapter_properties(adapter).get("subgroup_matrix_configs", [])
    fits = any(all(c.get(k) == v for k, v in MATRIX_SHAPE.items()) and c["max_subgroup_size"] <= MATRIX_MAX_SUBGROUP
               for c in configs)
    return fits and adapter.limits.get("max-compute-workgroup-storage-size", 0) >= MATRIX_WORKGROUP_BYTES


def device_info(engine: str | None = None) -> dict:
    """What runs our programs: engine, adapter, backend, adapter type, optional features and limits."""
    e = get_engine(engine)
    info = e.adapter.info
    return {
        "engine": e.name,
        "engine_module": f"{MODULES[e.name]} {e.wgpu.__version__}",
        "adapter": info.get("device", ""),
        "vendor": info.get("vendor", ""),
        "description": info.get("description", ""),
        "backend": info.get("backend_type", ""),
        "adapter_type": info.get("adapter_type", ""),
        "features": {f: f in e.device.features for f in OPTIONAL_FEATURES},
        "limits": e.limits,
    }
