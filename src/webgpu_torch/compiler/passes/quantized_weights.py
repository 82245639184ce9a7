"""Graph rewrite: dequantizations of constant integer weights into `webgpu.dequantize` nodes over packed
constants (plain data and numpy; runs first among the rewrites). The integer codes never widen: they are
stored packed (packing.py, docs/artifact.md "Packed weights") and the kernels that read a dequantized weight
decode it in registers (ops/quantized.py).

Recognised, each over constants (codes of 8 bits or fewer, float scales, integer zero points):
* torchao's `dequantize_affine` (IntxWeightOnlyConfig: int1-int8, PerGroup and PerAxis, with and without
  zero points): groups along the last dim, or one group per leading index (per axis 0);
* PT2E's `quantized_decomposed.dequantize_per_channel` (axis 0), `dequantize_per_channel_group` and
  `dequantize_per_tensor`;
* a cast of 8-bit integer codes to float32, through views (`_to_copy(t(q))`), as torchao's
  Int8WeightOnlyConfig exports it: `mm(x, float(qᵀ)) * scale`, whose per-output-channel `mul` then folds
  into the packed scales when nothing else reads the product.
Codes are stored unsigned (`q − qlo`, qlo = −2^(b−1) for a signed range) in 4 bits where the range allows,
else 8; the zero point becomes `zero − qlo`, so each value is computed as torch computes it: (q − zero)·scale,
one rounding. A dequantization that matches none of these (a non-constant input, codes wider than 8 bits, a
block shape other than rows or row groups) is left as it is, and lowering refuses it by name. Two
dequantizations of the same constants with the same arguments are one (a tied embedding and LM head, which
torch.export lifts as one weight read by two dequantize nodes): the table is packed and stored once.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...format import packing
from ..graph import Graph, Node, Ref, TensorMeta, drop_dead, drop_unread_constants, map_refs, readers
from ..options import Options

DEQUANTIZE = "webgpu.dequantize.default"
AFFINE = "torchao.dequantize_affine.default"
PER_CHANNEL = "quantized_decomposed.dequantize_per_channel.default"
PER_CHANNEL_GROUP = "quantized_decomposed.dequantize_per_channel_group.default"
PER_TENSOR = ("quantized_decomposed.dequantize_per_tensor.default",
              "quantized_decomposed.dequantize_per_tensor.tensor")
# The dequantize ops the frontend keeps whole for this rewrite (torch.export would decompose them into casts and
# arithmetic that constant folding then widens to float32).
KEPT_WHOLE = (AFFINE, PER_CHANNEL, PER_CHANNEL_GROUP, *PER_TENSOR)
CODE_DTYPES = ("int8", "uint8")  # constants that can be quantization codes; the frontend never folds their readers
CAST = "aten._to_copy.default"
VIEWS = ("aten.t.default", "aten.permute.default", "aten.view.default", "aten.reshape.default",
         "aten.transpose.int", "aten.unsqueeze.default")
MM = "aten.mm.default"
MUL = "aten.mul.Tensor"


@dataclass
class Dequant:
    """A matrix of integer codes with its groups' scales and zero points, as torch dequantizes it: element
    (n, k) is (codes[n, k] − zeros[n, k // group]) · scales[n, k // group], viewed as `shape`."""

    codes: np.ndarray  # [rows, cols] int64
    scales: np.ndarray  # [rows, G] float32
    zeros: np.ndarray  # [rows, G] float64 (integers, as torchao and PT2E store them)
    group: int
    shape: tuple[int, ...]
    quant_range: tuple[int, int]  # the codes' declared range (quant_min, quant_max)


def rewrite(graph: Graph, options: Options) -> Graph:
    found: dict[str, Dequant] = {}
    for node in graph.nodes:
        d = _recognise(graph, node)
        if d is not None:
            found[node.name] = d
    _merge_duplicates(graph, found)
    _cast_chains(graph, found)
    _fold_output_scales(graph, found)
    graph.nodes = drop_dead([_packed_node(graph, n, found[n.name]) if n.name in found else n
                             for n in graph.nodes], graph.outputs)
    drop_unread_constants(graph)
    return graph


def _const(graph: Graph, value) -> np.ndarray | None:
    return graph.constants.get(value.node) if isinstance(value, Ref) and value.index is None else None


# -- recognising --------------------------------------------------------------------------------------------

def _recognise(graph: Graph, node: Node) -> Dequant | None:
    a = node.args
    if node.target not in KEPT_WHOLE or node.outputs[0] is None or node.outputs[0].dtype != "float32":
        return None
    codes = _const(graph, a["input"])
    if codes is None or codes.dtype.kind not in "iu" or codes.ndim < 1:
        return None
    if node.target == AFFINE:
        zero = None if a["zero_point"] is None else _const(graph, a["zero_point"])
        if a["zero_point"] is not None and zero is None:
            return None
        return _grouped(codes, _const(graph, a["scale"]), zero, list(a["block_size"]),
                        (a["quant_min"], a["quant_max"]))
    if node.target in PER_TENSOR:  # one scale and zero point for every row
        scale, zero = _scalar(graph, a["scale"]), _scalar(graph, a["zero_point"])
        if scale is None or zero is None:
            return None
        rows = codes.shape[0]
        return _grouped(codes, np.full(rows, scale, np.float32), np.full(rows, zero), [1, *codes.shape[1:]],
                        (a["quant_min"], a["quant_max"]))
    if node.target == PER_CHANNEL and a["axis"] % codes.ndim != 0:
        return None
    block = [1, *codes.shape[1:]] if node.target == PER_CHANNEL else [1] * (codes.ndim - 1) + [a["group_size"]]
    zero = None if a["zero_points"] is None else _const(graph, a["zero_points"])
    if a["zero_points"] is not None and zero is None:
        return None
    return _grouped(codes, _const(graph, a["scales"]), zero, block, (a["quant_min"], a["quant_max"]))


def _scalar(graph: Graph, value) -> float | None:
    """A number argument, or the value of a one-element constant; None for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    c = _const(graph, value)
    return c.reshape(-1)[0].item() if c is not None and c.size == 1 else None


def _grouped(codes: np.ndarray, scale, zero, block: list[int], quant_range) -> Dequant | None:
    """The Dequant of `codes` dequantized in blocks of `block` (rows, or row groups along the last dim); a
    `zero` of None is zero."""
    shape = codes.shape
    if scale is None or len(block) != len(shape) or np.asarray(scale).dtype.kind != "f":
        return None
    if block == [1, *shape[1:]]:  # per axis 0: a row is everything under one leading index
        rows, cols, group = shape[0], int(np.prod(shape[1:])), int(np.prod(shape[1:]))
    elif block[:-1] == [1] * (len(shape) - 1) and shape[-1] % block[-1] == 0:
        rows, cols, group = int(np.prod(shape[:-1])), shape[-1], block[-1]
    else:
        return None
    groups = cols // group
    if scale.size != rows * groups or (zero is not None and zero.size != rows * groups):
        return None
    zeros = np.zeros((rows, groups)) if zero is None else zero.reshape(rows, groups).astype(np.float64)
    lo = int(codes.min()) if quant_range[0] is None else quant_range[0]
    hi = int(codes.max()) if quant_range[1] is None else quant_range[1]
    return Dequant(codes.reshape(rows, cols).astype(np.int64), scale.reshape(rows, groups).astype(np.float32),
                   zeros, group, shape, (lo, hi))


def _merge_duplicates(graph: Graph, found: dict[str, Dequant]) -> None:
    """Every recognised dequantization that repeats an earlier one (same op, same arguments: the same constants
    and block) read through the earlier one's result instead, and dropped. The earlier one comes first in the
    graph, so before every reader of the later."""
    first: dict[tuple[str, str], str] = {}
    replaced: dict[Ref, Ref] = {}
    for node in graph.nodes:
        if node.name in found:
            key = (node.target, repr(node.args))
            if key in first:
                replaced[Ref(node.name)] = Ref(first[key])
                del found[node.name]
            else:
                first[key] = node.name
    if replaced:
        graph.nodes = [n for n in graph.nodes if Ref(n.name) not in replaced]
        for node in graph.nodes:
            node.args = map_refs(node.args, lambda r: replaced.get(r, r))
        graph.outputs = [replaced.get(r, r) for r in graph.outputs]


def _cast_chains(graph: Graph, found: dict[str, Dequant]) -> None:
    """`_to_copy(float32)` of 8-bit codes through views: the cast becomes a dequantization of the codes (scale
    1, zero 0) and the views move after it, re-typed float32."""
    by_name = {n.name: n for n in graph.nodes}
    out = []
    for node in graph.nodes:
        chain = _codes_chain(graph, node, by_name) if node.target == CAST else None
        if chain is None:
            out.append(node)
            continue
        source, views = chain
        codes = graph.constants[source]
        first = Node(f"{node.name}_codes", DEQUANTIZE, {"input": Ref(source)}, (TensorMeta(codes.shape, "float32"),),
                     node.source)
        rows = codes.shape[0] if codes.ndim else 1
        found[first.name] = Dequant(codes.reshape(rows, -1).astype(np.int64), np.ones((rows, 1), np.float32),
                                    np.zeros((rows, 1), np.int64), max(1, codes.size // rows), codes.shape,
                                    (int(np.iinfo(codes.dtype).min), int(np.iinfo(codes.dtype).max)))
        out.append(first)
        previous = first.name
        for i, view in enumerate(views):
            last = i == len(views) - 1
            name = node.name if last else f"{view.name}_float"
            args = {**view.args, "self": Ref(previous)}
            out.append(Node(name, view.target, args, (TensorMeta(view.outputs[0].shape, "float32"),), view.source))
            previous = name
        if not views:
            first.name = node.name
            found[node.name] = found.pop(f"{node.name}_codes")
    graph.nodes = out


def _codes_chain(graph: Graph, cast: Node, by_name: dict[str, Node]) -> tuple[str, list[Node]] | None:
    """(the codes constant, the views from it to `cast`'s input, in order) when `cast` turns 8-bit integer
    codes, through views only, into float32; else None."""
    if cast.outputs[0] is None or cast.outputs[0].dtype != "float32" or cast.args.get("dtype") != "float32":
        return None
    views = []
    src = cast.args["self"]
    while isinstance(src, Ref) and src.index is None and src.node in by_name and by_name[src.node].target in VIEWS:
        views.append(by_name[src.node])
        src = views[-1].args["self"]
    codes = _const(graph, src)
    if codes is None or str(codes.dtype) not in CODE_DTYPES:
        return None
    return src.node, views[::-1]


def _fold_output_scales(graph: Graph, found: dict[str, Dequant]) -> None:
    """`mul(mm(x, V), s)` with V a view (Wᵀ) of a per-row dequantization D that nothing else reads and s a
    constant over the output's last dim (one per row of D): s joins D's scales and the mul goes."""
    by_name = {n.name: n for n in graph.nodes}
    users = readers(graph)
    replaced: dict[Ref, Ref] = {}
    dropped = set()
    for mul in graph.nodes:
        if mul.target != MUL:
            continue
        mm, scale = (by_name.get(_name(mul.args["self"])), _const(graph, mul.args["other"]))
        if mm is None or mm.target != MM or users[mm.name] != 1 or scale is None:
            continue
        view = by_name.get(_name(mm.args["mat2"]))
        source = by_name.get(_name(view.args["self"])) if view is not None and view.target in VIEWS else None
        d = found.get(source.name) if source is not None else None
        n = mm.outputs[0].shape[-1]
        if (d is None or users[source.name] != 1 or users[view.name] != 1 or d.scales.shape != (n, 1)
                or scale.size != n or scale.shape[-1] != n or view.outputs[0].shape != (d.codes.shape[1], n)):
            continue
        d.scales = d.scales * scale.reshape(n, 1).astype(np.float32)
        replaced[Ref(mul.name)] = Ref(mm.name)
        dropped.add(mul.name)
    graph.nodes = [n for n in graph.nodes if n.name not in dropped]
    for node in graph.nodes:
        node.args = map_refs(node.args, lambda r: replaced.get(r, r))
    graph.outputs = [replaced.get(r, r) for r in graph.outputs]


def _name(value) -> str | None:
    return value.node if isinstance(value, Ref) and value.index is None else None


# -- packing ------------------------------------------------------------------------------------------------

def _packed_node(graph: Graph, node: Node, d: Dequant) -> Node:
    """`node` as webgpu.dequantize over a new constant holding `d` packed (4 bits per code where the codes'
    range allows, else 8)."""
    lo, hi = d.quant_range
    lo, hi = min(lo, int(d.codes.min())), max(hi, int(d.codes.max()))
    rows, cols = d.codes.shape
    for bits in packing.BITS:
        offset = -(1 << (bits - 1)) if lo < 0 else 0
        shape_ok = d.group >= cols or d.group % (32 // bits) == 0
        if offset <= lo and hi < offset + (1 << bits) and shape_ok:
            break
    else:
        return node
    zeros = (d.zeros - offset).astype(np.float32)
    midpoint = 1 << (bits - 1)
    zero_points = not np.all(zeros == midpoint)
    layout = packing.Packing(bits, rows, cols, d.group, bool(zero_points))
    words = packing.pack(d.codes - offset, d.scales, zeros if zero_points else None, layout)
    return packed_node(graph, node.name, words, layout, node.source, tuple(node.outputs[0].shape))


def packed_node(graph: Graph, name: str, words: np.ndarray, layout: packing.Packing, source: str,
                shape: tuple[int, ...] | None = None) -> Node:
    """A webgpu.dequantize node `name` over new constant words `name`_packed (their packing `layout`), its
    matrix viewed as `shape` (default [rows, cols]); linear_merging.py and gated_linears.py make them too."""
    graph.constants[f"{name}_packed"] = words.view(np.int32)
    graph.constant_meta[f"{name}_packed"] = TensorMeta(words.shape, "int32")
    args = {"words": Ref(f"{name}_packed"), "bits": layout.bits, "rows": layout.rows, "cols": layout.cols,
            "group": layout.group, "zero_points": layout.zero_points}
    return Node(name, DEQUANTIZE, args, (TensorMeta(shape or (layout.rows, layout.cols), "float32"),), source)
