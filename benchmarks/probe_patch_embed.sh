#!/usr/bin/env bash
# DaViT's patch embed (3->128, k7 s4, 768²) on each element im2col tile, untuned, then what the tuner's
# probe measures for the same candidates: checks that the probe ranks them as the program runs them.
WEBGPU_TORCH_TUNE=0 python3 - <<'PY'
import sys, torch, webgpu_torch
from webgpu_torch.runtime import timing, tuning
from webgpu_torch.runtime.executor import Executor
s = int(sys.argv[1]) if len(sys.argv) > 1 else 768
conv = torch.nn.Conv2d(3, 128, 7, 4, 3).eval(); x = torch.randn(1, 3, s, s)
ep = torch.export.export(conv, (x,))
for g in ("128x128", "64x64", "pr"):
    p = webgpu_torch.compile(ep, conv="im2col", gemm=g); p(x)
    print(g, "gpu_time ms", round(timing.gpu_time(p.executor(), repeats=5).seconds * 1e3, 4))
p = webgpu_torch.compile(ep, conv="im2col")
print([p.kernels[d.kernel].name for d in p.dispatches], [[p.kernels[o.kernel].name for o in d.options] for d in p.dispatches])
probe, spans = tuning._probe(p, tuning.groups(p))
print("probe ms", [round(t * 1e3, 4) for t in timing.dispatch_times(Executor(probe), samples=3, repeats=8)], spans)
PY
