"""Where a call's wall time goes: inputs up, GPU, outputs mapped, outputs copied out — ours against torch CUDA
moving the same bytes (`.cuda()` of the inputs, the model on the GPU, `.cpu()` of the outputs), in one run.

Each phase is awaited before the next starts (runtime/timing.call_phases), so the phases show what each
costs alone; `wall` is a whole call as a user makes it (host arrays in, host arrays out), and `wall - GPU`
the host-side cost compared (target: ours ≤ 1.25× torch's); `wall (plain)` is our call with
runtime/transfer.py's staging and threaded copies switched off. Cases: GEMMs (A and B uploaded),
a chain of 16 dependent GEMMs with constant weights, and whole models (`bench models`' list).
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

import webgpu_torch

from ...runtime import timing, transfer
from ...runtime.session import bind, check_input
from . import models

COLUMNS = ["case", "MB in", "MB out", "ours upload", "ours GPU", "ours map", "ours copy", "ours wall",
           "ours wall (plain)", "ours wall-GPU", "torch up", "torch GPU", "torch down", "torch wall",
           "torch wall-GPU", "host cost vs torch"]


class _Chain(torch.nn.Module):
    """16 dependent n×n GEMMs, the weights constants of the program."""

    def __init__(self, n: int, depth: int = 16):
        super().__init__()
        self.weights = torch.nn.ParameterList(torch.nn.Parameter(torch.randn(n, n) / n**0.5) for _ in range(depth))

    def forward(self, x):
        for w in self.weights:
            x = x @ w
        return x


class _MM(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


def _cases(names: list[str]):
    for name in names:
        if name.startswith("gemm"):
            n = int(name[4:])
            yield name, _MM(), (torch.randn(n, n), torch.randn(n, n))
        elif name.startswith("chain"):
            n = int(name[5:])
            yield name, _Chain(n), (torch.randn(n, n),)
        else:
            model, inputs = models.MODELS[name]()
            yield name, model, inputs


def add_arguments(parser) -> None:
    parser.add_argument("--cases", nargs="*", default=["gemm2048", "gemm4096", "chain2048", "resnet50",
                                                       "vit_b16", "florence2_vision"])


def run(args) -> tuple[list[dict], dict]:
    cuda = torch.cuda.is_available()
    rows = []
    for name, model, inputs in _cases(args.cases):
        torch.manual_seed(0)
        model = model.eval()
        session = webgpu_torch.compile_module(model, inputs)
        host = [x.numpy() for x in inputs]
        values = [check_input(s, x) for s, x in zip(session.program.inputs, host, strict=True)]
        ex = session.executor(args.engine)
        ours = timing.call_phases(ex, values, bind(session.program, values), samples=args.repeat)
        ours["wall"] = timing.wall_time(lambda s=session, h=host: s(*h), args.repeat)
        with _plain_transfers():  # the same call through queue.write_buffer and one-thread copies
            plain = webgpu_torch.Session(session.program, args.engine)
            plain_wall = timing.wall_time(lambda s=plain, h=host: s(*h), args.repeat)
        ours["gpu"] = timing.gpu_time(ex, repeats=args.repeat).seconds  # timestamps, not the drained phase
        outs = session(*host)
        out_bytes = sum(o.nbytes for o in torch.utils._pytree.tree_leaves(outs) if hasattr(o, "nbytes"))
        row = {"case": name, "MB in": sum(x.nbytes for x in host) / 1e6, "MB out": out_bytes / 1e6,
               **{f"ours {k if k != 'gpu' else 'GPU'}": v * 1e3 for k, v in ours.items()},
               "ours wall (plain)": plain_wall * 1e3, "ours wall-GPU": (ours["wall"] - ours["gpu"]) * 1e3}
        if cuda:
            theirs = _torch_phases(model, inputs, args.repeat)
            row.update({f"torch {k}": v * 1e3 for k, v in theirs.items()})
            row["torch wall-GPU"] = (theirs["wall"] - theirs["GPU"]) * 1e3
            row["host cost vs torch"] = (ours["wall"] - ours["gpu"]) / (theirs["wall"] - theirs["GPU"])
        rows.append(row)
    info = webgpu_torch.device_info(args.engine)
    base = f"torch {torch.__version__} CUDA fp32 (TF32 off), pageable host tensors" if cuda else "none (no CUDA)"
    return rows, {"title": "A call's wall time by phase (ms)", "baseline": base,
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


@contextmanager
def _plain_transfers():
    """runtime/transfer.py's paths switched off: every input through queue.write_buffer, every output copied
    by one thread (what they are measured against)."""
    saved = transfer.STAGED_BYTES, transfer.PARALLEL_BYTES
    transfer.STAGED_BYTES = transfer.PARALLEL_BYTES = 1 << 62
    try:
        yield
    finally:
        transfer.STAGED_BYTES, transfer.PARALLEL_BYTES = saved


def _torch_phases(model, inputs, repeats: int) -> dict[str, float]:
    """torch's phases, each synchronised: up (.cuda()), GPU (CUDA events), down (.cpu()), and a whole call."""
    import statistics
    import time

    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    m = model.cuda()

    def call():
        with torch.no_grad():
            out = m(*[x.cuda() for x in inputs])
            return torch.utils._pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, out)

    times = {"up": [], "GPU": [], "down": [], "wall": []}
    for sample in range(repeats + 1):
        t0 = time.perf_counter()
        dev = [x.cuda() for x in inputs]
        torch.cuda.synchronize()
        t1 = time.perf_counter()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        with torch.no_grad():
            out = m(*dev)
        end.record()
        torch.cuda.synchronize()
        t2 = time.perf_counter()
        torch.utils._pytree.tree_map(lambda t: t.cpu() if isinstance(t, torch.Tensor) else t, out)
        t3 = time.perf_counter()
        call()
        t4 = time.perf_counter()
        if sample:
            for k, v in zip(times, (t1 - t0, start.elapsed_time(end) / 1e3, t3 - t2, t4 - t3), strict=True):
                times[k].append(v)
    model.cpu()
    return {k: statistics.median(v) for k, v in times.items()}
