"""Writes the golden corpus: small artifacts that exercise every part of docs/artifact.md, each with calls and
the outputs the Python runtime gave, and damaged copies of one with the error each must raise. Both runtimes'
tests read these files (tests/test_golden.py, js/test/golden.test.js); README.md describes them.

    .venv/bin/python -m tests.golden.make       # rewrite them (after a change to the format)
"""

from __future__ import annotations

import base64
import json
import struct
import zlib
from pathlib import Path

import numpy as np
import torch

import webgpu_torch
from webgpu_torch import artifact, tree

HERE = Path(__file__).parent
BAD = HERE / "bad"


# -- the models ------------------------------------------------------------------------------------------------

class Structured(torch.nn.Module):
    """Keyword and constant arguments; int64 and bool inputs and outputs; a dict of outputs, one a strided view."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 5)

    def forward(self, x, ids, mask, *, scale: float = 2.0, flag: bool = True):
        y = x * scale if flag else x
        return {"sum": y.sum(-1), "t": y.t(), "picked": self.emb(ids), "masked": torch.where(mask, x, 0.0),
                "argmax": x.argmax(-1), "positive": x > 0}


class Dynamic(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.lin = torch.nn.Linear(37, 19)

    def forward(self, x):
        return torch.softmax(self.lin(x), -1), x[:, :7].t()


class Tied(torch.nn.Module):
    """An embedding whose table is also the output projection."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(53, 44)

    def forward(self, ids):
        return torch.nn.functional.linear(self.emb(ids), self.emb.weight)


class Dequantized(torch.nn.Module):
    """Two linears over PT2E's dequantizations: q8 per channel and q4 in groups of 8, both with zero points."""

    def __init__(self):
        super().__init__()
        import torch.ao.quantization.fx._decomposed

        g = torch.Generator().manual_seed(1)
        self.q8 = torch.randint(-128, 128, (24, 40), generator=g, dtype=torch.int8)
        self.q8_scales, self.q8_zeros = torch.rand(24, generator=g) / 50, torch.randint(-9, 9, (24,), generator=g)
        self.q4 = torch.randint(-8, 8, (7, 24), generator=g, dtype=torch.int8)
        self.q4_scales, self.q4_zeros = torch.rand(7, 3, generator=g) / 5, torch.randint(-3, 3, (7, 3), generator=g)

    def forward(self, x):
        ops = torch.ops.quantized_decomposed
        w8 = ops.dequantize_per_channel(self.q8, self.q8_scales, self.q8_zeros, 0, -128, 127, torch.int8)
        w4 = ops.dequantize_per_channel_group(self.q4, self.q4_scales, self.q4_zeros, -8, 7, torch.int8, 8,
                                              torch.float32)
        return torch.nn.functional.linear(torch.relu(torch.nn.functional.linear(x, w8)), w4)


def _models():
    """(name, session, calls): each call is (args, kwargs) of torch tensors and plain values."""
    g = torch.Generator().manual_seed(0)
    torch.manual_seed(0)
    mlp = torch.nn.Sequential(torch.nn.Linear(37, 41), torch.nn.ReLU(), torch.nn.LayerNorm(41),
                              torch.nn.Linear(41, 3)).eval()
    x = torch.randn(5, 37, generator=g)
    yield "mlp", webgpu_torch.compile_module(mlp, (x,)), [((x,), {})]

    tiny = torch.nn.Sequential(torch.nn.Linear(5, 3), torch.nn.ReLU()).eval()
    x = torch.randn(2, 5, generator=g)
    yield "tiny", webgpu_torch.compile_module(tiny, (x,), gemm="pr"), [((x,), {})]

    lin = torch.nn.Linear(37, 41).eval()
    x = torch.randn(7, 37, generator=g)
    yield "weights_f16", webgpu_torch.compile_module(lin, (x,), weights="float16"), [((x,), {})]

    # K long and M, N small: the GEMM's default splits K, and its options are tile and split choices made as
    # a group with the reduction of the slices (`follows`).
    a, b = torch.randn(24, 524, generator=g), torch.randn(524, 20, generator=g)
    yield "options", webgpu_torch.compile_module(_Fn(torch.mm), (a, b)), [((a, b), {})]

    # Packed integer weights: compile(weights="int4") (q4 without zero points; K = 44 is no multiple of the group
    # of 32, so each row's last group is partial; 15 rows run on the vec4 GEMM tiles) and PT2E's dequantize ops
    # (q8 and q4 with zero points; one row, on the GEMV) — tables gathered packed.
    emb = Tied().eval()
    ids = torch.randint(0, 53, (3, 5), generator=g)
    yield "weights_int4", webgpu_torch.compile_module(emb, (ids,), weights="int4"), [((ids,), {})]
    x = torch.randn(1, 40, generator=g)
    yield "packed", webgpu_torch.compile_module(Dequantized(), (x,)), [((x,), {})]

    dyn = Dynamic().eval()
    s = torch.export.Dim("s", min=1, max=64)
    x3, x29 = torch.randn(3, 37, generator=g), torch.randn(29, 37, generator=g)
    yield ("dynamic", webgpu_torch.compile_module(dyn, (x29,), dynamic_shapes={"x": {0: s}}),
           [((x3,), {}), ((x29,), {}), ((x3,), {})])

    st = Structured().eval()
    x = torch.randn(6, 5, generator=g)
    ids = torch.tensor([3, 0, 10, 7], dtype=torch.int64)
    mask = torch.rand(6, 5, generator=g) > 0.5
    kwargs = {"scale": 2.0, "flag": True}
    bad_ids = torch.tensor([3, 11, 0, 7], dtype=torch.int64)  # 11 is past the table: an index error, then a call
    yield ("structured", webgpu_torch.compile_module(st, (x, ids, mask), kwargs),
           [((x, ids, mask), kwargs), ((x, bad_ids, mask), kwargs), ((x, ids, mask), kwargs)])


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


# -- tensors as JSON -------------------------------------------------------------------------------------------

def tensor_json(a) -> dict:
    """{"dtype", "shape", "data"}: data is base64 of the C-order little-endian bytes (bool: one byte each)."""
    a = np.ascontiguousarray(a)
    name = "bool" if a.dtype == np.bool_ else str(a.dtype)
    return {"dtype": name, "shape": list(a.shape), "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<"))
                                                                            .tobytes()).decode()}


def _value_json(v):
    if isinstance(v, torch.Tensor):
        return tensor_json(v.numpy())
    if isinstance(v, (tuple, list)):
        return [_value_json(x) for x in v]
    return v


def write_models() -> None:
    for name, session, calls in _models():
        session.save(HERE / f"{name}.wgpt")
        records = []
        for args, kwargs in calls:
            record = {"args": _value_json(list(args)), "kwargs": _value_json(kwargs)}
            try:
                out = session(*[a.numpy() if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
            except webgpu_torch.DeviceIndexError as e:
                records.append({**record, "error": str(e).split(": ", 1)[1]})
                continue
            leaves = tree.flatten(session.program.output_tree, out, "output")
            records.append({**record, "outputs": [tensor_json(o) for o in leaves]})
        (HERE / f"{name}.json").write_text(json.dumps({"calls": records}, indent=1) + "\n")


# -- damaged copies --------------------------------------------------------------------------------------------

def parts(raw: bytes) -> tuple[dict, bytes]:
    _, _, _, hlen, _ = artifact.PREAMBLE.unpack_from(raw)
    return json.loads(raw[32:32 + hlen]), raw[32 + hlen:]


def pack(header, data: bytes, version: int = artifact.CONTAINER_VERSION) -> bytes:
    """A container around `header` (any JSON value, or raw bytes) and `data`, with correct lengths and CRCs."""
    text = header if isinstance(header, bytes) else json.dumps(header, separators=(",", ":")).encode()
    text += b" " * (-len(text) % 64)
    return artifact.PREAMBLE.pack(artifact.MAGIC, version, zlib.crc32(text), len(text), len(data)) + text + data


def _edit(raw: bytes, change) -> bytes:
    header, data = parts(raw)
    change(header)
    return pack(header, data)


def _set(path: str, value):
    """An edit setting header[path] (dot-separated keys and indices) to `value`."""
    *head, last = [int(k) if k.lstrip("-").isdigit() else k for k in path.split(".")]

    def change(h):
        for k in head:
            h = h[k]
        if value is _DELETE:
            del h[last]
        else:
            h[last] = value

    return change


_DELETE = object()


def damaged(raw: bytes, f16: bytes, q4: bytes) -> dict[str, tuple[bytes, str]]:
    """name -> (file bytes, a phrase the ArtifactError must contain). `raw` is tiny.wgpt, `f16` weights_f16.wgpt,
    `q4` weights_int4.wgpt."""
    header, data = parts(raw)
    flip_header = bytearray(raw)
    flip_header[40] ^= 0x01
    flip_data = bytearray(raw)
    flip_data[-70] ^= 0x01
    deep = b"[" * 20_000 + b"]" * 20_000
    storage = next(i for i, d in enumerate(header["dispatches"]) if d["buffers"])
    constant = next(i for i, b in enumerate(header["buffers"]) if b["role"] == "constant")
    writer = next(i for i, d in enumerate(header["dispatches"])
                  if "read_write" in header["kernels"][d["kernel"]]["bindings"])
    uniform = next(i for i, d in enumerate(header["dispatches"]) if d["uniform"])
    f16_kernel = next(i for i, k in enumerate(parts(f16)[0]["kernels"]) if k.get("requires") == ["shader-f16"])

    def write_constant(h):
        d = h["dispatches"][writer]
        kinds = [k for k in h["kernels"][d["kernel"]]["bindings"] if k != "uniform"]
        d["buffers"][kinds.index("read_write")] = constant

    packed = next(i for i, t in enumerate(parts(q4)[0]["tensors"]) if t["dtype"] == "q4")

    def extra_binding(h):
        h["dispatches"][storage]["buffers"].append(0)

    return {
        "magic": (b"PK\x03\x04" + raw[4:], "not a webgpu_torch program"),
        "empty": (b"", "not a webgpu_torch program"),
        "short": (raw[:10], "truncated"),
        "truncated": (raw[:-100], "truncated"),
        "trailing": (raw + b"\0", "trailing bytes"),
        "container_version": (raw[:8] + struct.pack("<I", 7) + raw[12:], "container version 7"),
        "header_checksum": (bytes(flip_header), "header is damaged"),
        "data_checksum": (bytes(flip_data), "tensor data is damaged"),
        "not_json": (pack(b"{not json", data), "damaged header"),
        "header_list": (pack([1, 2, 3], data), "not an object"),
        "deep_nesting": (pack(deep, data), "header"),
        "format_version": (_edit(raw, _set("format", 99)), "format 99"),
        "missing_field": (_edit(raw, _set("dispatches", _DELETE)), "dispatches"),
        "tensor_missing": (_edit(raw, lambda h: h["tensors"].pop(0)), "constant data is missing"),
        "tensor_size": (_edit(raw, lambda h: h["tensors"][0]["shape"].__setitem__(0, h["tensors"][0]["shape"][0] + 1)),
                        "mis-sized or out of bounds"),
        "tensor_dtype": (_edit(raw, _set("tensors.0.dtype", "f64")), "unknown dtype"),
        "dangling_buffer": (_edit(raw, _set(f"dispatches.{storage}.buffers.0", 999)), "bad buffer index"),
        "binding_count": (_edit(raw, extra_binding), "binds"),
        "writes_constant": (_edit(raw, write_constant), "writes a buffer that is not scratch"),
        "grid_zero": (_edit(raw, _set("dispatches.0.grid", [0, 1, 1])), "bad grid"),
        "grid_large": (_edit(raw, _set("dispatches.0.grid", [70000, 1, 1])), "bad grid"),
        "binding_kind": (_edit(raw, _set("kernels.0.bindings.0", "sampler")), "unknown binding kind"),
        "short_uniform": (_edit(raw, _set(f"dispatches.{uniform}.uniform", [1])), "short uniform"),
        "uniform_word": (_edit(raw, _set(f"dispatches.{uniform}.uniform.0", -1)), "not a u32"),
        "unknown_feature": (_edit(raw, _set("kernels.0.requires", ["teleport"])), "unknown features"),
        "f16_fallback": (_edit(f16, _set(f"kernels.{f16_kernel}.fallback", _DELETE)), "no fallback"),
        "output_view": (_edit(raw, _set("outputs.0.offset", 10**6)), "reaches past its buffer"),
        "output_tree": (_edit(raw, _set("output_tree", {"type": "tuple", "items": [{"type": "leaf"}] * 2})),
                        "output tree does not match"),
        "symbol": (_edit(raw, _set("outputs.0.shape.0", "nope")), "undeclared symbol"),
        "expression_op": (_edit(raw, _set("outputs.0.shape.0", ["**", 2, 3])), "unknown expression operator"),
        "negative_size": (_edit(raw, _set("buffers.0.size", -4)), "bad size"),
        "source_index": (_edit(raw, _set("kernels.0.source", 99)), "bad source index"),
        "packed_size": (_edit(q4, _set(f"tensors.{packed}.group", 64)), "mis-sized or out of bounds"),
        "packed_group": (_edit(q4, _set(f"tensors.{packed}.group", 12)), "straddles u32 words"),
        "packed_zero_points": (_edit(q4, _set(f"tensors.{packed}.zero_points", 1)), "zero_points is not a boolean"),
    }


def write_damaged() -> None:
    BAD.mkdir(exist_ok=True)
    for old in BAD.glob("*.wgpt"):
        old.unlink()
    expected = {}
    raw, f16, q4 = ((HERE / f"{name}.wgpt").read_bytes() for name in ("tiny", "weights_f16", "weights_int4"))
    for name, (data, phrase) in damaged(raw, f16, q4).items():
        (BAD / f"{name}.wgpt").write_bytes(data)
        expected[name] = phrase
    (BAD / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    write_models()
    write_damaged()
