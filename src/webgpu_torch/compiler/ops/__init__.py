"""Op families: one module per family, each with its `.wgsl` kernels beside it (same stem).

Importing this package imports every family module, which registers its ops; nothing lists them centrally.
"""

from __future__ import annotations

import importlib
import pkgutil

from .registry import OPS, OPTIONS, REFUSED, NodeView, OpCase, OpDef, Refusal, refuse, register, register_option

__all__ = ["OPS", "OPTIONS", "REFUSED", "NodeView", "OpCase", "OpDef", "Refusal", "all_cases", "refuse", "register",
           "register_option"]

FAMILIES = sorted(m.name for m in pkgutil.iter_modules(__path__) if m.name != "registry")
for _name in FAMILIES:
    importlib.import_module(f"{__name__}.{_name}")


def all_cases() -> dict[str, list[OpCase]]:
    """Every family's test cases, by family module name (each family lists them in `cases()`)."""
    out = {}
    for name in FAMILIES:
        module = importlib.import_module(f"{__name__}.{name}")
        if hasattr(module, "cases"):
            out[name] = list(module.cases())
    return out
