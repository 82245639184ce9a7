"""Geometry shared by the row-wise kernels (layer_norm, softmax, cumsum, reductions): how many threads share a
row, and the Params that address rows of a strided view. row.wgsl is their shared WGSL."""

from __future__ import annotations

from math import prod

from ...format import symbolic
from ...format.program import Tensor
from .. import wgsl

# Elements each thread of a row folds (at least, up to the workgroup's width): combining a row costs barriers
# (log2(ROW) + 2 in row.wgsl, 2 in row.subgroups.wgsl), so one thread per element spends short rows on them.
PER_THREAD = 4


def row_threads(n, file: str) -> int:
    """Threads sharing a row of n elements: the least power of two that gives each at most PER_THREAD of
    them, at most the workgroup of `file`'s kernels (its WORKGROUP declaration; for a dynamic n, chosen by
    its hint: any count is correct, the kernels stride over the row). A dispatch of such a kernel has one
    invocation per thread of a row: `elements=rows * row`."""
    width = wgsl.constant(wgsl.kernel_source(file), "WORKGROUP")
    n = -(-symbolic.hint(n) // PER_THREAD)
    row = 1
    while row < min(n, width):
        row *= 2
    return row


def row_params(x: Tensor, dim: int) -> dict:
    """Params for a kernel that works along `dim` of `x` row by row, the output contiguous in x's shape: the
    other dims enumerate rows (with their strides), `inner` is the element count of the dims after `dim`; each
    row whole (one slice of n: a kernel that splits rows sets `slices` and `slice_len`)."""
    kept = [d for d in range(x.ndim) if d != dim]
    n = x.shape[dim] if x.ndim else 1
    return {"rows": prod(x.shape[d] for d in kept), "n": n, "inner": prod(x.shape[d] for d in kept[dim:]),
            "offset": x.offset,
            "stride": x.strides[dim] if x.ndim else 0, "kept_ndim": len(kept),
            "kept_shape": [x.shape[d] for d in kept], "kept_strides": [x.strides[d] for d in kept],
            "slices": 1, "slice_len": n}
