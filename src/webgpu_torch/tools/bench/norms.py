"""Group norm fp32 on the models' shapes: the statistics split into chunks (the default) against one workgroup
per row (compile option norm_chunks="row"), against torch measured in the same run.

Shapes: Stable Diffusion 1.5's UNet GroupNorm(32, C) at a 512² image (64² latents, batch 2 for guidance),
its VAE decoder's last stage (128 channels at 512²), and wav2vec2-base's GroupNorm(512, 512) over one second
of 16 kHz audio (3,199 frames after the first conv), batch 1 and 8. `--scale S` divides the spatial sizes
by S (for software adapters). Baseline: torch on CUDA (TF32 off) when a CUDA device is present, else on the
CPU. Ours: GPU time from timestamp queries (wall clock where the adapter has none), input on the device.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass

import torch

import webgpu_torch

from ...runtime import timing
from ...runtime.session import Session
from . import baseline_seconds, named


@dataclass(frozen=True)
class Shape:
    name: str
    groups: int
    shape: tuple[int, ...]  # [N, C, spatial...]


SHAPES = [
    Shape("sd_unet.gn320", 32, (2, 320, 64, 64)),
    Shape("sd_unet.gn640", 32, (2, 640, 32, 32)),
    Shape("sd_unet.gn1280", 32, (2, 1280, 16, 16)),
    Shape("sd_vae.gn128", 32, (1, 128, 512, 512)),
    Shape("wav2vec2.gn512", 512, (1, 512, 3199)),
    Shape("wav2vec2.gn512.b8", 512, (8, 512, 3199)),
]


def add_arguments(parser) -> None:
    parser.add_argument("--shapes", nargs="*", metavar="NAME", help="names or prefixes (sd_unet, wav2vec2, ...); "
                        "default: all of " + " ".join(s.name for s in SHAPES))
    parser.add_argument("--scale", type=int, default=1, help="divide spatial sizes by this (default 1)")


def run(args) -> tuple[list[dict], dict]:
    info = webgpu_torch.device_info(args.engine)
    cuda = torch.cuda.is_available()
    rows = []
    for shape in named(SHAPES, args.shapes):
        torch.manual_seed(0)
        module = torch.nn.GroupNorm(shape.groups, shape.shape[1]).eval()
        x = torch.randn(*shape.shape[:2], *(max(1, s // args.scale) for s in shape.shape[2:]))
        with torch.no_grad():  # the baseline before ours (torch's first CUDA use is slow)
            dev_module, dev_x = (copy.deepcopy(module).cuda(), x.cuda()) if cuda else (module, x)
            base_s = baseline_seconds(lambda m=dev_module, v=dev_x: m(v), args.repeat, cuda)
        ep = torch.export.export(module, (x,))
        row = {"norm": shape.name, "input": "x".join(map(str, x.shape))}
        for label, chunks in (("chunked", "auto"), ("row", "row")):
            session = Session(webgpu_torch.compile(ep, norm_chunks=chunks).program, args.engine)
            session(x)  # uploads the input
            row[f"{label} ms"] = timing.gpu_time(session.executor(), repeats=args.repeat).seconds * 1e3
            if label == "chunked":
                grid = session.program.dispatches[0].grid
                row["workgroups"] = grid[0] * grid[1]
        row["baseline ms"] = base_s * 1e3
        row["vs baseline"] = base_s * 1e3 / row["chunked ms"]
        rows.append(row)
    base = "CUDA fp32" if cuda else f"CPU fp32 ({torch.get_num_threads()} threads)"
    return rows, {"title": "Group norm fp32", "baseline": f"torch {torch.__version__} {base}",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


COLUMNS = ["norm", "input", "workgroups", "chunked ms", "row ms", "baseline ms", "vs baseline"]
