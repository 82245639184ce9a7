"""Errors users see. Each names what is wrong and, where it can, what to do."""

from __future__ import annotations

import os
import sys
import warnings


class WebGPUTorchError(Exception):
    """Base class of every error this package raises on purpose."""


class UnsupportedError(WebGPUTorchError):
    """The exported program uses an op, dtype or shape that has no WebGPU lowering; found at compile time."""

    def __init__(self, problems: list[str], subject: str = "unsupported node"):
        self.problems = problems
        head = f"cannot compile for WebGPU: {len(problems)} {subject}{'s' * (len(problems) != 1)}"
        super().__init__("\n".join([head, *problems]))


class ArtifactError(WebGPUTorchError):
    """A saved program file is not one, is damaged, or comes from an incompatible version."""


class InputError(WebGPUTorchError, ValueError):
    """A call's input has the wrong shape or a value the device cannot hold (int64 beyond int32)."""


class InputTypeError(WebGPUTorchError, TypeError):
    """A call's input has the wrong dtype, or the inputs do not have the structure the model was exported with."""


class DeviceIndexError(WebGPUTorchError, IndexError):
    """A kernel found an index out of range (an embedding id past the table, say), as torch raises IndexError."""


class DeviceError(WebGPUTorchError):
    """No usable WebGPU adapter, or the adapter cannot hold the program."""


class CallTimeout(DeviceError):
    """Work did not finish in time (the device may still be running it); its program refuses further calls."""


class TuningWarning(RuntimeWarning):
    """Tuning left a kernel out: it does not compile on this device, or computes other numbers than the
    compiler's default. The load goes on without it."""


def warn(message: str, category: type[Warning]) -> None:
    """Issue a warning attributed to the caller's first frame outside this package (its load, its call)."""
    package = os.path.dirname(os.path.dirname(__file__)) + os.sep
    frame, level = sys._getframe(1), 2  # stacklevel 2: the frame that called warn()
    while frame is not None and frame.f_code.co_filename.startswith(package):
        frame, level = frame.f_back, level + 1
    warnings.warn(message, category, stacklevel=level)
