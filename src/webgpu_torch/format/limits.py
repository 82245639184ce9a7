"""The numbers both runtimes must decide alike (docs/artifact.md), read from `limits.json` beside this file:
the format's version numbers, the bounds past which a file is refused, the optional WebGPU features a kernel
may require, and tuning's settings. `js/src/limits.js` is generated from the same file
(`python -m tests.golden.make`), and both test suites check that they agree."""

from __future__ import annotations

import json
from importlib import resources

LIMITS: dict = json.loads(resources.files("webgpu_torch.format").joinpath("limits.json").read_text())


def js_module() -> str:
    """The text of js/src/limits.js: LIMITS as an ES module."""
    body = json.dumps({k: v for k, v in LIMITS.items() if k != "about"}, indent=1)
    return ("// Generated from src/webgpu_torch/format/limits.json by `python -m tests.golden.make`: edit that file, "
            f"not this one.\n// {LIMITS['about']}\n\nexport const LIMITS = Object.freeze({body});\n")
