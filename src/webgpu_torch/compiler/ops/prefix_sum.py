"""Exclusive prefix sums of u32 counts on the device (prefix_sum.wgsl), for ops that need each element's
rank among the selected ones: masked_scatter's k-th true element takes the k-th source value. Three
dispatches, block scans, a scan of the block totals, and their sums added back, at any length.
"""

from __future__ import annotations

from ...format.program import Tensor
from ..builder import Builder, KernelSpec

FILE = "prefix_sum.wgsl"
BLOCK = 1024  # counts per scan_blocks workgroup


def exclusive_sum(ctx: Builder, counts: Tensor) -> Tensor:
    """int32 [n]: out[i] = counts[0] + ... + counts[i - 1] of a contiguous 1-d bool or int32 view."""
    n = counts.shape[0]
    blocks = -(-n // BLOCK)
    out = ctx.new((n,), "int32")
    totals = ctx.new((blocks,), "int32")
    params = {"n": n, "blocks": blocks}
    grids = {"scan_blocks": {"workgroups": blocks}, "scan_totals": {"workgroups": 1}, "add_totals": {"elements": n}}
    for entry, grid in grids.items():
        ctx.dispatch(KernelSpec.of(FILE, f"prefix_sum[{entry}]", entry=entry), [counts, out, totals], params, **grid)
    return out
