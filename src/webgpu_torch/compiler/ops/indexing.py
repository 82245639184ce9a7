"""Gathers: embedding, index_select, gather and index.Tensor, all as one kernel (indexing.wgsl).

Each op is phrased as: the output's coordinates address the source directly along some dims (strides) and
through up to three index tensors along others (each index a strided view broadcast to the output's shape,
times the stride of the source dim it selects in). Values move as 32-bit words, so every device dtype works.
Negative indices count from the end in index.Tensor (Python indexing) only: gather, index_select and
embedding raise on them in torch, so here they are out of range like any other bad index.
"""

from __future__ import annotations

import struct
from dataclasses import replace
from math import prod

import numpy as np

from ...format import dtypes
from ...format.program import F16, Tensor
from .. import layout
from ..builder import Builder, KernelSpec, Packed
from . import quantized
from .registry import NodeView, OpCase, register

FILE = "indexing.wgsl"
MAX_DIMS = 8
MAX_INDICES = 3
NAN_BITS = int(np.array(np.nan, np.float32).view(np.uint32))


def word_of(value: float | int | bool, dtype: str) -> int:
    """The 32-bit word that holds scalar `value` as an element of a device tensor of `dtype`."""
    if dtypes.is_float(dtype):
        return struct.unpack("<I", struct.pack("<f", float(value)))[0]
    if dtype == "bool":
        return int(bool(value))
    return int(value) & 0xFFFFFFFF


def gather(ctx: Builder, src: Tensor, shape: tuple[int, ...], direct: list[int],
           indices: list[tuple[Tensor, int, int]], *, out: Tensor | None = None,
           window: tuple[int, int] | None = None, wrap: bool = False, check: tuple[Tensor, int]) -> Tensor:
    """out[o] = src[offset + Σ o_d·direct_d + Σ_t idx_t[o]·stride_t] over the output `shape`; `indices` holds
    (index view of `shape`, source stride, source dim size) per index tensor; `wrap` counts negative indices
    from the end; `check` (Builder.check) is what an index out of range sets. With `window` (lo, hi), src
    holds rows lo..hi of index 0's dim only and just the outputs selecting those rows are written (into `out`,
    shared by the dispatches of all windows)."""
    out = ctx.new(shape, src.dtype) if out is None else out
    status, slot = check
    source = {dtypes.F16.name: {"Src": "f16", "SRC_FLOAT": True}, dtypes.BF16.name: {"SRC_BF16": True}}.get(
        src.dtype, {})
    lo, hi = window or (0, 0)
    params = {**_index_params(src, shape, direct, indices, slot), "fill": NAN_BITS if dtypes.is_float(out.dtype) else 0,
              "window_lo": lo, "window_hi": hi, "values_offset": 0, "values_strides": (0,)}
    tags = [t for t in ("windowed" if window else "table" if source else "", source and src.dtype) if t]
    spec = KernelSpec.of(FILE, "gather" + (f"[{','.join(tags)}]" if tags else ""), consts=source,
                         requires=(F16,) if src.dtype == dtypes.F16.name else (),
                         overrides={"NUM_INDICES": len(indices), "WINDOWED": window is not None,
                                    "WRAP_NEGATIVE": wrap})
    ctx.dispatch(spec, [src, *_slots(indices), out, status], params, elements=out.numel)
    return out


def scatter_in_place(ctx: Builder, table: Tensor, values: Tensor, direct: list[int],
                     indices: list[tuple[Tensor, int, int]], *, check: tuple[Tensor, int]) -> Tensor:
    """table[offset + Σ o_d·direct_d + Σ_t wrap(idx_t[o])·stride_t] = values[o] for every o of values' shape,
    written into `table` itself (a state buffer); `indices` as for gather. Returns `table`."""
    status, slot = check
    params = {**_index_params(table, values.shape, direct, indices, slot), "fill": 0, "window_lo": 0,
              "window_hi": 0, "values_offset": values.offset, "values_strides": values.strides}
    spec = KernelSpec.of(FILE, "scatter[in place]", entry="scatter",
                         overrides={"NUM_INDICES": len(indices), "WRAP_NEGATIVE": True})
    ctx.dispatch(spec, [values, *_slots(indices), table, status], params, elements=values.numel)
    return table


def _slots(indices: list[tuple[Tensor, int, int]]) -> list[Tensor]:
    """The index views for the kernel's three index bindings (the first repeated where fewer are used)."""
    views = [t for t, _, _ in indices]
    return views + [views[0]] * (MAX_INDICES - len(views))


def _index_params(table: Tensor, shape: tuple, direct: list[int], indices: list[tuple[Tensor, int, int]],
                  check: int) -> dict:
    pad = [0] * (4 - len(indices))
    slots = _slots(indices)
    return {"numel": prod(shape), "ndim": len(shape), "table_offset": table.offset, "table_strides": direct,
            "check": check, "idx_offsets": [t.offset for t in slots] + [0],
            "index_strides": [s for _, s, _ in indices] + pad, "index_sizes": [n for _, _, n in indices] + pad,
            "shape": shape, **{f"idx{k}_strides": t.strides for k, t in enumerate(slots)}}


def _out_of_range(ctx: Builder, dim: int, size) -> tuple[Tensor, int]:
    return ctx.check(f"index out of range for dim {dim} of size {size}")


def _along(index: Tensor, shape: tuple[int, ...], dim: int) -> Tensor:
    """A 1-d (or 0-d) index as a view of `shape` that varies along `dim` only."""
    stride = index.strides[0] if index.ndim else 0
    return replace(index, shape=shape, strides=tuple(stride if d == dim else 0 for d in range(len(shape))))


def _check(node: NodeView) -> str | None:
    for name, v in node.args.items():
        for t in v if isinstance(v, list) else [v]:
            if name in ("indices", "index") and hasattr(t, "dtype") and t.dtype not in ("int32", "int64"):
                return f"index tensors must be int32 or int64, got {t.dtype}"
    if node.out.ndim > MAX_DIMS:
        return f"result has {node.out.ndim} dims; at most {MAX_DIMS} are supported"
    if node.target == "aten.index.Tensor":
        given = [i for i, t in enumerate(node.args["indices"]) if t is not None]
        if not given:
            return "index.Tensor without an index tensor is not supported"
        if len(given) > MAX_INDICES:
            return f"{len(given)} index tensors; at most {MAX_INDICES} are supported"
        if given != list(range(given[0], given[0] + len(given))):
            return "index tensors separated by full slices are not supported"
    return None


@register("aten.embedding.default", check=_check, dynamic=True, packed=True)
def embedding(ctx: Builder, node: NodeView) -> Tensor:
    """A table over the binding limit (as stored) is gathered from in row chunks, one windowed dispatch each. A
    table of packed integer weights (a dequantized one, or under weights="int8" | "int4" a float32 constant
    quantized along its rows, chunk by chunk where the packed table is over the limit) is gathered from
    packed, its rows decoded (quantized.gather_rows)."""
    w, idx = node.args["weight"], node.args["indices"]
    shape = node.out.shape
    check = ctx.check(f"index out of range in an embedding of {w.shape[0]} rows")
    packed = _packed_table(ctx, w)
    if packed is not None:
        return quantized.gather_rows(ctx, packed, idx, shape, check)
    packed_row = ctx.packed_row_bytes(w)
    view = layout.broadcast_to(layout.unsqueeze(idx, idx.ndim), shape)
    direct = [0] * idx.ndim + [w.strides[1]]
    out = ctx.new(shape, w.dtype)
    if not ctx.too_large(w):
        return gather(ctx, ctx.stored_float(w), shape, direct, [(view, w.strides[0], w.shape[0])], out=out, check=check)
    for lo, hi, rows in ctx.row_chunks(w, packed_row):
        if packed_row:  # the chunk's rows packed as the tied LM head's chunk is (one copy of each)
            chunk = ctx.quantized(layout.permute(rows, [1, 0]))
            quantized.gather_rows(ctx, chunk, idx, shape, check, out=out, window=(lo, hi), rows=w.shape[0])
        else:
            gather(ctx, ctx.stored_float(rows), shape, direct, [(view, rows.strides[0], w.shape[0])], out=out,
                   window=(lo, hi), check=check)
    return out


def _packed_table(ctx: Builder, w: Tensor) -> Packed | None:
    """Embedding table `w` as packed weights when it is a whole row-major table that is dequantized or (under
    weights="int8" | "int4") a float32 constant whose packed rows fit the binding limit; else None (and a
    dequantized table is computed in float32)."""
    packed = ctx.packed_view(w)
    if packed is not None:
        if w.is_contiguous() and w.offset == 0:
            return packed
        ctx.materialize(w)
        return None
    row = ctx.packed_row_bytes(w)
    if row is None or w.shape[0] * row > ctx.options.max_binding:
        return None
    return ctx.quantized(layout.permute(w, [1, 0]))


@register("aten.index_select.default", check=_check, dynamic=True)
def index_select(ctx: Builder, node: NodeView) -> Tensor:
    x, index = node.args["self"], node.args["index"]
    if x.ndim == 0:  # a 0-d source is its one element along dim 0; the index holds one value
        return gather(ctx, x, (), [], [(_along(index, (), 0), 0, 1)], check=_out_of_range(ctx, 0, 1))
    dim = layout.normalize_dim(node.args["dim"], x.ndim)
    shape = node.out.shape
    direct = [0 if d == dim else s for d, s in enumerate(x.strides)]
    return gather(ctx, x, shape, direct, [(_along(index, shape, dim), x.strides[dim], x.shape[dim])],
                  check=_out_of_range(ctx, dim, x.shape[dim]))


@register("aten.gather.default", check=_check, dynamic=True)
def gather_(ctx: Builder, node: NodeView) -> Tensor:
    x, index = node.args["self"], node.args["index"]
    if x.ndim == 0:  # a 0-d source is its one element along dim 0; the index is 0-d too
        return gather(ctx, x, (), [], [(index, 0, 1)], check=_out_of_range(ctx, 0, 1))
    dim = layout.normalize_dim(node.args["dim"], x.ndim)
    direct = [0 if d == dim else s for d, s in enumerate(x.strides)]
    return gather(ctx, x, index.shape, direct, [(index, x.strides[dim], x.shape[dim])],
                  check=_out_of_range(ctx, dim, x.shape[dim]))


@register("aten.index.Tensor", check=_check, dynamic=True)
def index(ctx: Builder, node: NodeView) -> Tensor:
    """x[..., i0, i1, ...]: adjacent index tensors starting at dim `first` broadcast together and replace the
    dims they index, in place (torch's rule for adjacent advanced indices)."""
    x, given = node.args["self"], node.args["indices"]
    first = next(i for i, t in enumerate(given) if t is not None)
    tensors = [t for t in given if t is not None]
    shape = node.out.shape
    k, b = len(tensors), len(shape) - x.ndim + len(tensors)  # indexed dims, broadcast index dims
    direct = list(x.strides[:first]) + [0] * b + list(x.strides[first + k:])
    indices = []
    for j, t in enumerate(tensors):
        inner = layout.broadcast_to(t, shape[first:first + b])
        view = replace(inner, shape=shape, strides=(0,) * first + inner.strides + (0,) * (len(shape) - first - b))
        indices.append((view, x.strides[first + j], x.shape[first + j]))
    dims = ", ".join(f"{x.shape[first + j]}" for j in range(k))
    return gather(ctx, x, shape, direct, indices, wrap=True,
                  check=ctx.check(f"index out of range for dims {first}..{first + k - 1} of sizes {dims}"))


def cases() -> list[OpCase]:
    import torch

    table = torch.randn(1031, 37, generator=torch.Generator().manual_seed(4))  # 152 KB

    def tied(ids, w):
        return torch.nn.functional.linear(torch.nn.functional.embedding(ids, w), w)

    def ids(shape, hi, lo=0, seed=0):
        return lambda: torch.randint(lo, hi, shape, generator=torch.Generator().manual_seed(seed))

    return [
        OpCase("embedding_tokens", lambda w, i: torch.nn.functional.embedding(i, w), [(1031, 37), ids((3, 41), 1031)]),
        # A tied table over the binding limit (64 KiB here): the gather and the projection split it in chunks.
        OpCase("embedding_and_tied_projection_over_binding_limit",
               lambda i: tied(i, table.to(torch.get_default_dtype())),
               [ids((2, 7), 1031)], kwargs={"max_binding_size": 65536}),
        OpCase("embedding_transposed_table", lambda w, i: torch.nn.functional.embedding(i, w.t()),
               [(37, 89), ids((5,), 89)]),
        OpCase("index_select_dims", lambda x, i: (x.index_select(0, i), x.index_select(2, i[:3])),
               [(41, 37, 5), ids((7,), 5)]),
        OpCase("gather_last_and_first", lambda x, i, j: (x.gather(-1, i), x.gather(0, j)),
               [(37, 41), ids((37, 5), 41, seed=1), ids((3, 41), 37, seed=2)]),
        OpCase("index_tensor_hf_mask_pattern", lambda m, a, b: m[a[:, None, None, None], b[None, None, None, :]],
               [lambda: torch.rand(3, 13, generator=torch.Generator().manual_seed(3)) > 0.3,
                lambda: torch.arange(3), lambda: torch.arange(13)]),
        OpCase("index_tensor_middle_dim_negative", lambda x, i: x[:, i], [(5, 37, 7), ids((2, 3), 37, lo=-37)]),
        OpCase("index_tensor_three", lambda x, i, j, k: x[i, j, k] * 1.0,
               [(7, 11, 13), ids((5, 1), 7), ids((1, 4), 11, seed=1), ids((4,), 13, seed=2)]),
        OpCase("index_int_source", lambda x, i: x[i], [ids((37, 5), 1000, -1000), ids((9,), 37)]),
    ]
