"""Fused attention fp32 per shape: every thread layout of attention.wgsl and the tuned choice, against torch's
scaled_dot_product_attention measured in the same run.

Shapes: ViT-B/16's, Florence-2-base's BART encoder over its 577 image tokens and a prompt, DaViT's window
attention at each stage of Florence-2's vision tower (12 × 12 windows over 768² pixels), BERT-base at batch 8
with a padding mask, a causal Llama-style prefill, and decode steps (one query row against a cache: the split
kernel, attention_split.wgsl, with each chunk size as a column): Florence-2-base's cross-attention and a
Llama step over 2,048 keys. `--scale S` divides every sequence length and window count by S (for software
adapters). Baseline: torch on CUDA (TF32 off) when a CUDA device is present, else
torch on the CPU. Our figures are GPU time from timestamp queries (wall clock where the adapter has none) over
back-to-back calls, inputs already on the device.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import webgpu_torch

from ...compiler.ops.attention import CONFIGS, SPLIT_CONFIGS, layouts_for
from ...runtime import timing
from . import baseline_seconds, named


@dataclass(frozen=True)
class Shape:
    name: str
    batch: int
    heads: int
    seq: int
    head_dim: int
    mask: bool = False  # an additive padding mask [batch, 1, 1, seq] (the last eighth of each sequence off)
    causal: bool = False
    windows: bool = False  # batch counts windows of a fixed length: --scale divides the batch, not seq
    decode: bool = False  # one query row against `seq` keys (a decode step)


SHAPES = [
    Shape("vit_b16", 1, 12, 197, 64),
    Shape("florence2.encoder", 1, 12, 590, 64),
    *(Shape(f"davit.window{i}", w, h, 144, 32, windows=True)
      for i, (w, h) in enumerate([(256, 4), (64, 8), (16, 16), (4, 32)], 1)),
    Shape("bert_base.b8", 8, 12, 128, 64, mask=True),
    Shape("llama.prefill", 1, 32, 512, 128, causal=True),
    Shape("florence2.cross_decode", 1, 12, 590, 64, decode=True),
    Shape("llama.decode_2048", 1, 12, 2048, 64, decode=True),
]


class _Attention(torch.nn.Module):
    def __init__(self, causal: bool):
        super().__init__()
        self.causal = causal

    def forward(self, q, k, v, mask=None):
        return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=self.causal)


def _inputs(s: Shape, scale: int) -> tuple:
    batch = max(1, s.batch // scale) if s.windows else s.batch
    seq = s.seq if s.windows else max(8, s.seq // scale)
    qkv = tuple(torch.randn(batch, s.heads, 1 if s.decode and i == 0 else seq, s.head_dim) for i in range(3))
    if not s.mask:
        return qkv
    mask = torch.zeros(batch, 1, 1, seq)
    mask[..., seq - seq // 8:] = torch.finfo(torch.float32).min
    return (*qkv, mask)


def _baseline(module: torch.nn.Module, args: tuple, repeats: int) -> tuple[str, float]:
    cuda = torch.cuda.is_available()
    if cuda:
        torch.backends.cuda.matmul.allow_tf32 = False
        args = tuple(a.cuda() for a in args)
    name = "CUDA fp32 (TF32 off)" if cuda else f"CPU fp32 ({torch.get_num_threads()} threads)"
    with torch.no_grad():
        return f"torch {torch.__version__} sdpa, {name}", baseline_seconds(lambda: module(*args), repeats, cuda)


def add_arguments(parser) -> None:
    parser.add_argument("--shapes", nargs="*", metavar="NAME", help="names or prefixes (davit, vit_b16, ...); "
                        "default: all of " + " ".join(s.name for s in SHAPES))
    parser.add_argument("--scale", type=int, default=1, help="divide sequence lengths (window counts for DaViT) "
                        "by this (default 1)")


def run(args) -> tuple[list[dict], dict]:
    return measure(named(SHAPES, args.shapes), args.scale, args.engine, args.repeat)


def measure(shapes: list[Shape], scale: int = 1, engine: str | None = None, repeats: int = 5) -> tuple[list[dict],
                                                                                                       dict]:
    info = webgpu_torch.device_info(engine)
    rows, base_name = [], ""
    for shape in shapes:
        torch.manual_seed(0)
        args = _inputs(shape, scale)
        module = _Attention(shape.causal).eval()
        ep = torch.export.export(module, args)
        (b, h, sq, d), s = args[0].shape, args[1].shape[2]
        row = {"attention": shape.name, "B x H x S x D": f"{b}x{h}x{sq if sq == s else f'{sq}:{s}'}x{d}",
               "GFLOP": 4.0 * b * h * sq * s * d / (2 if shape.causal else 1) / 1e9}
        # The baseline first: on the H200 the first shape timed before torch had touched CUDA read 3-5x slow.
        base_name, base_s = _baseline(module, args, repeats)
        best = float("inf")
        layouts = SPLIT_CONFIGS if shape.decode else [c.name for c in layouts_for(-(-d // 4), -(-d // 4))]
        for variant in ("auto", *layouts):
            program = webgpu_torch.compile(ep, attention=variant)
            program(*args)  # uploads the inputs
            ex = program.executor(engine)
            kernel = ex.program.kernels[ex.program.dispatches[0].kernel].name
            seconds = timing.gpu_time(ex, repeats=repeats).seconds
            row[f"{variant} ms"] = seconds * 1e3
            if variant == "auto":
                row["tuned"] = kernel[kernel.rindex(",") + 1:-1]
                best = seconds
        row["GFLOP/s"] = row["GFLOP"] / best
        row["baseline ms"] = base_s * 1e3
        row["vs baseline"] = base_s / best
        rows.append(row)
    title = "Fused attention fp32" + (f", sequences (DaViT: windows) at 1/{scale}" if scale > 1 else "")
    return rows, {"title": title, "baseline": base_name,
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


COLUMNS = ["attention", "B x H x S x D", "GFLOP", *(f"{c} ms" for c in ("auto", *CONFIGS, *SPLIT_CONFIGS)), "tuned",
           "GFLOP/s", "baseline ms", "vs baseline"]
