"""Deeper K splits for a prompt's GEMMs over int4 weights: gemm.ENOUGH_BLOCKS raised, every candidate tuned."""
import sys

import torch

import webgpu_torch
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.runtime import timing

gemm.ENOUGH_BLOCKS = int(sys.argv[1])
for m, n, k in [(33, 16384, 2048), (33, 3072, 2048), (33, 2048, 2048), (33, 2048, 8192)]:
    g = torch.Generator().manual_seed(n + k)
    lin = torch.nn.Linear(k, n, bias=False)
    x = torch.randn(m, k, generator=g)
    session = webgpu_torch.compile_module(lin, (x,), weights="int4", group_size=32)
    program = session.program
    offered = sum(len(d.options) for d in program.dispatches[:1])
    ex = session.executor()
    session(x.numpy())
    t = timing.gpu_time(ex, repeats=10)
    chosen = [(ex.program.kernels[d.kernel].name, d.grid[0] * d.grid[1] * d.grid[2]) for d in ex.program.dispatches]
    print(f"ENOUGH {gemm.ENOUGH_BLOCKS} {m}x{n}x{k}: {t.seconds * 1e3:.4f} ms; {offered} options; chosen {chosen}",
          flush=True)
