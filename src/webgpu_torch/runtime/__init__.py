"""The runtime: the only package that imports a WebGPU engine."""

from .engine import device_info, get_engine
from .executor import Executor

__all__ = ["Executor", "device_info", "get_engine"]
