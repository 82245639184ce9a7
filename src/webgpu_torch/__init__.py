"""webgpu_torch: compile PyTorch programs (torch.export) to WebGPU compute dispatches and run them anywhere.

    ep = torch.export.export(model, (x,))
    session = webgpu_torch.compile(ep)               # a Session: session.program is the compiled Program
    y = session(x)                                   # runs on the GPU through WebGPU
    session.save("model.wgpt")
    webgpu_torch.load("model.wgpt")(x.numpy())       # also in a process without torch

Only compiling needs torch; loading and running a saved program needs numpy and a WebGPU engine.
"""

from __future__ import annotations

from .compiler import compile, compile_module
from .format.errors import ArtifactError, DeviceError, DeviceIndexError, UnsupportedError, WebGPUTorchError
from .format.program import Program
from .runtime.device_tensor import DeviceTensor
from .runtime.engine import device_info
from .runtime.session import Session

load = Session.load

__version__ = "0.1.0"

__all__ = ["ArtifactError", "DeviceError", "DeviceIndexError", "DeviceTensor", "Program", "Session", "UnsupportedError",
           "WebGPUTorchError", "compile", "compile_module", "device_info", "load"]
