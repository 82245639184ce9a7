"""Hostile artifacts for tests/test_fuzz.py: seeded mutations of the golden corpus, and the child process that
loads and runs one, reporting how it ended.

    python -m tests.fuzz FILE      # load FILE, call it with zeros at the hints, print the outcome as JSON

A mutation either breaks bytes (the checksums must catch it) or edits the parsed header and writes it back
with correct lengths and checksums, so the reader's validation — not the CRC — has to refuse it, or the
program must run (to any numbers) or time out: a grid scaled up, a uniform word set to 2³¹ − 1, a WGSL loop
that never exits, deep nesting, wrong types, missing keys, values at the edges of their ranges.
"""

from __future__ import annotations

import json
import os
import random
import sys
from pathlib import Path

import numpy as np

GOLDEN = Path(__file__).parent / "golden"
BASES = ("tiny", "mlp", "dynamic", "structured", "options", "weights_f16")
DEEP = "<5,000 nested lists>"  # put in as text: json would recurse
EDGES = [0, 1, -1, 3, 2**16 - 1, 2**16, 2**31 - 1, 2**31, 2**32, 2**53, -(2**31), 1.5, "x", "", None, True, [],
         {}, [0, 0, 0], {"type": "leaf"}]


def _paths(value, prefix=()):
    """Every path into a JSON value (not into WGSL text)."""
    yield prefix
    if isinstance(value, dict):
        for k, v in value.items():
            if k != "sources":
                yield from _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, (*prefix, i))


def _at(value, path):
    for k in path:
        value = value[k]
    return value


def _edit_header(rng: random.Random, header: dict) -> str:
    """One random edit of `header` in place; returns what it did."""
    kind = rng.choice(["value", "value", "value", "delete", "list", "uniform", "grid", "wgsl_loop", "wgsl_nest",
                       "wgsl_garbage", "deep"])
    if kind == "uniform":
        d = rng.choice([d for d in header["dispatches"] if d["uniform"]] or header["dispatches"])
        if d["uniform"]:
            d["uniform"][rng.randrange(len(d["uniform"]))] = 2**31 - 1
        return "a uniform word set to 2^31-1"
    if kind == "grid":
        d = rng.choice(header["dispatches"])
        d["grid"] = rng.choice([[65535, 65535, 1], [4096, 4096, 1], [65535, 256, 1], [1, 1, 65535]])
        return f"a grid set to {d['grid']}"
    if kind.startswith("wgsl"):
        i = rng.randrange(len(header["sources"]))
        src = header["sources"][i]
        if kind == "wgsl_loop":
            at = src.find("{", src.find("@compute"))
            header["sources"][i] = src[:at + 1] + " loop { } " + src[at + 1:] if at >= 0 else src
        elif kind == "wgsl_nest":
            header["sources"][i] = src.replace("return", "return " + "(" * 5000 + "0" + ")" * 5000 + ";//", 1)
        else:
            cut = rng.randrange(len(src))
            header["sources"][i] = src[:cut] + "".join(rng.choice("{}();<>@ab1") for _ in range(20)) + src[cut:]
        return kind
    section = rng.choice([k for k in header if k != "sources"])  # each part of the header alike
    path = rng.choice([p for p in _paths(header) if p and p[0] == section])
    parent, key = _at(header, path[:-1]), path[-1]
    if kind == "delete" and isinstance(parent, dict):
        del parent[key]
        return f"deleted {path}"
    if kind == "list" and isinstance(parent, list):
        parent.insert(key, parent[key]) if rng.random() < 0.5 else parent.pop(key)
        return f"list resized at {path}"
    if kind == "deep":
        parent[key] = DEEP
        return f"deep nesting at {path}"
    parent[key] = rng.choice(EDGES)
    return f"{path} = {parent[key]!r}"


def mutate(seed: int) -> tuple[bytes, str]:
    """The `seed`-th hostile artifact and a description of it."""
    from .golden.make import pack, parts

    rng = random.Random(seed)
    base = rng.choice(BASES)
    raw = (GOLDEN / f"{base}.wgpt").read_bytes()
    r = rng.random()
    if r < 0.15:
        data = bytearray(raw)
        for _ in range(rng.randint(1, 4)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        return bytes(data), f"{base}: bits flipped"
    if r < 0.2:
        return raw[:rng.randrange(len(raw))], f"{base}: truncated"
    header, blob = parts(raw)
    if r < 0.3:
        data = bytearray(blob)
        for _ in range(16):
            data[rng.randrange(len(data))] = rng.randrange(256)
        return pack(header, bytes(data)), f"{base}: constants overwritten (checksums fixed)"
    what = [_edit_header(rng, header) for _ in range(rng.choice([1, 1, 2, 3]))]
    text = json.dumps(header).replace(json.dumps(DEEP), "[" * 5000 + "]" * 5000)
    return pack(text.encode(), blob), f"{base}: " + "; ".join(what)


def _call(path: str) -> dict:
    """Load and run `path` once with zeros at the dynamic sizes' hints; the outcome as a dict."""
    import webgpu_torch
    from webgpu_torch import dtypes, symbolic, tree

    try:
        session = webgpu_torch.load(path)
    except webgpu_torch.WebGPUTorchError as e:
        return {"outcome": "refused at load", "error": type(e).__name__, "message": str(e)}
    program = session.program
    leaves = [np.zeros([symbolic.hint(s) for s in spec.shape], dtypes.dtype(spec.dtype).host)
              for spec in program.inputs]
    args, kwargs = tree.unflatten(program.input_tree, leaves)
    try:
        session(*args, **kwargs)
    except webgpu_torch.WebGPUTorchError as e:
        return {"outcome": "refused at run", "error": type(e).__name__, "message": str(e)}
    return {"outcome": "ran"}


if __name__ == "__main__":
    try:
        result = _call(sys.argv[1])
    except BaseException as e:
        result = {"outcome": "raw exception", "error": type(e).__name__, "message": str(e)[:500]}
    print(json.dumps(result), flush=True)
    os._exit(0)  # skip engine teardown: a device that timed out may still be busy
