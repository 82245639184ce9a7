"""webgpu_torch: compile PyTorch programs (torch.export) to WebGPU compute dispatches and run them anywhere.

    ep = torch.export.export(model, (x,))
    session = webgpu_torch.compile(ep)               # a Session: session.program is the compiled Program
    y = session(x)                                   # runs on the GPU through WebGPU
    session.save("model.wgpt")
    webgpu_torch.load("model.wgpt")(x.numpy())       # also in a process without torch

Only compiling needs torch; loading and running a saved program needs numpy and a WebGPU engine.
"""

from __future__ import annotations

from typing import Any

from .format.errors import ArtifactError, CallTimeout, DeviceError, DeviceIndexError, UnsupportedError, WebGPUTorchError
from .format.program import Program
from .runtime.device_tensor import DeviceTensor
from .runtime.engine import device_info
from .runtime.session import Session

load = Session.load


def __getattr__(name: str) -> Any:
    """`compile` and `compile_module`, imported on first use: loading a saved program imports no compiler."""
    if name in ("compile", "compile_module"):
        from . import compiler

        return getattr(compiler, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__version__ = "0.1.0"

__all__ = ["ArtifactError", "CallTimeout", "DeviceError", "DeviceIndexError", "DeviceTensor", "Program", "Session",
           "UnsupportedError", "WebGPUTorchError", "compile", "compile_module", "device_info", "load"]
