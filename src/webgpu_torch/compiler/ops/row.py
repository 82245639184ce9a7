"""Geometry shared by the row-wise kernels (layer_norm, softmax, cumsum, reductions): how many threads share a
row, the Params that address rows of a strided view, and when a few long rows are split across workgroups.
row.wgsl is their shared WGSL."""

from __future__ import annotations

from math import prod

from ...format import symbolic
from ...format.program import Tensor
from .. import wgsl
from ..builder import Builder, KernelSpec

# Elements each thread of a row folds (at least, up to the workgroup's width): combining a row costs barriers
# (log2(ROW) + 2 in row.wgsl, 2 in row.subgroups.wgsl), so one thread per element spends short rows on them.
PER_THREAD = 4
SLICE_MIN = 1024  # elements a slice of a split row keeps at least (4 a thread)
ENOUGH_SLICES = 256  # workgroups a split aims for over all its rows
MIN_SLICES = 4  # fewer slices than this: a row stays whole


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


def split_slices(rows, n) -> int:
    """Slices per row when `rows` rows of `n` elements are split across workgroups (one workgroup would leave a
    GPU idle): enough for ENOUGH_SLICES in all, each of SLICE_MIN elements or more; 1 (no split) below
    MIN_SLICES, or for sizes known only at run time."""
    if not (isinstance(rows, int) and isinstance(n, int)) or rows == 0:
        return 1
    slices = min(-(-n // SLICE_MIN), -(-ENOUGH_SLICES // rows))
    return slices if slices >= MIN_SLICES else 1


def dispatch_rows(ctx: Builder, file: str, name: str, first_entry: str, operands: list[Tensor], params: dict,
                  pairs: str = "int32", **spec) -> None:
    """The dispatches of a row kernel that may split its rows (softmax.wgsl, scan.wgsl) over `params`
    (row_params): each row whole by `main`, ROW threads a row; or, for a few long rows (`split_slices`),
    `first_entry` then `main` over slices of a workgroup each, passing a pair of 32-bit words per slice through
    a scratch buffer bound after `operands` (one word, unused, where rows are whole). `pairs` is the dtype the
    words hold, which tuning compares a candidate's by (float32: within tolerance; int32: exactly). `name` is
    the kernel's name without its closing bracket; `spec`: KernelSpec.of's consts, requires and overrides (ROW
    set here)."""
    overrides = spec.pop("overrides", {})
    slices = split_slices(params["rows"], params["n"])
    if slices == 1:
        row = row_threads(params["n"], file)
        ctx.dispatch(KernelSpec.of(file, name + "]", overrides={**overrides, "ROW": row}, **spec),
                     [*operands, ctx.new((1,), "int32")], params, elements=params["rows"] * row)
        return
    split = {**params, "slices": slices, "slice_len": -(-params["n"] // slices)}
    words = ctx.new((params["rows"], slices, 2), pairs)
    width = wgsl.constant(wgsl.kernel_source(file), "WORKGROUP")
    for entry in (first_entry, "main"):
        ctx.dispatch(KernelSpec.of(file, f"{name},{entry} of {slices} slices]", entry=entry,
                                   overrides={**overrides, "ROW": width}, **spec),
                     [*operands, words], split, workgroups=params["rows"] * slices)
