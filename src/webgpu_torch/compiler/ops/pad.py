"""Padding of every mode (constant, reflect, replicate), and the per-dim index maps that share its kernel:
flip, roll, repeat. Each is out[o] = x[map(o)] with one rule per dim (pad.wgsl), one dispatch, any dtype.

Zero padding of a conv's input usually never reaches this kernel: conv_folding.py folds it into the conv.
Circular padding has no core ATen op: export decomposes it into slices, copies and slice_scatter.
"""

from __future__ import annotations

import re

from ...format.program import Tensor
from .. import layout, wgsl
from ..builder import Builder, KernelSpec
from .indexing import word_of
from .registry import NodeView, OpCase, register

FILE = "pad.wgsl"
MAX_DIMS = 8
MAPS = {name.lower(): int(code) for name, code in
        re.findall(r"const MAP_(\w+): u32 = (\d+)u;", wgsl.kernel_source(FILE))}


def remap(ctx: Builder, x: Tensor, shape: tuple[int, ...], before: list[int], modes: list[str],
          fill: int = 0) -> Tensor:
    """out[o] = x[map(o)] over the output `shape` (as many dims as x): along dim k, output coordinate o reads
    input coordinate o - before[k] under modes[k] (pad.wgsl's MAP_* rules); `fill` is the word a constant pad
    writes outside x."""
    out = ctx.new(shape, x.dtype)
    params = {"numel": out.numel, "ndim": x.ndim, "x_offset": x.offset, "fill": fill, "out_shape": shape,
              "in_shape": x.shape, "before": before, "modes": [MAPS[m] for m in modes], "x_strides": x.strides}
    name = f"remap[{','.join(sorted(set(modes)))}]"
    ctx.dispatch(KernelSpec.of(FILE, name), [x, out], params, elements=out.numel)
    return out


def _leading(x: Tensor, amounts: list[int]) -> list[int]:
    """Per-dim leading padding from torch's (before, after) pairs, last dim first."""
    before = [0] * x.ndim
    for i, n in enumerate(amounts[0::2]):
        before[x.ndim - 1 - i] = n
    return before


def _check(node: NodeView) -> str | None:
    x = node.args["self"]
    if x.ndim > MAX_DIMS:
        return f"input has {x.ndim} dims; at most {MAX_DIMS} are supported"
    return None


@register("aten.constant_pad_nd.default", check=_check, dynamic=True)
def constant_pad(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    before = _leading(x, node.args["pad"])
    return remap(ctx, x, node.out.shape, before, ["constant"] * x.ndim, word_of(node.args["value"], x.dtype))


def _edge_pad(mode: str):
    def lower(ctx: Builder, node: NodeView) -> Tensor:
        x, amounts = node.args["self"], node.args["padding"]
        padded = len(amounts) // 2
        modes = ["constant"] * (x.ndim - padded) + [mode] * padded
        return remap(ctx, x, node.out.shape, _leading(x, amounts), modes)

    return lower


for _d in (1, 2, 3):
    register(f"aten.reflection_pad{_d}d.default", check=_check, dynamic=True)(_edge_pad("reflect"))
    register(f"aten.replication_pad{_d}d.default", check=_check, dynamic=True)(_edge_pad("replicate"))


# Uninitialised tensors fold to zeros at compile time; with dynamic sizes they are made zeros here.
@register("aten.empty.memory_format", "aten.empty_strided.default", "aten.empty_permuted.default", dynamic=True)
def empty(ctx: Builder, node: NodeView) -> Tensor:
    """Zeros: a constant pad of an input with no elements (a 0-d result reads the zero dummy's first word)."""
    shape = node.out.shape
    nothing = Tensor(ctx.dummy().buffer, (0,) * len(shape), (0,) * len(shape), 0, node.out.dtype)
    return remap(ctx, nothing, shape, [0] * len(shape), ["constant"] * len(shape))


@register("aten.flip.default", check=_check, dynamic=True)
def flip(ctx: Builder, node: NodeView) -> Tensor:
    x = node.args["self"]
    dims = {layout.normalize_dim(d, x.ndim) for d in node.args["dims"]}
    return remap(ctx, x, x.shape, [0] * x.ndim, ["flip" if d in dims else "constant" for d in range(x.ndim)])


@register("aten.roll.default", check=_check)
def roll(ctx: Builder, node: NodeView) -> Tensor:
    """With no dims, torch rolls the flattened tensor: a roll of its contiguous 1-d view."""
    x, shifts, dims = node.args["self"], node.args["shifts"], node.args["dims"]
    if not dims:
        flat = ctx.reshaped(x, (x.numel,))
        return layout.view(_roll_dims(ctx, flat, shifts, [0]), x.shape)
    return _roll_dims(ctx, x, shifts, dims)


def _roll_dims(ctx: Builder, x: Tensor, shifts: list[int], dims: list[int]) -> Tensor:
    before = [0] * x.ndim
    for shift, d in zip(shifts, dims, strict=True):
        d = layout.normalize_dim(d, x.ndim)
        before[d] = (before[d] + shift) % max(x.shape[d], 1)
    return remap(ctx, x, x.shape, before, ["wrap"] * x.ndim)


@register("aten.repeat.default", check=_check, dynamic=True)
def repeat(ctx: Builder, node: NodeView) -> Tensor:
    """x tiled `repeats` times per dim; x gains leading dims of size 1 where there are more repeats than dims."""
    x, shape = node.args["self"], node.out.shape
    for _ in range(len(shape) - x.ndim):
        x = layout.unsqueeze(x, 0)
    return remap(ctx, x, shape, [0] * x.ndim, ["wrap"] * x.ndim)


def cases() -> list[OpCase]:
    import torch

    F = torch.nn.functional

    def ints(*shape):
        return lambda: torch.randint(-99, 99, shape, generator=torch.Generator().manual_seed(5))

    def mask(*shape):
        return lambda: torch.rand(shape, generator=torch.Generator().manual_seed(6)) > 0.5

    return [
        OpCase("pad_hw_asymmetric", lambda x: F.pad(x, (1, 2, 3, 0), value=0.5), [(3, 5, 13, 11)]),
        OpCase("pad_and_crop_three_dims", lambda x: F.pad(x, (-2, 3, 0, 1, 2, -1)), [(3, 5, 13, 11)]),
        OpCase("pad_of_transposed_1d", lambda x: F.pad(x.t(), (4, 0), value=-1.0), [(37, 5)]),
        OpCase("pad_int_and_bool", lambda i, m: (F.pad(i, (2, 1), value=-7), F.pad(m, (0, 3, 1, 0), value=True)),
               [ints(5, 37), mask(5, 37)]),
        OpCase("reflect_1d_2d_3d", lambda x: (F.pad(x[0], (3, 2), mode="reflect"),
                                              F.pad(x, (4, 1, 2, 4), mode="reflect"),
                                              F.pad(x[None], (1, 2, 0, 3, 2, 1), mode="reflect")),
               [(3, 5, 13, 11)]),
        OpCase("replicate_1d_2d_3d", lambda x: (F.pad(x[0], (3, 2), mode="replicate"),
                                                F.pad(x, (4, 1, 2, 17), mode="replicate"),
                                                F.pad(x[None], (1, 2, 0, 3, 2, 1), mode="replicate")),
               [(3, 5, 13, 11)]),
        OpCase("reflect_replicate_int_of_transposed", lambda i: (F.pad(i.transpose(1, 2), (2, 3), mode="reflect"),
                                                                 F.pad(i, (1, 2, 3, 4), mode="replicate")),
               [ints(3, 7, 37)]),
        # Circular padding reaches us as slices, copy and slice_scatter.
        OpCase("circular_2d", lambda x: F.pad(x, (2, 3, 1, 4), mode="circular"), [(2, 3, 13, 11)]),
        # Uninitialised tensors reach their kernel only with dynamic sizes (static ones fold into zeros).
        OpCase("empty_of_dynamic_size", lambda x: (torch.empty(x.shape[0]).zero_() + x[:, 0],
                                                   torch.empty_strided((x.shape[0], 3), (1, 37)).zero_() * x,
                                                   torch.empty_permuted((x.shape[0], 3), (1, 0)).zero_() - x),
               [(37, 3)], dynamic_shapes=({0: torch.export.Dim("n", min=2, max=64)},)),
        OpCase("flip_dims", lambda x, i, m: (x.flip(0, -1), i.flip(1), m.flip(0)),
               [(37, 5, 41), ints(37, 41), mask(89)]),
        OpCase("roll_dims_and_flat", lambda x, i: (x.roll(3, 1), x.roll((-2, 40), (0, 2)), x.transpose(0, 2).roll(7),
                                                   i.roll(-300)), [(37, 5, 41), ints(37, 41)]),
        OpCase("repeat_tiles_and_new_dims", lambda x, m: (x.repeat(2, 1, 3), x.t().repeat(3, 1, 1, 2),
                                                          m.repeat(3, 5)), [(37, 41), mask(5, 7)]),
    ]
