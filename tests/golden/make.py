"""Writes the golden corpus: small artifacts that exercise every part of docs/artifact.md, each with calls and
the outputs the Python runtime gave, valid edits of them, and damaged copies with the error each must raise
(damage.py); then the conformance corpus's decision vectors (tests/conformance/make.py) and js/src/limits.js
(from src/webgpu_torch/format/limits.json). Both runtimes' tests read these files (tests/test_golden.py,
tests/test_conformance.py, js/test/golden.test.js, js/test/conformance.test.js); README.md describes them.

    .venv/bin/python -m tests.golden.make       # rewrite them (after a change to the format)
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import numpy as np
import torch

import webgpu_torch
from webgpu_torch.format import limits, tree
from webgpu_torch.runtime.tuning import TUNE_VAR

from ..conformance import make as conformance
from . import damage
from .damage import pack, parts

HERE = Path(__file__).parent
BAD = HERE / "bad"
ROOT = HERE.parent.parent


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


class Stateful(torch.nn.Module):
    """State (docs/artifact.md, State): a cache written in place at a position, and a counter written back."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 3, 11, 5), persistent=False)
        self.register_buffer("count", torch.zeros(1, dtype=torch.int64), persistent=False)

    def forward(self, x, pos):
        self.cache.index_copy_(2, pos, x * 2)
        self.count.add_(1)
        return self.cache.sum(-1), self.count * 10


class Half(torch.nn.Module):
    """An embedding, a GEMV, a vec4 GEMM and a layer norm in the model's dtype, and casts both ways."""

    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(11, 8)
        self.up = torch.nn.Linear(8, 12)
        self.norm = torch.nn.LayerNorm(12)

    def forward(self, ids, x):
        h = self.norm(self.up(self.emb(ids) + x))
        return h, self.up(x[:, 0]), h.float() * 3, (h.float() * 1000.5).to(x.dtype)


# A program whose float outputs depend on the device's features records the tolerance they match within:
# f16 activations (shader-f16) or the float32 fallback differ by the activations' rounding.
TOLERANCE = {"activations_f16": 4e-3}


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

    # Matrix-unit options (chromium-experimental-subgroup-matrix) beside float32 ones: a runtime that does not
    # know the feature, or a device without it, skips those options and runs the file.
    lin = torch.nn.Linear(64, 48).eval()
    x = torch.randn(33, 64, generator=g)
    yield "precision_f16", webgpu_torch.compile_module(lin, (x,), precision="float16"), [((x,), {})]

    # K long and M, N small: the GEMM's default splits K, and its options are tile and split choices made as
    # a group with the reduction of the slices (`follows`).
    a, b = torch.randn(24, 524, generator=g), torch.randn(524, 20, generator=g)
    yield "options", webgpu_torch.compile_module(_Fn(torch.mm), (a, b)), [((a, b), {})]

    # float16 and bfloat16 models: inputs and outputs in 16 bits, 16-bit weights (f16 read through shader-f16
    # kernels with fallbacks, bf16 widened by the GEMM and gather kernels), casts that round on the device.
    half = Half().eval()
    ids = torch.tensor([[3, 0, 10, 7, 1], [2, 2, 9, 4, 6]])
    for dtype in (torch.float16, torch.bfloat16):
        x = torch.randn(2, 5, 8, generator=g).to(dtype)
        yield (str(dtype).removeprefix("torch."), webgpu_torch.compile_module(half.to(dtype), (ids, x)),
               [((ids, x), {})])
    # precision="float16": activations between kernels stored as f16 (kernels that require shader-f16, with
    # float32 fallbacks over scratch buffers sized for float32).
    x = torch.randn(2, 5, 8, generator=g)
    yield ("activations_f16", webgpu_torch.compile_module(half.float(), (ids, x), precision="float16"),
           [((ids, x), {})])
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

    # Each call's states are recorded after it; RESET zeroes them; position 11 is past the cache (an index
    # error: the counter's write stands, the cache's is skipped).
    xs = [torch.randn(1, 3, 1, 5, generator=g) for _ in range(4)]
    pos = [torch.tensor([p]) for p in (2, 7, 11, 2)]
    yield ("state", webgpu_torch.compile_module(Stateful(), (xs[0], pos[0])),
           [((xs[0], pos[0]), {}), ((xs[1], pos[1]), {}), ((xs[2], pos[2]), {}), RESET, ((xs[3], pos[3]), {})])


RESET = "reset_state"  # a call entry that zeroes every state instead of calling


class _Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


# -- tensors as JSON -------------------------------------------------------------------------------------------

def tensor_json(a, dtype: str | None = None) -> dict:
    """{"dtype", "shape", "data"}: data is base64 of the C-order little-endian bytes (bool: one byte each;
    bfloat16: its bits). `a` is a numpy array or a torch tensor; `dtype` names the model dtype of a numpy
    array whose own dtype is its host form (uint16 for bfloat16)."""
    if isinstance(a, torch.Tensor):
        dtype = str(a.dtype).removeprefix("torch.")
        a = host(a)
    a = np.ascontiguousarray(a)
    name = dtype or ("bool" if a.dtype == np.bool_ else str(a.dtype))
    return {"dtype": name, "shape": list(a.shape), "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<"))
                                                                            .tobytes()).decode()}


def host(t: torch.Tensor) -> np.ndarray:
    """A tensor in its numpy host form (docs/artifact.md, Dtypes): bfloat16 as its bits."""
    t = t.detach().contiguous()
    return t.view(torch.int16).numpy().view(np.uint16) if t.dtype == torch.bfloat16 else t.numpy()


def _value_json(v):
    if isinstance(v, torch.Tensor):
        return tensor_json(v)
    if isinstance(v, (tuple, list)):
        return [_value_json(x) for x in v]
    return v


def write_models() -> None:
    for name, session, calls in _models():
        session.save(HERE / f"{name}.wgpt")
        records = []
        for call in calls:
            records.append(_record(session, call))
            if session.states:
                records[-1]["states"] = {s: tensor_json(session.read_state(s)) for s in session.states}
        looser = {"tolerance": TOLERANCE[name]} if name in TOLERANCE else {}
        (HERE / f"{name}.json").write_text(json.dumps({"calls": records, **looser}, indent=1) + "\n")


def _record(session, call) -> dict:
    """A call's entry: its arguments and outputs, or the index error it raised; or the reset marker."""
    if call == RESET:
        session.reset_state()
        return {RESET: True}
    args, kwargs = call
    record = {"args": _value_json(list(args)), "kwargs": _value_json(kwargs)}
    try:
        out = session(*[host(a) if isinstance(a, torch.Tensor) else a for a in args], **kwargs)
    except webgpu_torch.DeviceIndexError as e:
        return {**record, "error": str(e).split(": ", 1)[1]}
    leaves = tree.flatten(session.program.output_tree, out, "output")
    return {**record, "outputs": [tensor_json(o, t.dtype)
                                  for o, t in zip(leaves, session.program.outputs, strict=True)]}


# -- damaged copies --------------------------------------------------------------------------------------------

def _derived(name: str, base: str, change) -> None:
    """A valid artifact made by editing golden `base` (whose calls it keeps): what a runtime must accept."""
    raw = (HERE / f"{base}.wgpt").read_bytes()
    header, data = parts(raw)
    change(header)
    (HERE / f"{name}.wgpt").write_bytes(change.pack(header, data) if hasattr(change, "pack") else pack(header, data))
    (HERE / f"{name}.json").write_text((HERE / f"{base}.json").read_text())


def _future_option(header: dict) -> None:
    """The layer norm's subgroup twin duplicated as another option that needs a feature no runtime knows."""
    d = next(d for d in header["dispatches"] if d.get("options") and not d.get("follows"))
    twin = dict(header["kernels"][d["options"][0]["kernel"]], name="layer_norm+future",
                requires=["teleport-matrix-units"])
    header["kernels"].append(twin)
    d["options"].append({**d["options"][0], "kernel": len(header["kernels"]) - 1})


class _AsFloats:
    """Every integer of the header written as a JSON number with a fraction (16.0): the same values."""

    def __call__(self, header: dict) -> None:
        pass

    @staticmethod
    def pack(header: dict, data: bytes) -> bytes:
        return pack(_floats_json(header).encode(), data)


def _floats_json(v) -> str:
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v}.0"
    if isinstance(v, list):
        return "[" + ",".join(map(_floats_json, v)) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{json.dumps(k)}:{_floats_json(x)}" for k, x in v.items()) + "}"
    return json.dumps(v)


def _proto_symbol(header: dict) -> None:
    """The dynamic dimension renamed `__proto__`: a name like any other, though JavaScript objects treat it apart."""
    (name,) = header["symbols"]
    renamed = _renamed(header, name, "__proto__")
    header.clear()
    header.update(renamed)


def _renamed(v, old: str, new: str):
    if v == old:
        return new
    if isinstance(v, list):
        return [_renamed(x, old, new) for x in v]
    if isinstance(v, dict):
        return {new if k == old else k: _renamed(x, old, new) for k, x in v.items()}
    return v


def write_derived() -> None:
    _derived("portable", "mlp", _future_option)
    _derived("integers_as_floats", "tiny", _AsFloats())
    _derived("proto_symbol", "dynamic", _proto_symbol)


def write_damaged() -> None:
    BAD.mkdir(exist_ok=True)
    for old in BAD.glob("*.wgpt"):
        old.unlink()
    expected = {}
    files = {name: (HERE / f"{name}.wgpt").read_bytes()
             for name in ("tiny", "dynamic", "structured", "options", "weights_f16", "state", "bfloat16",
                          "weights_int4")}
    for name, (data, phrase) in damage.cases(files).items():
        (BAD / f"{name}.wgpt").write_bytes(data)
        expected[name] = phrase
    (BAD / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


def write_limits_module() -> None:
    (ROOT / "js" / "src" / "limits.js").write_text(limits.js_module())


if __name__ == "__main__":
    os.environ.setdefault(TUNE_VAR, "0")  # the outputs of each dispatch's default kernel, and no cache written
    write_limits_module()
    write_models()
    write_derived()
    write_damaged()
    conformance.write()
