"""A sampler call's whole time at a vocabulary size: wall (median of 30 calls, logits uploaded from the host
each time) and GPU (timestamp queries), and its dispatches' GPU time by node, the largest first.

    python benchmarks/sampler_call.py VOCAB [VOCAB ...]

The sampler is the decoding program `generate(do_sample=True)` runs after each step
(tools/models/decoder_programs.py), called with top-k 50, top-p 0.9, temperature 0.8 and a repetition penalty
of 1.2 over a seeded random row of logits.
"""

from __future__ import annotations

import statistics
import sys
import time
from collections import defaultdict

import torch

from webgpu_torch.runtime import timing
from webgpu_torch.tools.models.decoder_programs import compile_programs

CALLS = 30


def measure(vocab: int) -> None:
    start = time.perf_counter()
    sampler = compile_programs(None, vocab, 1, 4096, 1)["sampler"]
    compiled = time.perf_counter() - start
    logits = torch.randn(1, 1, vocab, generator=torch.Generator().manual_seed(0)) * 3
    args = (logits, torch.tensor([[1, 2, 3]]), torch.tensor([0.8, 50.0, 0.9, 0.0, 1.2]), torch.tensor([0.5]))
    start = time.perf_counter()
    sampler(*args)
    first = time.perf_counter() - start
    walls = []
    for _ in range(CALLS):
        start = time.perf_counter()
        sampler(*args)
        walls.append(time.perf_counter() - start)
    executor = sampler.executor()
    gpu = timing.gpu_time(executor, repeats=4, samples=5)
    times = timing.dispatch_times(executor, samples=3, repeats=1)
    by_node = defaultdict(lambda: [0, 0.0])
    for d, t in zip(executor.program.dispatches, times, strict=True):
        part = by_node[d.node, executor.program.kernels[d.kernel].name.split("[")[0]]
        part[0] += 1
        part[1] += t
    print(f"vocab {vocab}: compile {compiled:.1f} s, first call {first * 1e3:.1f} ms, wall median "
          f"{statistics.median(walls) * 1e3:.3f} ms, GPU per call {gpu.seconds * 1e3:.3f} ms ({gpu.method}), "
          f"{len(times)} dispatches, summed {sum(times) * 1e3:.3f} ms")
    for (node, kernel), (count, seconds) in sorted(by_node.items(), key=lambda kv: -kv[1][1])[:12]:
        print(f"  {node:40s} {kernel:28s} x{count:3d} {seconds * 1e6:9.1f} us")


if __name__ == "__main__":
    for size in map(int, sys.argv[1:]):
        measure(size)
