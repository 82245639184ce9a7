"""`webgpu-torch demo`: compile a model, run it on WebGPU, check it against eager PyTorch, print timings."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import webgpu_torch

from .runtime import timing


@dataclass(frozen=True)
class DemoModel:
    description: str
    build: Callable[[], tuple[torch.nn.Module, tuple]]
    tolerance: float  # largest scale-relative error against eager float64 that passes


def _mlp() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(37, 113), torch.nn.ReLU(), torch.nn.Linear(113, 89),
                                torch.nn.ReLU(), torch.nn.Linear(89, 41), torch.nn.Sigmoid())
    return model.eval(), (torch.randn(7, 37),)


MODELS = {
    "mlp": DemoModel("MLP 37→113→89→41 (Linear, ReLU, Sigmoid), batch 7, seeded weights", _mlp, 1e-5),
}


def run(name: str = "mlp", engine: str | None = None, repeats: int = 20) -> bool:
    demo = MODELS[name]
    model, args = demo.build()
    info = webgpu_torch.device_info(engine)
    print(f"model:   {demo.description}")
    print(f"device:  {info['adapter']} via {info['engine_module']} ({info['backend']}, {info['adapter_type']})")

    start = time.perf_counter()
    program = webgpu_torch.compile_module(model, args)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    program.executor(engine)
    load_s = time.perf_counter() - start
    print(f"compile: {compile_s:.2f} s  ({len(program.dispatches)} dispatches, {len(program.kernels)} pipelines)")
    print(f"load:    {load_s:.2f} s  (pipelines, bind groups, weight upload)")

    with torch.no_grad():
        got = program(*args)
        want = model.double()(*[a.double() for a in args])
    err = float((got.double() - want).abs().max() / want.abs().max())
    ours = timing.wall_time(lambda: program(*args), repeats) * 1e3
    with torch.no_grad():
        model.float()
        eager = timing.wall_time(lambda: model(*args), repeats) * 1e3
    print(f"run:     WebGPU {ours:.3f} ms per call (inputs in, outputs out), torch eager CPU {eager:.3f} ms "
          f"(median of {repeats})")
    ok = err <= demo.tolerance and not np.isnan(err)
    print(f"check:   max error {err:.2e} of the output scale vs eager float64 (tolerance {demo.tolerance:g}): "
          f"{'PASS' if ok else 'FAIL'}")
    return ok
