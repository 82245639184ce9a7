"""Conv2d fp32 per shape: the implicit-im2col GEMM against the direct kernel, and a torch baseline.

Shapes: DaViT's (Florence-2's vision tower: the k7 s4 patch embed at 768², the k3 s2 downsamples, the
depthwise 3×3 position convs, which take token-major activations: channels-last inputs, as here) and
ResNet-18's at 224² (NCHW inputs; `--channels-last` feeds every shape channels-last, as a model's convs get
their inputs after the first). `--scale S` divides every input's H and W by S (for software adapters).
Depthwise convs have no im2col form (groups ≠ 1): they run on the direct kernel only. Baseline: torch on
CUDA (cuDNN, TF32 off) when a CUDA device is present, else torch on the CPU. Our figures are GPU time from
timestamp queries (wall clock where the adapter has none) over back-to-back calls, inputs already on the
device.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import torch

import webgpu_torch

from ...runtime import timing
from . import baseline_seconds, named


@dataclass(frozen=True)
class Shape:
    name: str
    cin: int
    cout: int
    size: int  # input H = W
    kernel: int
    stride: int = 1
    padding: int = 0
    groups: int = 1
    channels_last: bool = False  # the input is [1, H, W, C] memory seen as NCHW


class ChannelsLast(torch.nn.Module):
    """A conv of an [N, H, W, C] input, permuted to NCHW as a view (DaViT's token-major activations)."""

    def __init__(self, conv: torch.nn.Conv2d):
        super().__init__()
        self.conv = conv

    def forward(self, x):
        return self.conv(x.permute(0, 3, 1, 2))


SHAPES = [
    Shape("davit.patch_embed", 3, 128, 768, 7, 4, 3),
    Shape("davit.down1", 128, 256, 192, 3, 2, 1, channels_last=True),
    Shape("davit.down2", 256, 512, 96, 3, 2, 1, channels_last=True),
    Shape("davit.down3", 512, 1024, 48, 3, 2, 1, channels_last=True),
    *(Shape(f"davit.cpe{i}", c, c, s, 3, 1, 1, groups=c, channels_last=True) for i, (c, s) in
      enumerate([(128, 192), (256, 96), (512, 48), (1024, 24)], 1)),
    Shape("resnet18.conv1", 3, 64, 224, 7, 2, 3),
    Shape("resnet18.layer1", 64, 64, 56, 3, 1, 1),
    Shape("resnet18.layer2.0", 64, 128, 56, 3, 2, 1),
    Shape("resnet18.layer2", 128, 128, 28, 3, 1, 1),
    Shape("resnet18.layer2.down", 64, 128, 56, 1, 2),
    Shape("resnet18.layer3.0", 128, 256, 28, 3, 2, 1),
    Shape("resnet18.layer3", 256, 256, 14, 3, 1, 1),
    Shape("resnet18.layer3.down", 128, 256, 28, 1, 2),
    Shape("resnet18.layer4.0", 256, 512, 14, 3, 2, 1),
    Shape("resnet18.layer4", 512, 512, 7, 3, 1, 1),
    Shape("resnet18.layer4.down", 256, 512, 14, 1, 2),
]


def _baseline(conv: torch.nn.Module, x: torch.Tensor, repeats: int) -> tuple[str, float]:
    cuda = torch.cuda.is_available()
    if cuda:
        torch.backends.cudnn.allow_tf32 = False
        conv, x = copy.deepcopy(conv).cuda(), x.cuda()  # a copy: Module.cuda() moves the exported weights
    name = "CUDA fp32 (cuDNN, TF32 off)" if cuda else f"CPU fp32 ({torch.get_num_threads()} threads)"
    with torch.no_grad():
        return f"torch {torch.__version__} {name}", baseline_seconds(lambda: conv(x), repeats, cuda)


def add_arguments(parser) -> None:
    parser.add_argument("--shapes", nargs="*", metavar="NAME", help="names or prefixes (davit, resnet18.layer3, ...); "
                        "default: all of " + " ".join(s.name for s in SHAPES))
    parser.add_argument("--scale", type=int, default=1, help="divide every input's H and W by this (default 1)")
    parser.add_argument("--channels-last", action="store_true", help="feed every input channels-last (as "
                        "ResNet's convs get theirs after the first: ops/conv.py, _channels_last)")


def run(args) -> tuple[list[dict], dict]:
    shapes = named(SHAPES, args.shapes)
    if args.channels_last:
        shapes = [replace(s, channels_last=True) for s in shapes]
    return measure(shapes, args.scale, args.engine, args.repeat)


def measure(shapes: list[Shape], scale: int = 1, engine: str | None = None, repeats: int = 5) -> tuple[list[dict],
                                                                                                       dict]:
    info = webgpu_torch.device_info(engine)
    rows, base_name = [], ""
    for shape in shapes:
        size = max(shape.kernel, shape.size // scale)
        conv = torch.nn.Conv2d(shape.cin, shape.cout, shape.kernel, shape.stride, shape.padding,
                               groups=shape.groups).eval()
        x = torch.randn(1, shape.cin, size, size)
        if shape.channels_last:
            conv, x = ChannelsLast(conv).eval(), x.permute(0, 2, 3, 1).contiguous()
        out = conv(x).shape
        flops = 2.0 * out.numel() * (shape.cin // shape.groups) * shape.kernel ** 2
        ep = torch.export.export(conv, (x,))
        layout = "HWC " if shape.channels_last else ""
        row = {"conv": shape.name, "input": layout + "x".join(map(str, x.shape[1:])), "kernel": _describe(shape),
               "GFLOP": flops / 1e9}
        # The baseline first: on the H200 the first shape timed before torch had touched CUDA read 3-5x slow.
        base_name, base_s = _baseline(conv, x, repeats)
        for variant in ("direct", "im2col") if shape.groups == 1 else ("direct",):
            program = webgpu_torch.compile(ep, conv=variant)
            program(x)  # uploads the input
            ex = program.executor(engine)
            t = timing.gpu_time(ex, repeats=repeats)
            row[f"{variant} ms"] = t.seconds * 1e3
            if variant == "im2col":
                row["im2col kernel"] = ex.program.kernels[ex.program.dispatches[0].kernel].name  # as tuned
        best = min(row.get("im2col ms", float("inf")), row["direct ms"]) / 1e3
        if "im2col ms" in row:
            row["im2col vs direct"] = row["direct ms"] / row["im2col ms"]
        row["GFLOP/s"] = flops / best / 1e9
        row["baseline ms"] = base_s * 1e3
        row["vs baseline"] = base_s / best
        rows.append(row)
    return rows, {"title": f"Conv2d fp32, batch 1, inputs at 1/{scale} of their H and W" if scale > 1 else
                  "Conv2d fp32, batch 1", "baseline": base_name,
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


def _describe(s: Shape) -> str:
    text = f"{s.cout}x{s.cin // s.groups}x{s.kernel}x{s.kernel} s{s.stride} p{s.padding}"
    return text + (f" g{s.groups}" if s.groups > 1 else "")


COLUMNS = ["conv", "input", "kernel", "GFLOP", "direct ms", "im2col ms", "im2col vs direct", "im2col kernel",
           "GFLOP/s", "baseline ms", "vs baseline"]
