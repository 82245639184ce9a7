"""GEMM fp32 throughput per tile configuration, against the host's best fp32 GEMM in the same run.

Baselines: torch on CUDA (TF32 off: cuBLAS fp32 is the ceiling a fp32 kernel is compared to) when a CUDA
device is present, else numpy's BLAS on the CPU. Our figures are GPU time from timestamp queries (wall clock
where the adapter has none) over back-to-back calls, inputs already on the device.
"""

from __future__ import annotations

import numpy as np
import torch

import webgpu_torch

from ..runtime import timing
from . import baseline_seconds

DEFAULT_SIZES = [(256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048)]
DEFAULT_VARIANTS = ["pr", "64x64", "128x128", "auto"]


def _baseline(m: int, n: int, k: int, repeats: int) -> tuple[str, float]:
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        a, b = torch.randn(m, k, device="cuda"), torch.randn(k, n, device="cuda")
        return f"torch {torch.__version__} CUDA fp32 (TF32 off)", baseline_seconds(lambda: a @ b, repeats, cuda=True)
    a, b = np.random.randn(m, k).astype(np.float32), np.random.randn(k, n).astype(np.float32)
    return f"numpy {np.__version__} CPU fp32", baseline_seconds(lambda: a @ b, repeats, cuda=False)


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", nargs="*", metavar="MxNxK", help="default: " + " ".join(
        "x".join(map(str, s)) for s in DEFAULT_SIZES))
    parser.add_argument("--variants", nargs="*", help=f"default: {' '.join(DEFAULT_VARIANTS)}")


def run(args) -> tuple[list[dict], dict]:
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes] if args.sizes else DEFAULT_SIZES
    return measure(sizes, args.variants or DEFAULT_VARIANTS, args.engine, args.repeat)


def measure(sizes, variants, engine: str | None = None, repeats: int = 5) -> tuple[list[dict], dict]:
    rows = []
    info = webgpu_torch.device_info(engine)
    for m, n, k in sizes:
        flops = 2.0 * m * n * k
        base_name, base_s = _baseline(m, n, k, repeats)
        a, b = torch.randn(m, k), torch.randn(k, n)
        ep = torch.export.export(_MM(), (a, b))
        for variant in variants:
            program = webgpu_torch.compile(ep, gemm=variant)
            ex = program.executor(engine)
            program(a, b)  # uploads the inputs
            t = timing.gpu_time(ex, repeats=repeats)
            rows.append({"M": m, "N": n, "K": k, "variant": variant,
                         "kernel": program.kernels[program.dispatches[0].kernel].name,
                         "ms": t.seconds * 1e3, "GFLOP/s": flops / t.seconds / 1e9,
                         "baseline GFLOP/s": flops / base_s / 1e9, "vs baseline": base_s / t.seconds,
                         "timer": t.method})
    return rows, {"title": "GEMM fp32", "baseline": base_name,
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


class _MM(torch.nn.Module):
    def forward(self, a, b):
        return a @ b


COLUMNS = ["M", "N", "K", "variant", "kernel", "ms", "GFLOP/s", "baseline GFLOP/s", "vs baseline"]
