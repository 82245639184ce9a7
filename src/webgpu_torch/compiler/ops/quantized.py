"""Packed integer weights (packing.py; docs/artifact.md, "Packed weights"): `webgpu.dequantize`, the node
quantized_weights.py makes of a dequantization of constant codes, and the kernel that turns packed weights
into float32 where a kernel cannot decode them itself (quantized.wgsl), which also gathers an embedding's
rows from a packed table.

A dequantize node emits nothing: its result is a float32 tensor whose values are computed only when some
dispatch binds it (Builder.dequantized / materialize). The GEMM family (linear, mm, addmm, matmul's
products, the convolutions that run as GEMMs) and embedding read the packed words instead, through
Builder.packed_view, where their kernels can decode them (ops/gemm.py, ops/indexing.py), so in a model that
only multiplies and gathers its weights the codes are never widened.
"""

from __future__ import annotations

from ...format.packing import Packing
from ...format.program import Tensor
from ..builder import Builder, KernelSpec, Packed
from ..passes.quantized_weights import KEPT_WHOLE
from .registry import NodeView, OpCase, refuse, register

FILE = "quantized.wgsl"


def _spec(w: Packed, gather: bool) -> KernelSpec:
    p = w.packing
    return KernelSpec.of(FILE, f"{'gather' if gather else 'dequantize'}[{p.dtype}]", consts={"PACKED_BITS": p.bits},
                         overrides={"GATHER": gather, "PACKED_ZERO_POINTS": p.zero_points})


def _params(w: Packed, numel, idx_offset: int = 0, check: int = 0, window: tuple[int, int] | None = None,
            rows: int | None = None) -> dict:
    p = w.packing
    lo, hi = window or (0, p.rows)
    return {"numel": numel, "cols": p.cols, "rows": rows or p.rows, "idx_offset": idx_offset, "check": check,
            "window_lo": lo, "window_hi": hi, "packing": p.layout()}


def dequantize(ctx: Builder, w: Packed, out: Tensor) -> None:
    """out (contiguous float32, rows · cols elements) = every element of packed weights `w`."""
    n = w.packing.rows * w.packing.cols
    ctx.dispatch(_spec(w, False), [w, ctx.dummy(), out, ctx.sink()], _params(w, n), elements=n)


def gather_rows(ctx: Builder, w: Packed, idx: Tensor, shape: tuple, check: tuple[Tensor, int], *,
                out: Tensor | None = None, window: tuple[int, int] | None = None, rows: int | None = None) -> Tensor:
    """out[..., k] = w[idx[...], k]: an embedding over packed rows; `shape` is idx's shape + (cols,). With
    `window` (lo, hi), `w` holds rows lo..hi of a table of `rows` and just the outputs selecting those rows
    are written (into `out`, shared by the dispatches of all windows)."""
    idx = ctx.contiguous(idx)
    out = ctx.new(shape) if out is None else out
    status, slot = check
    n = out.numel
    ctx.dispatch(_spec(w, True), [w, idx, out, status], _params(w, n, idx.offset, slot, window, rows), elements=n)
    return out


# What quantized_weights.py packs, it turns into webgpu.dequantize; a node of these ops left in the graph is one
# it could not.
refuse(*KEPT_WHOLE, reason="dequantizes something other than constant integer codes of at most 8 bits in rows or "
       "row groups (per channel along axis 0, or groups along the last dim), which is what WebGPU programs keep "
       "packed: dequantize such a weight before export, or quantize it along its rows")


def _check(node: NodeView) -> str | None:
    a = node.args
    try:
        Packing(a["bits"], a["rows"], a["cols"], a["group"], a["zero_points"])
    except (TypeError, ValueError) as e:
        return f"not a packed layout: {e}"
    return None


@register("webgpu.dequantize.default", check=_check, dynamic=True)
def dequantize_node(ctx: Builder, node: NodeView) -> Tensor:
    a = node.args
    w = ctx.packed(a["words"], Packing(a["bits"], a["rows"], a["cols"], a["group"], a["zero_points"]))
    return ctx.dequantized(w, node.out.shape)


def cases() -> list[OpCase]:
    """PT2E's dequantize ops (torch's own) over constant codes feeding each kind of reader, against float64 of
    the dequantized weights: prime sizes straddle the GEMV's 256-column blocks and the GEMM's tiles, codes
    use the 4- and 8-bit ranges, with and without zero points."""
    import torch
    import torch.ao.quantization.fx._decomposed

    ops = torch.ops.quantized_decomposed
    g = ("gemm",)

    def weight(rows, cols, lo, hi, groups, zero_points, seed):
        gen = torch.Generator().manual_seed(seed)
        codes = torch.randint(lo, hi + 1, (rows, cols), generator=gen, dtype=torch.int8)
        scales = torch.rand(rows, groups, generator=gen) * 0.05 + 0.01
        zeros = torch.randint(lo // 2, hi // 2 + 1, (rows, groups), generator=gen) if zero_points else None
        return codes, scales, zeros

    def grouped(rows, cols, group, bits=4, zero_points=True, seed=0):
        lo, hi = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
        codes, scales, zeros = weight(rows, cols, lo, hi, cols // group, zero_points, seed)
        return lambda: ops.dequantize_per_channel_group(codes, scales, zeros, lo, hi, torch.int8, group,
                                                        torch.get_default_dtype())

    def per_channel(rows, cols, zero_points=False, seed=0):
        codes, scales, zeros = weight(rows, cols, -128, 127, 1, zero_points, seed)
        return lambda: ops.dequantize_per_channel(codes, scales[:, 0], None if zeros is None else zeros[:, 0], 0,
                                                  -128, 127, torch.int8, out_dtype=torch.get_default_dtype())

    def linear(w):
        return lambda x, *b: torch.nn.functional.linear(x, w(), *b)

    q4_1031 = grouped(1031, 288, 32)
    q8_89 = per_channel(89, 132)
    q4_44 = grouped(44, 1536, 64, zero_points=False, seed=1)
    q4_41 = grouped(41, 96, 32, seed=2)
    q8_37 = per_channel(41, 37, zero_points=True, seed=3)
    table = grouped(1031, 40, 8, seed=4)
    return [
        OpCase("gemv_q4_zero_points", linear(q4_1031), [(3, 288), (1031,)], marks=g),
        OpCase("gemv_q8_residual_relu", lambda x, r: torch.relu(linear(q8_89)(x) + r), [(5, 132), (5, 89)], marks=g),
        OpCase("vec4_q8_bias_relu", lambda x, b: torch.relu(linear(q8_89)(x, b)), [(37, 132), (89,)], marks=g),
        OpCase("vec4_q4_zero_points_3d", linear(q4_1031), [(2, 19, 288)], marks=g),
        OpCase("split_k_q4", linear(q4_44), [(19, 1536), (44,)], marks=g),
        OpCase("matmul_q4_batched", lambda x: x @ q4_41().t(), [(2, 3, 5, 96)], marks=g),
        OpCase("mm_q8_k_not_multiple_of_4_dequantized", lambda x: x @ q8_37().t(), [(7, 37)], marks=g),
        OpCase("dequantized_read_elementwise", lambda y: q4_41() * 2 + y, [(41, 96)]),
        OpCase("embedding_q4", lambda i: torch.nn.functional.embedding(i, table()),
               [lambda: torch.randint(0, 1031, (3, 41), generator=torch.Generator().manual_seed(5))]),
    ]

