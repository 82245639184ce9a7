"""Every tuning candidate of one GEMM, 1x1/3x3 convolution, attention or argmax on this machine's WebGPU device,
timed as tuning would see them but without a budget: each candidate's dispatches in a pass of their own,
samples interleaved across the candidates (so a busy machine slows all alike), the median per candidate.

    python benchmarks/tuning_candidates.py linear M N K | mm M N K | conv C OC HW KS STRIDE | attention B H S D
                                           | argmax ROWS N

On a machine without a GPU, point Vulkan at another software driver to compare CPU adapters, e.g. Chromium's
SwiftShader: VK_ICD_FILENAMES=/usr/lib/chromium/vk_swiftshader_icd.json (lavapipe otherwise).
"""

from __future__ import annotations

import statistics
import sys

import torch

import webgpu_torch
from webgpu_torch.runtime import timing, tuning
from webgpu_torch.runtime.engine import get_engine

SAMPLES = 5


class _MM(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


class _Argmax(torch.nn.Module):
    def forward(self, x):
        return x.argmax(-1)


class _Attention(torch.nn.Module):
    def forward(self, q, k, v, mask):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)


def problem(kind: str, sizes: list[int]) -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    if kind == "linear":
        m, n, k = sizes
        return torch.nn.Linear(k, n), (torch.randn(m, k),)
    if kind == "mm":
        m, n, k = sizes
        return _MM(), (torch.randn(m, k), torch.randn(k, n))
    if kind == "conv":
        c, oc, hw, ks, stride = sizes
        return torch.nn.Conv2d(c, oc, ks, stride=stride, padding=ks // 2), (torch.randn(1, c, hw, hw),)
    if kind == "attention":
        b, h, s, d = sizes
        return _Attention(), (*(torch.randn(b, h, s, d) for _ in range(3)), torch.randn(b, 1, 1, s))
    if kind == "argmax":
        rows, n = sizes
        return _Argmax(), (torch.randn(rows, n),)
    raise SystemExit(__doc__)


def main(argv: list[str]) -> int:
    if len(argv) < 2:
        raise SystemExit(__doc__)
    module, args = problem(argv[0], [int(x) for x in argv[1:]])
    program = webgpu_torch.compile_module(module.eval(), args).program
    print(webgpu_torch.device_info()["adapter"])
    for members in tuning.groups(program):
        count = len(tuning.candidates(program.dispatches[members[0]]))
        # Each over its probe's seeded inputs, run once (a warm-up, and a driver's compile at the first dispatch)
        executors = [tuning.Candidate(program, members, c, get_engine()).executor for c in range(count)]
        samples = [[sum(timing.dispatch_times(ex, samples=1, warm_up=False)) for ex in executors]
                   for _ in range(SAMPLES)]
        print(f"{' '.join(argv)}: {program.dispatches[members[0]].node}")
        rows = []
        for c in range(count):
            names = "+".join(program.kernels[tuning.candidates(program.dispatches[i])[c].kernel].name
                             for i in members)
            rows.append((statistics.median(s[c] for s in samples), names, tuning.candidates(
                program.dispatches[members[0]])[c].grid))
        for seconds, names, grid in sorted(rows):
            print(f"  {seconds * 1e3:10.2f} ms  {names} {grid}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
