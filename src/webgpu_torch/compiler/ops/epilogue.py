"""Epilogues: a residual add and an activation applied by the kernel that produces their input, not by
dispatches of their own. The activation codes are declared in activation.wgsl (included by every kernel that
takes an epilogue).

`fusion.py` moves an add or activation node into its producer when the producer's op is registered with
`residual=True` / `epilogue=True` and nothing else reads the producer's result. The producer's lowering
passes `node.epilogue`'s activation to its kernel through `overrides()` and `params()`, and binds
`residual(node)` (None when there is none) as an addend its kernel reads through strides.
"""

from __future__ import annotations

import math
import re

from ...format.program import Tensor
from .. import layout, wgsl
from ..graph import Epilogue

CODES = {name.lower(): int(code) for name, code in
         re.findall(r"const ACT_(\w+): u32 = (\d+)u;", wgsl.kernel_source("activation.wgsl"))}
_BIG = 3.4e38  # an absent clamp bound


def of_node(target: str, args: dict) -> Epilogue | None:
    """The epilogue equivalent of an activation node, or None when the node is not one."""
    if target in ("aten.relu.default", "aten.sigmoid.default", "aten.tanh.default", "aten.silu.default"):
        return Epilogue(target.split(".")[1])
    if target == "aten.gelu.default":
        return Epilogue("gelu_tanh" if args.get("approximate") == "tanh" else "gelu")
    if target == "aten.leaky_relu.default":
        return Epilogue("leaky_relu", float(args["negative_slope"]))
    if target == "aten.hardtanh.default":
        return Epilogue("clamp", float(args["min_val"]), float(args["max_val"]))
    if target == "aten.clamp.default":
        lo, hi = args.get("min"), args.get("max")
        return Epilogue("clamp", -_BIG if lo is None else max(float(lo), -_BIG),
                        _BIG if hi is None else min(float(hi), _BIG))
    return None


def residual(node) -> Tensor | None:
    """The residual a lowering adds before the activation (fused by fusion.py), broadcast to its output."""
    r = node.args.get("residual")
    return None if r is None else layout.broadcast_to(r, node.out.shape)


def overrides(ep: Epilogue | None) -> dict[str, int]:
    return {"ACTIVATION": CODES[ep.activation] if ep else CODES["none"]}


def params(ep: Epilogue | None) -> dict[str, float]:
    lo, hi = (ep.lo, ep.hi) if ep else (0.0, 0.0)
    return {"act_lo": lo if math.isfinite(lo) else -_BIG, "act_hi": hi if math.isfinite(hi) else _BIG}


def suffix(ep: Epilogue | None) -> str:
    """`+residual+relu` for kernel names in profiles."""
    if ep is None:
        return ""
    return "+residual" * ep.residual + (f"+{ep.activation}" if ep.activation != "none" else "")
