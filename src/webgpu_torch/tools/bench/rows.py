"""Row-wise kernels fp32 (layer norm, softmax) on the models' shapes: the plain kernels (row.wgsl), their
subgroup twins (row.subgroups.wgsl; where the device has `subgroups`) and the one tuning picks, against torch
measured in the same run.

Shapes: the layer norms of Florence-2's DaViT stages (768² pixels: 192² tokens of 128 channels ... 24² of
1024), ViT-B/16's and BERT-base's (batch 8), a softmax over attention scores with 144-long rows (DaViT's
windows) and over a 51,289-word vocabulary. `--scale S` divides the row counts by S (for software adapters).
Baseline: torch on CUDA (TF32 off) when a CUDA device is present, else on the CPU. Ours: GPU time from
timestamp queries (wall clock where the adapter has none), inputs already on the device.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import torch

import webgpu_torch

from ...compiler.wgsl import SUBGROUPS
from ...runtime import timing, tuning
from ...runtime.session import Session
from . import baseline_seconds, named


@dataclass(frozen=True)
class Shape:
    name: str
    rows: int
    width: int
    op: str  # "layer_norm" | "softmax"


SHAPES = [
    *(Shape(f"davit.ln{i}", (192 // 2 ** (i - 1)) ** 2, 128 * 2 ** (i - 1), "layer_norm") for i in range(1, 5)),
    Shape("vit_b16.ln", 197, 768, "layer_norm"),
    Shape("bert_base.b8.ln", 8 * 128, 768, "layer_norm"),
    Shape("davit.window_softmax", 256 * 4 * 144, 144, "softmax"),
    Shape("vocab_softmax", 1, 51289, "softmax"),
]


class _Row(torch.nn.Module):
    def __init__(self, op: str, width: int):
        super().__init__()
        self.op = op
        self.norm = torch.nn.LayerNorm(width)

    def forward(self, x):
        return self.norm(x) if self.op == "layer_norm" else torch.softmax(x, dim=-1)




def add_arguments(parser) -> None:
    parser.add_argument("--shapes", nargs="*", metavar="NAME", help="names or prefixes (davit, vocab, ...); "
                        "default: all of " + " ".join(s.name for s in SHAPES))
    parser.add_argument("--scale", type=int, default=1, help="divide row counts by this (default 1)")


def run(args) -> tuple[list[dict], dict]:
    info = webgpu_torch.device_info(args.engine)
    has_subgroups = info["features"].get(SUBGROUPS, False)
    cuda = torch.cuda.is_available()
    rows = []
    for shape in named(SHAPES, args.shapes):
        torch.manual_seed(0)
        module = _Row(shape.op, shape.width).eval()
        x = torch.randn(max(1, shape.rows // args.scale), shape.width)
        compiled = webgpu_torch.compile(torch.export.export(module, (x,))).program
        with torch.no_grad():  # the baseline before ours (torch's first CUDA use is slow)
            dev_module, dev_x = (copy.deepcopy(module).cuda(), x.cuda()) if cuda else (module, x)
            base_s = baseline_seconds(lambda m=dev_module, v=dev_x: m(v), args.repeat, cuda)
        row = {"rows": shape.name, "rows x width": f"{x.shape[0]}x{shape.width}"}
        plain = replace(compiled, dispatches=[replace(d, options=(), result=()) for d in compiled.dispatches])
        variants = {"plain": plain, "tuned": compiled}
        if has_subgroups:
            variants[SUBGROUPS] = tuning.force(compiled, lambda k: SUBGROUPS in k.requires)
        for label, program in variants.items():
            session = Session(program, args.engine)
            session(x)  # uploads the input
            ex = session.executor()
            row[f"{label} ms"] = timing.gpu_time(ex, repeats=args.repeat).seconds * 1e3
            if label == "tuned":
                row["tuned"] = SUBGROUPS if any(ex.program.kernels[d.kernel].requires
                                                for d in ex.program.dispatches) else "plain"
        row["baseline ms"] = base_s * 1e3
        row["vs baseline"] = base_s * 1e3 / row["tuned ms"]
        rows.append(row)
    base = "CUDA fp32" if cuda else f"CPU fp32 ({torch.get_num_threads()} threads)"
    return rows, {"title": "Row kernels fp32" + ("" if has_subgroups else " (no subgroups on this device)"),
                  "baseline": f"torch {torch.__version__} {base}",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


COLUMNS = ["rows", "rows x width", "plain ms", f"{SUBGROUPS} ms", "tuned ms", "tuned", "baseline ms", "vs baseline"]
