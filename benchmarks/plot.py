"""Plots docs/benchmarks.md's GEMM figure from `webgpu-torch bench gemm --json` results.

    python benchmarks/plot.py DAWN.json [WGPU.json] OUT.png

Left: kernel throughput (GPU time, inputs on the device) of our automatic routing and of the ExecuTorch
PR's kernel, per engine, against the baseline measured in the same run (cuBLAS fp32 on a CUDA machine).
Right: a whole call with host inputs and outputs, ours against ONNX Runtime's WebGPU EP, when measured.
"""

from __future__ import annotations

import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt


def _series(rows, variant, key):
    pts = sorted((r["M"], r[key]) for r in rows if r["variant"] == variant and isinstance(r.get(key), float))
    return [p[0] for p in pts], [p[1] for p in pts]


def main(paths: list[str], out: str) -> None:
    runs = []
    for p in paths:
        with open(p) as f:
            runs.append(json.load(f))
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
    for run in runs:
        engine = run["meta"]["device"].split(" via ")[1].split(" ")[0]
        for variant, style in (("auto", "-o"), ("pr", "--s")):
            x, y = _series(run["rows"], variant, "GFLOP/s")
            label = f"ours ({engine})" if variant == "auto" else f"ExecuTorch PR kernel ({engine})"
            left.plot(x, y, style, label=label)
    x, y = _series(runs[0]["rows"], "auto", "baseline GFLOP/s")
    left.plot(x, y, ":k^", label=runs[0]["meta"]["baseline"].split(",")[0])
    left.set(xscale="log", yscale="log", xlabel="M = N = K", ylabel="GFLOP/s (fp32)", title="GEMM kernel throughput")
    left.legend(fontsize=7)
    rows = runs[0]["rows"]
    x, ours = _series(rows, "auto", "wall ms")
    _, ort = _series(rows, "auto", "ORT wall ms")
    if ours:
        right.plot(x, ours, "-o", label="ours, host in/out")
        right.plot(x, ort, "--s", label="ONNX Runtime WebGPU EP, host in/out")
        right.set(xscale="log", yscale="log", xlabel="M = N = K", ylabel="ms per call", title="Whole call")
        right.legend(fontsize=7)
    fig.suptitle(runs[0]["meta"]["device"].split(";")[0], fontsize=9)
    fig.tight_layout()
    fig.savefig(out, dpi=110)


if __name__ == "__main__":
    main(sys.argv[1:-1], sys.argv[-1])
