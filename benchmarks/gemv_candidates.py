"""Every GEMV candidate, timed on its own, at a 1B-class LM's decode shapes: the fraction of memory bandwidth each
reaches reading its weight.

    python benchmarks/gemv_candidates.py [--weights int4 float16 float32] [--shapes NxK ...]
                                         [--prologues none rms] [--json OUT]

For each weight storage and shape (y = x @ Wᵀ, x one row, W [N, K] a constant of the program) it compiles the
program, then times each candidate of its GEMV (gemm.GEMV_TEAMS / PACKED_GEMV_TEAMS: lanes and columns per team)
with timestamp queries, forced as tuning could choose it, and reports the weight's bytes read per second and
that rate against a device-to-device copy timed by torch on the same GPU in the same run (bytes read and
written), where CUDA is present. `--prologues rms` also times each candidate normalizing x as it reads it (an
rms_norm folded into the GEMV, passes/norm_prologues.py), as a decoder's q/k/v and gate/up GEMVs do.
"""

from __future__ import annotations

import argparse
import itertools
import json
from dataclasses import replace

import torch

import webgpu_torch
from webgpu_torch.runtime import timing, tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.fit import runs_on
from webgpu_torch.runtime.session import Session
from webgpu_torch.tools.bench.profile import copy_bandwidth

# Llama-3.2-1B's decode: q/o (2048 x 2048), the MLP's up/gate (8192 x 2048) and down (2048 x 8192), the LM head.
SHAPES = [(2048, 2048), (8192, 2048), (2048, 8192), (128256, 2048)]


class _Linear(torch.nn.Module):
    def __init__(self, w: torch.Tensor, prologue: str):
        super().__init__()
        self.w, self.prologue = torch.nn.Parameter(w), prologue
        self.g = torch.nn.Parameter(torch.linspace(0.5, 1.5, w.shape[1]))

    def forward(self, x):
        k = self.w.shape[1]
        if self.prologue == "rms":
            x = torch.nn.functional.rms_norm(x, (k,), self.g, 1e-5)
        return torch.nn.functional.linear(x, self.w)


def candidates(n: int, k: int, weights: str, prologue: str = "none") -> list[dict]:
    """A row per GEMV candidate this device runs. A weight over the binding limit is split into row chunks, a
    GEMV each: candidate c is then c in every chunk, its time the sum of theirs."""
    g = torch.Generator().manual_seed(n + k)
    w, x = torch.randn(n, k, generator=g) / k**0.5, torch.randn(1, k, generator=g)
    options = {} if weights == "float32" else {"weights": weights, "group_size": 32}
    program = webgpu_torch.compile_module(_Linear(w, prologue), (x,), **options).program
    leaders = [m[0] for m in tuning.groups(program) if "gemv" in program.kernels[program.dispatches[m[0]].kernel].name]
    nbytes = sum(program.buffers[b].size for i in leaders for b in program.dispatches[i].buffers
                 if program.buffers[b].role == "constant")
    engine = get_engine()
    rows = []
    for c, option in enumerate(tuning.candidates(program.dispatches[leaders[0]])):
        kernel = program.kernels[option.kernel]
        if not runs_on(kernel, engine.device.features, engine.limits):
            continue
        chosen = replace(program, dispatches=[d.choose(tuning.candidates(d)[c]) if i in leaders else d
                                              for i, d in enumerate(program.dispatches)])
        times = timing.dispatch_times(Session(chosen).executor(), samples=5, repeats=20)
        seconds = sum(times[i] for i in leaders)
        rows.append({"N": n, "K": k, "weights": weights, "candidate": c, "kernel": kernel.name,
                     "us": seconds * 1e6, "weight MB": nbytes / 1e6, "GB/s": nbytes / seconds / 1e9})
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--weights", nargs="*", default=["int4", "float16", "float32"])
    parser.add_argument("--shapes", nargs="*", default=[f"{n}x{k}" for n, k in SHAPES], help="NxK")
    parser.add_argument("--prologues", nargs="*", default=["none"], choices=["none", "rms"])
    parser.add_argument("--json")
    args = parser.parse_args()
    info = webgpu_torch.device_info()
    copy = copy_bandwidth()
    print(f"device: {info['adapter']} via {info['engine_module']} ({info['backend']}); torch's device copy: "
          + (f"{copy / 1e9:.0f} GB/s" if copy else "no CUDA"))
    rows = []
    for weights, shape, prologue in itertools.product(args.weights, args.shapes, args.prologues):
        n, k = map(int, shape.split("x"))
        for row in candidates(n, k, weights, prologue):
            row["of copy"] = f"{100 * row['GB/s'] * 1e9 / copy:.0f}%" if copy else "-"
            rows.append(row)
            print(f"{weights:8s} {n:6d} x {k:5d}  {row['kernel']:48s} {row['us']:9.1f} us  "
                  f"{row['weight MB']:7.2f} MB  {row['GB/s']:7.1f} GB/s  {row['of copy']}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"device": info["adapter"], "copy GB/s": copy and copy / 1e9, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
