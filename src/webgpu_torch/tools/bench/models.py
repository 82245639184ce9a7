"""Whole models: ours against torch eager and ONNX Runtime's WebGPU EP, measured in the same run.

Ours: GPU time of one call (timestamp queries, inputs already on the device) and the wall time of a call with
inputs from and outputs to the host; --precision float16 compiles with precision="float16" (f16 activations
between the kernels that take them, and GEMMs and im2col convs may multiply float16 operands on matrix
units), --weights float16 stores the weights in float16, --dtype runs the model in float16 or bfloat16.
Several --precision values are measured in the same run, each row of a model against its first.
torch eager: CUDA fp32 with TF32 off when a GPU is there (CUDA events), and fp16 autocast beside it, else the
CPU. Each row's `error` is our output's largest difference from torch's fp32 output, relative to its largest
value. ORT: the same module exported to ONNX, on the WebGPU EP, host in and out — the same I/O conditions as
our wall time. Weights are random and seeded except MiniLM's (the real checkpoint).
"""

from __future__ import annotations

from collections.abc import Callable

import torch

import webgpu_torch

from ...runtime import timing
from . import _ort, baseline_seconds

COLUMNS = ["model", "precision", "dispatches", "ours GPU ms", "ours wall ms", "vs first GPU", "vs first wall",
           "torch ms", "vs torch", "torch fp16 ms", "vs torch fp16", "error", "ORT wall ms", "vs ORT (wall)"]
DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}


def _resnet():
    from transformers import ResNetConfig, ResNetForImageClassification

    return ResNetForImageClassification(ResNetConfig()), (torch.randn(1, 3, 224, 224),)  # ResNet-50


def _mobilenet_v2():
    from transformers import MobileNetV2Config, MobileNetV2ForImageClassification

    return MobileNetV2ForImageClassification(MobileNetV2Config()), (torch.randn(1, 3, 224, 224),)


def _vit():
    from transformers import ViTConfig, ViTModel

    return ViTModel(ViTConfig(), add_pooling_layer=False), (torch.randn(1, 3, 224, 224),)  # ViT-B/16


def _minilm():
    from .. import demo

    return demo.MODELS["minilm"].build()


def _florence2_vision():
    from ..models import florence2

    return florence2.VisionStage(florence2.build("base")), (torch.randn(1, 3, 768, 768),)


MODELS: dict[str, Callable[[], tuple[torch.nn.Module, tuple]]] = {
    "minilm": _minilm, "resnet50": _resnet, "mobilenet_v2": _mobilenet_v2, "vit_b16": _vit,
    "florence2_vision": _florence2_vision,
}


def add_arguments(parser) -> None:
    parser.add_argument("--models", nargs="*", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--ort", action="store_true", help="also ONNX Runtime's WebGPU EP (host in and out)")
    parser.add_argument("--precision", nargs="+", choices=["float32", "float16"], default=["float32"],
                        help="compile option precision= (float16: f16 activations, and matrix-unit products where "
                             "the device has them); several are measured in one run")
    parser.add_argument("--dtype", choices=list(DTYPES), default="float32",
                        help="the model's dtype (its float inputs too); torch's baseline runs in float32")
    parser.add_argument("--weights", choices=["float32", "float16"], default="float32",
                        help="compile option weights=")


def run(args) -> tuple[list[dict], dict]:
    cuda = torch.cuda.is_available()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        torch.backends.cudnn.allow_tf32 = False
    rows = []
    for name in args.models:
        torch.manual_seed(0)
        try:
            model, inputs = MODELS[name]()
        except ImportError as e:  # e.g. MiniLM's weights package is not installed on this machine
            rows.append({"model": name, "dispatches": f"n/a: {e.name} not installed"})
            continue
        model = model.eval()
        baseline = _baseline(model, inputs, args, cuda)
        first = None
        for precision in args.precision:
            row = _ours(name, model, inputs, precision, args)
            first = first or row
            row.update({"vs first GPU": first["ours GPU ms"] / row["ours GPU ms"],
                        "vs first wall": first["ours wall ms"] / row["ours wall ms"]})
            row.update(_against(row, baseline))
            if args.ort:
                row.update(_ort_columns(model, inputs, row["ours wall ms"] / 1e3, args.repeat))
            rows.append(row)
    info = webgpu_torch.device_info(args.engine)
    torch_name = f"torch {torch.__version__} eager " + ("CUDA fp32 (TF32 off), fp16 autocast" if cuda else "CPU")
    return rows, {"title": f"Whole models in {args.dtype}, weights={args.weights} (vs torch: ours GPU ms against "
                           "torch's time; vs first: against the first precision's row)",
                  "baseline": torch_name + (", ORT WebGPU EP host in/out" if args.ort else ""),
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


def _ours(name: str, model, inputs: tuple, precision: str, args) -> dict:
    """Our row: compiled with `precision`, the model (and its float inputs) in args.dtype."""
    dtype = DTYPES[args.dtype]
    ins = tuple(x.to(dtype) if x.is_floating_point() else x for x in inputs)
    program = webgpu_torch.compile_module(model.to(dtype), ins, precision=precision, weights=args.weights)
    model.float()
    ours_wall = timing.wall_time(lambda p=program, xs=ins: p(*xs), args.repeat)
    gpu = timing.gpu_time(program.executor(args.engine), repeats=args.repeat).seconds
    return {"model": name, "precision": precision, "dispatches": len(program.program.dispatches),
            "ours GPU ms": gpu * 1e3, "ours wall ms": ours_wall * 1e3, "output": _first_tensor(program(*ins))}


def _against(row: dict, baseline: dict) -> dict:
    """torch's columns for our row, and our output's error against torch's float32 output."""
    gpu = row["ours GPU ms"] / 1e3
    ours, want = row.pop("output"), baseline["output"]
    fp16 = baseline.get("fp16")
    half = {"torch fp16 ms": fp16 * 1e3, "vs torch fp16": fp16 / gpu} if fp16 else {}
    return {"torch ms": baseline["eager"] * 1e3, "vs torch": baseline["eager"] / gpu, **half,
            "error": float((ours - want).abs().max() / want.abs().max())}


def _baseline(model, inputs: tuple, args, cuda: bool) -> dict:
    """torch eager's seconds per call in float32 (and fp16 autocast on CUDA), and its float32 output."""
    with torch.no_grad():
        device = "cuda" if cuda else "cpu"
        m, xs = model.to(device), [x.to(device) for x in inputs]
        found = {"eager": baseline_seconds(lambda m=m, xs=xs: m(*xs), args.repeat, cuda=cuda),
                 "output": _first_tensor(m(*xs)).cpu()}
        if cuda:
            def autocast(m=m, xs=xs):
                with torch.autocast("cuda", dtype=torch.float16):
                    return m(*xs)

            found["fp16"] = baseline_seconds(autocast, args.repeat, cuda=True)
        model.cpu()
    return found


def _first_tensor(out) -> torch.Tensor:
    """A model's first output tensor (transformers' outputs are dataclasses or tuples of tensors)."""
    while not isinstance(out, torch.Tensor):
        out = out[0] if isinstance(out, (tuple, list)) else next(iter(out.values()))
    return out.detach().float()


def _ort_columns(model, inputs, ours_wall: float, repeats: int) -> dict:
    """ORT's wall time, or why it could not run (export failures happen: its exporter covers less)."""
    why = _ort.available()
    if why:
        return {"ORT wall ms": f"n/a: {why}"}
    try:
        ort_s = _ort.OrtModel(model, inputs).wall_time(repeats)
    except Exception as e:  # a model ORT's exporter or EP cannot take: report it, keep benchmarking
        return {"ORT wall ms": f"n/a: {type(e).__name__}"}
    return {"ORT wall ms": ort_s * 1e3, "vs ORT (wall)": ort_s / ours_wall}
