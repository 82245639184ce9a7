"""The Python runtime's side of js/bench/device.sh: median wall milliseconds per call of each artifact (inputs
from the first call of NAME.json beside it, tests/golden/README.md) and per decoder step of each Seq2Seq folder,
as js/bench/bench.js measures the JavaScript runtime.

    python js/bench/python_calls.py CALLS PATH.wgpt|SEQ2SEQ_FOLDER ...
"""

from __future__ import annotations

import base64
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

import webgpu_torch
from webgpu_torch.runtime.generation import Seq2Seq


def tensor(j: dict) -> np.ndarray:
    dtype = np.dtype("bool" if j["dtype"] == "bool" else "<" + np.dtype(j["dtype"]).str[1:])
    return np.frombuffer(base64.b64decode(j["data"]), dtype).reshape(j["shape"])


def value(v):
    if isinstance(v, dict) and set(v) == {"dtype", "shape", "data"}:
        return tensor(v)
    if isinstance(v, list):
        return [value(x) for x in v]
    if isinstance(v, dict):
        return {k: value(x) for k, x in v.items()}
    return v


def first_call(record: Path) -> tuple[list, dict]:
    """The positional and keyword arguments of the first call a corpus record (NAME.json) holds."""
    call = json.loads(record.read_text())["calls"][0]
    return value(call["args"]), value(call["kwargs"])


def per_call(path: Path, calls: int) -> str:
    session = webgpu_torch.load(path)
    args, kwargs = first_call(path.with_suffix(".json"))
    session(*args, **kwargs)
    times = []
    for _ in range(calls):
        start = time.perf_counter()
        session(*args, **kwargs)
        times.append(time.perf_counter() - start)
    return f"{path}: {statistics.median(times) * 1e3:.3f} ms per call (python, median of {calls})"


def per_step(folder: Path, generations: int) -> str:
    record = json.loads((folder / "generate.json").read_text())
    model = Seq2Seq.load(folder)
    pixels, prompt = tensor(record["pixel_values"]), tensor(record["prompt_ids"])
    model.generate(pixels, prompt, record["max_new_tokens"])
    steps = []
    for _ in range(generations):
        model.generate(pixels, prompt, record["max_new_tokens"])
        steps.append(statistics.median(model.timings["decoder steps"][1:]))
    return (f"{folder}: {statistics.median(steps) * 1e3:.3f} ms per decoder step (python, median over "
            f"{generations} generations of {record['max_new_tokens']})")


if __name__ == "__main__":
    n = int(sys.argv[1])
    for arg in map(Path, sys.argv[2:]):
        print(per_step(arg, max(1, n // 4)) if (arg / "generate.json").is_file() else per_call(arg, n), flush=True)
