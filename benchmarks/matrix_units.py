"""The matrix-unit GEMM kernels (gemm_subgroup_matrix.wgsl) on this machine's WebGPU device, as JSON: what the
adapter offers, each configuration checked against a float64 product on shapes that straddle its tiles in
every operand layout, and timed at one size against cuBLAS fp32 (TF32 off) and fp16 on the same inputs.

    python benchmarks/matrix_units.py OUT.json [--size 4096]
        [--configs NAME=SG_M,SG_N,TILE_K,STAGES,PARTS ...]

Without --configs, the configurations in ops.gemm.CONFIGS; --configs adds others (exploring tilings). The
float32 kernel vec4_128x128 is checked and timed beside them. Each configuration is timed twice: with B an
input (float32, converted to f16 as it is staged) and with B a float16 weight (compile option
weights="float16": read as f16). The candidates for the kernel's gap to cuBLAS fp16 are measured apart so:
tilings (--configs), f16 weights read as f16 (the "f16 weights" rows), and the bounds checks Tint puts around
each load (the same run under WEBGPU_TORCH_DAWN_TOGGLES=disable_robustness: benchmarks/h200.sh's `matrix`
stage runs both).
Errors are max |ours - ref| / max |ref|: ref is the float64 product of the inputs, for float16 products
(PARTS 1) of the inputs rounded to float16 as well (`rounded error`: what is left is the summation's).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import traceback

import torch

import webgpu_torch
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.compiler.ops.registry import OPTIONS
from webgpu_torch.runtime import timing
from webgpu_torch.runtime.engine import DAWN_TOGGLES_VAR, get_engine
from webgpu_torch.tools.bench import baseline_seconds

CHECKS = {  # name: (fn, shapes); every contiguous axis a multiple of 4, no size a multiple of the tiles
    "nn": (lambda a, b: a @ b, [(1004, 1000), (1000, 996)]),
    "tn": (lambda a, b: a.t() @ b, [(520, 260), (520, 268)]),
    "linear_bias_gelu": (lambda x, w, c: torch.nn.functional.gelu(torch.nn.functional.linear(x, w, c)),
                         [(3, 89, 772), (516, 772), (516,)]),
    "bmm_transposed_residual": (lambda a, b, r: torch.bmm(a, b.transpose(1, 2)) + r,
                                [(3, 132, 68), (3, 140, 68), (3, 132, 140)]),
    "conv3x3_nhwc": (lambda x, w: torch.nn.functional.conv2d(x.permute(0, 3, 1, 2), w, padding=1),
                     [(2, 23, 21, 36), (44, 36, 3, 3)]),
}


class Fn(torch.nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, *args):
        return self.fn(*args)


def adapter() -> dict:
    info = webgpu_torch.device_info()
    out = {"adapter": info["adapter"], "engine": info["engine_module"], "features": info["features"],
           "limits": {k: v for k, v in info["limits"].items() if "workgroup" in k or "invocations" in k}}
    engine = get_engine()
    out["adapter info"] = {k: str(v) for k, v in engine.adapter.info.items()}
    if engine.name == "dawn":
        from wgpudawn.backends.dawn import extras

        out["subgroup_matrix_configs"] = extras.get_adapter_properties(engine.adapter).get("subgroup_matrix_configs")
    return out


def error(out, fn, inputs, rounded: bool) -> float:
    dev = "cuda" if torch.cuda.is_available() else "cpu"
    # The GEMM's two operands lead the inputs.
    xs = [(x.half() if rounded and i < 2 else x).to(dev, torch.float64) for i, x in enumerate(inputs)]
    with torch.no_grad():
        ref = fn(*xs)
    got = torch.as_tensor(out).to(dev, torch.float64)
    return float((got - ref).abs().max() / ref.abs().max())


def check(name: str) -> dict:
    parts = getattr(gemm.CONFIGS[name], "parts", 0)  # 0: a float32 kernel
    results = {}
    for case, (fn, shapes) in CHECKS.items():
        gen = torch.Generator().manual_seed(len(case))
        inputs = [torch.randn(s, generator=gen) for s in shapes]
        session = webgpu_torch.compile(torch.export.export(Fn(fn), tuple(inputs)), gemm=name)
        used = sorted({session.program.kernels[d.kernel].name for d in session.program.dispatches})
        session.executor().poison_scratch = True
        out = session(*inputs)
        results[case] = {"kernels": used, "error": error(out, fn, inputs, False)}
        if parts == 1:
            results[case]["rounded error"] = error(out, fn, inputs, True)
    return results


class Weighted(torch.nn.Module):
    """x @ w with w a constant of the exported program (a weight), so weights="float16" stores it as f16."""

    def __init__(self, w):
        super().__init__()
        self.register_buffer("w", w)

    def forward(self, x):
        return x @ self.w


def timed(size: int, variants: list[str], repeats: int = 10) -> dict:
    gen = torch.Generator().manual_seed(size)
    a, b = torch.randn(size, size, generator=gen), torch.randn(size, size, generator=gen)
    programs = {"": (torch.export.export(Fn(lambda x, y: x @ y), (a, b)), "float32", (a, b)),
                ", f16 weights": (torch.export.export(Weighted(b), (a,)), "float16", (a,))}
    flops = 2.0 * size ** 3
    rows = {}
    for variant in variants:
        for label, (ep, weights, args) in programs.items():
            try:
                session = webgpu_torch.compile(ep, gemm=variant, max_binding_size=1 << 30, weights=weights)
                out = session(*args)
                t = timing.gpu_time(session.executor(), repeats=repeats).seconds
                rows[variant + label] = {"ms": t * 1e3, "TFLOP/s": flops / t / 1e12,
                                         "error": error(out, lambda x, y: x @ y, (a, b), False)}
            except Exception as e:  # a configuration the device refuses: record why, time the rest
                rows[variant + label] = {"failed": f"{type(e).__name__}: {e}"[:2000]}
    if torch.cuda.is_available():
        torch.backends.cuda.matmul.allow_tf32 = False
        x, y = a.cuda(), b.cuda()
        for label, (p, q) in {"cuBLAS fp32": (x, y), "cuBLAS fp16": (x.half(), y.half())}.items():
            t = baseline_seconds(lambda p=p, q=q: p @ q, repeats, cuda=True)
            rows[label] = {"ms": t * 1e3, "TFLOP/s": flops / t / 1e12,
                           "error": error((p @ q).float().cpu(), lambda u, v: u @ v, (a, b), False)}
    return rows


def parse_config(spec: str) -> tuple[str, gemm.MatrixConfig]:
    name, values = spec.split("=")
    return name, gemm.MatrixConfig(*(int(v) for v in values.split(",")))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out")
    parser.add_argument("--size", type=int, default=4096)
    parser.add_argument("--configs", nargs="*", default=[],
                        metavar="NAME=SG_M,SG_N,TILE_K,STAGES,PARTS")
    parser.add_argument("--no-checks", action="store_true", help="time only (tests/test_gemm_configs.py checks)")
    args = parser.parse_args(argv)
    added = dict(parse_config(s) for s in args.configs)
    gemm.CONFIGS.update(added)
    OPTIONS["gemm"] = (*OPTIONS["gemm"], *added)  # so that compile(gemm=NAME) accepts them
    names = [n for n, c in gemm.CONFIGS.items() if isinstance(c, gemm.MatrixConfig)]
    configs = {n: vars(gemm.CONFIGS[n]) | {"tile": f"{gemm.CONFIGS[n].tile_m}x{gemm.CONFIGS[n].tile_n}",
                                           "workgroup bytes": gemm.CONFIGS[n].workgroup_bytes} for n in names}
    report = {"adapter": adapter(), "dawn toggles": os.environ.get(DAWN_TOGGLES_VAR, ""), "configs": configs,
              "checks": {}}
    print(json.dumps(report["adapter"], indent=1), flush=True)
    for name in [] if args.no_checks else ["vec4_128x128", *names]:
        try:
            report["checks"][name] = check(name)
        except Exception:
            report["checks"][name] = {"failed": traceback.format_exc()[-3000:]}
        print(name, json.dumps(report["checks"][name]), flush=True)
    report["timed"] = timed(args.size, ["vec4_128x128", *names])
    for variant, row in report["timed"].items():
        print(f"{args.size}³ {variant:22s} {json.dumps(row)}", flush=True)
    with open(args.out, "w") as f:
        json.dump(report, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
