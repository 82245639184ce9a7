"""GEMM throughput per kernel configuration, against baselines measured in the same run.

Ours: GPU time from timestamp queries over back-to-back calls with the inputs already on the device (wall
clock where the adapter has no timestamps), and with --ort also the wall time of a whole call with inputs from
and outputs to the host. Baselines: torch on CUDA with TF32 off (cuBLAS fp32, the ceiling for a fp32 kernel)
and in float16 (cuBLAS on tensor cores) when a CUDA device is present, else numpy's BLAS on the CPU; with
--ort, ONNX Runtime's WebGPU EP on the same GPU, host in and out like ours. With --weights float16, B is a
constant of our program stored in float16 (compile option weights="float16"); the baselines keep it in
float32. With --weights int8 | int4, B is a constant weight quantized and packed (compile option weights=,
decoded in registers): each row also gives the bytes of the packed weight, the rate at which a call reads them
(GB/s), and the same weight in float32 timed in the same run (its GB/s, and the speed-up); without --sizes it
runs the decode shapes (M = 1) of Florence-2-base's Linears and LM head. --precision float16 lets our GEMMs
multiply float16 operands on matrix units where the device has them (compile option precision). --error
adds each result's largest error against a float64 product of the same inputs, relative to the largest output
(ours, and cuBLAS fp32's).
"""

from __future__ import annotations

import numpy as np
import torch

import webgpu_torch

from ...runtime import timing
from . import _ort, baseline_seconds

DEFAULT_SIZES = [(256, 256, 256), (1024, 1024, 1024), (2048, 2048, 2048)]
DEFAULT_VARIANTS = ["pr", "128x128", "vec4_128x128", "auto"]
# Decode steps of Florence-2-base's language model: attention and fc projections, and the LM head.
DECODE_SIZES = [(1, 768, 768), (1, 3072, 768), (1, 768, 3072), (1, 51289, 768)]
QUANTIZED = ("int8", "int4")
COLUMNS = ["M", "N", "K", "variant", "kernel", "ms", "GFLOP/s", "baseline GFLOP/s", "vs baseline",
           "fp16 GFLOP/s", "vs fp16", "weight MB", "GB/s", "f32 ms", "f32 GB/s", "vs f32", "error",
           "baseline error", "wall ms", "ORT wall ms", "vs ORT"]


ACTIVATIONS = {"none": torch.nn.Identity, "relu": torch.nn.ReLU, "gelu": torch.nn.GELU}


class _MM(torch.nn.Module):
    def __init__(self, act: str):
        super().__init__()
        self.act = ACTIVATIONS[act]()

    def forward(self, a, b):
        return self.act(a @ b)


class _Linear(_MM):
    def forward(self, x, w):
        return self.act(torch.nn.functional.linear(x, w))


class _Weighted(torch.nn.Module):
    """`problem(x, w)` with w a constant of the exported program (a weight) rather than an input."""

    def __init__(self, problem: torch.nn.Module, weight: torch.Tensor):
        super().__init__()
        self.problem = problem
        self.register_buffer("weight", weight)

    def forward(self, x):
        return self.problem(x, self.weight)


def _problem(m: int, n: int, k: int, linear: bool, act: str = "none") -> tuple[torch.nn.Module, tuple]:
    """act(a @ b) with b [k, n], or (linear) act(x @ wᵀ) with w [n, k] as nn.Linear stores it, read in place."""
    a = torch.randn(m, k)
    return (_Linear(act), (a, torch.randn(n, k))) if linear else (_MM(act), (a, torch.randn(k, n)))


def _baseline(module: torch.nn.Module, args: tuple, repeats: int) -> tuple[str, float, float | None]:
    """(name, seconds, float16 seconds) of the baseline on the same inputs: cuBLAS fp32 with TF32 off and
    cuBLAS fp16 on CUDA (float16 None elsewhere), torch or numpy on the CPU."""
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
        xs = [a.cuda() for a in args]
        halves = [a.half() for a in xs]
        return (f"torch {torch.__version__} CUDA fp32 (TF32 off) and fp16",
                baseline_seconds(lambda: module(*xs), repeats, cuda=True),
                baseline_seconds(lambda: module(*halves), repeats, cuda=True))
    if not isinstance(module.act, torch.nn.Identity):
        return f"torch {torch.__version__} CPU fp32", baseline_seconds(lambda: module(*args), repeats, cuda=False), None
    a, b = (x.numpy() for x in args)
    b = b.T if isinstance(module, _Linear) else b
    return f"numpy {np.__version__} CPU fp32", baseline_seconds(lambda: a @ b, repeats, cuda=False), None


def _relative_error(module: torch.nn.Module, args: tuple, out) -> float:
    """Largest |out - ref| over the largest |ref|, ref the float64 product of the same inputs."""
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.no_grad():
        ref = module(*[a.to(device, torch.float64) for a in args])
        got = torch.as_tensor(out).to(device, torch.float64)
        return float((got - ref).abs().max() / ref.abs().max())


def _baseline_error(module: torch.nn.Module, args: tuple) -> float:
    device = "cuda" if torch.cuda.is_available() else "cpu"
    with torch.no_grad():
        return _relative_error(module, args, module(*[a.to(device) for a in args]))


def add_arguments(parser) -> None:
    parser.add_argument("--sizes", nargs="*", metavar="MxNxK", help="default: " + " ".join(
        "x".join(map(str, s)) for s in DEFAULT_SIZES))
    parser.add_argument("--variants", nargs="*", help=f"default: {' '.join(DEFAULT_VARIANTS)}")
    parser.add_argument("--linear", action="store_true",
                        help="y = x @ wᵀ with w [N, K] as nn.Linear stores it (default: a @ b with b [K, N])")
    parser.add_argument("--act", choices=list(ACTIVATIONS), default="none",
                        help="an activation after the product (ours fuse it into the GEMM's epilogue)")
    parser.add_argument("--ort", action="store_true", help="also ONNX Runtime's WebGPU EP, host in and out")
    parser.add_argument("--weights", choices=["float32", "float16", *QUANTIZED], default="float32",
                        help="float16, int8, int4: B is a weight of ours stored so (compile option weights=); "
                             "int8 and int4 also time it in float32 and give the weight bytes read per second")
    parser.add_argument("--precision", choices=["float32", "float16"], default="float32",
                        help="float16: our GEMMs may multiply float16 operands (compile option precision=)")
    parser.add_argument("--error", action="store_true", help="each result's error against a float64 product")


def run(args) -> tuple[list[dict], dict]:
    default = DECODE_SIZES if args.weights in QUANTIZED else DEFAULT_SIZES
    sizes = [tuple(int(x) for x in s.split("x")) for s in args.sizes] if args.sizes else default
    variants = args.variants or (["auto"] if args.weights in QUANTIZED else DEFAULT_VARIANTS)
    return measure(sizes, variants, args.engine, args.repeat, args.linear, args.ort, args.act, args.weights,
                   args.precision, args.error)


def measure(sizes, variants, engine: str | None = None, repeats: int = 5, linear: bool = False,
            ort: bool = False, act: str = "none", weights: str = "float32", precision: str = "float32",
            error: bool = False) -> tuple[list[dict], dict]:
    if ort and (why := _ort.available()):
        raise SystemExit(f"--ort: {why}")
    rows, info = [], webgpu_torch.device_info(engine)
    for m, n, k in sizes:
        flops = 2.0 * m * n * k
        problem, problem_args = _problem(m, n, k, linear, act)
        base_name, base_s, half_s = _baseline(problem, problem_args, repeats)
        base_error = {"baseline error": _baseline_error(problem, problem_args)} if error else {}
        module, args = (_Weighted(problem, problem_args[1]), problem_args[:1]) if weights != "float32" else (
            problem, problem_args)
        ort_s = _ort.OrtModel(module, args).wall_time(repeats) if ort else None
        ep = torch.export.export(module, args)
        host = [a.numpy() for a in args]
        # Let the weight bind whole, up to the adapter's limit (not split into row chunks).
        limit = info["limits"].get("max-storage-buffer-binding-size", 1 << 27)
        traffic = _Traffic(ep, host, engine, repeats, limit, 4 * n * k) if weights in QUANTIZED else None
        for variant in variants:
            program = webgpu_torch.compile(ep, gemm=variant, max_binding_size=limit, weights=weights,
                                           precision=precision)
            ex = program.executor(engine)
            wall = timing.wall_time(lambda p=program, h=host: p(*h), repeats) if ort else None
            out = program(*host)  # the inputs are now on the device
            t = timing.gpu_time(ex, repeats=repeats)
            rows.append({"M": m, "N": n, "K": k, "variant": variant,
                         "kernel": ex.program.kernels[ex.program.dispatches[0].kernel].name,  # as tuned
                         "ms": t.seconds * 1e3, "GFLOP/s": flops / t.seconds / 1e9,
                         "baseline GFLOP/s": flops / base_s / 1e9, "vs baseline": base_s / t.seconds,
                         **({"fp16 GFLOP/s": flops / half_s / 1e9, "vs fp16": half_s / t.seconds} if half_s else {}),
                         **(traffic.row(ex.program, t.seconds) if traffic else {}),
                         **({"error": _relative_error(problem, problem_args, out), **base_error} if error else {}),
                         **({"wall ms": wall * 1e3, "ORT wall ms": ort_s * 1e3, "vs ORT": ort_s / wall}
                            if ort else {})})
    half = f", ours with {weights} weights" if weights != "float32" else ""
    title = ("GEMM" + (" (linear: x @ wᵀ)" if linear else "") + half + f", precision={precision}"
             + (f", then {act}" if act != "none" else ""))
    return rows, {"title": title, "baseline": base_name + (", ORT WebGPU EP host in/out" if ort else ""),
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']}); "
                            f"GPU ms by {t.method}"}


class _Traffic:
    """The weight traffic of a GEMM whose B is a quantized weight: the same exported program compiled with
    float32 weights, timed once, is the baseline its rows are compared with."""

    def __init__(self, ep, host: list, engine: str | None, repeats: int, limit: int, float_bytes: int):
        program = webgpu_torch.compile(ep, max_binding_size=limit)
        program(*host)
        self.float_seconds = timing.gpu_time(program.executor(engine), repeats=repeats).seconds
        self.float_bytes = float_bytes

    def row(self, program, seconds: float) -> dict:
        packed = sum(p.nbytes for p in program.packings.values())
        return {"weight MB": packed / 1e6, "GB/s": packed / seconds / 1e9, "f32 ms": self.float_seconds * 1e3,
                "f32 GB/s": self.float_bytes / self.float_seconds / 1e9, "vs f32": self.float_seconds / seconds}
