"""Llama decoding: ours against llama.cpp's Vulkan backend on the same device, weights, prompt ids and tokens.

One seeded Llama-architecture model (`webgpu-torch llama --arch`; llama.cpp's llama graph: default rope, no
biases) with its weights rounded to float16, so that both sides hold the same values: written as GGUF
(_gguf.py) F16 and Q4_0 for llama.cpp, which runs it through the npm node-llama-cpp's prebuilt Vulkan build
(js/bench/llm.js, every layer offloaded), and compiled by us with weights="float16" and weights="int4"
(groups of 32, as Q4_0's blocks, though each side rounds to 4 bits its own way: Q4_0's scale is the block's
largest magnitude over -8, ours over 7, so the int4 rows' ids are not expected to agree).
Both sides evaluate the same prompt ids and then decode greedily, from an empty cache each generation, timed
by the wall clock: the time to the first token (the prompt's evaluation and one token), then the median time
between tokens; the median over --runs generations after a warm-up one. Ours also shows the step's GPU time
(timestamp queries). `ids` compares each side's greedy ids with transformers' over the same float16 weights
in float32, up to the first difference (a near tie between two logits may order differently in float16
arithmetic, which llama.cpp's Vulkan matrix products use).
Needs node and `npm ci --ignore-scripts` in js/bench/llama-cpp/ (NODE_LLAMA_CPP_SKIP_DOWNLOAD=true), and the
`gguf` package (the bench extra). On a CPU Vulkan device (lavapipe) llama.cpp needs GGML_VK_VISIBLE_DEVICES
(--vulkan-device sets it): without it ggml-vulkan skips CPU devices and node-llama-cpp falls back to its CPU
backend, which llm.js refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import webgpu_torch

from ...runtime import timing
from ..models import llama
from . import _gguf

REPO = Path(__file__).resolve().parents[4]
SCRIPT = REPO / "js" / "bench" / "llm.js"
PACKAGE = REPO / "js" / "bench" / "llama-cpp"
OURS = {"F16": "float16", "Q4_0": "int4"}  # GGUF format -> our weights= for the same kind of storage
COLUMNS = ["side", "weights", "first token ms", "prompt tok/s", "decode ms/token", "decode tok/s",
           "step GPU ms", "decode vs llama.cpp", "ids vs transformers"]


def add_arguments(parser) -> None:
    parser.add_argument("--arch", default="tiny", help="a Llama architecture of models/archs.py (tiny, base, …)")
    parser.add_argument("--formats", nargs="*", default=list(OURS), choices=list(OURS))
    parser.add_argument("--prompt-length", type=int, default=32, help="prompt ids after BOS")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3, help="timed generations a side, after a warm-up one")
    parser.add_argument("--vulkan-device", default="0",
                        help="llama.cpp's GGML_VK_VISIBLE_DEVICES where the environment sets none")
    parser.add_argument("--folder", default=str(REPO / "build" / "bench-llm"), help="where the GGUF files go")


def run(args) -> tuple[list[dict], dict]:
    if not (PACKAGE / "node_modules" / "node-llama-cpp").is_dir() or shutil.which("node") is None:
        raise SystemExit(f"bench llm: needs node and node-llama-cpp: cd {PACKAGE} && "
                         "NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm ci --ignore-scripts")
    model = llama.build(args.arch)
    if why := _gguf.refusal(model.config):
        raise SystemExit(f"bench llm --arch {args.arch}: {why}")
    model = model.half().float()  # float16 values held exactly by both sides' 16-bit storage
    model.generation_config.eos_token_id = None  # every requested token on both sides
    prompt = llama.sample_prompt(model, args.prompt_length, seed=0)
    want, _ = llama.reference_generate(model, prompt, args.new_tokens)
    info = webgpu_torch.device_info(args.engine)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows, peers = [], set()
    for fmt in args.formats:
        peer = _llama_cpp(_gguf.write(model, folder / f"{args.arch}-{fmt}.gguf", fmt), prompt, args)
        peers.add(f"node-llama-cpp {peer['version']} on {peer['device']} ({peer['gpuLayers']} of "
                  f"{peer['layers']} layers offloaded)")
        ours = _ours(model, prompt, OURS[fmt], args)
        first, per_token, ids, gpu = ours
        rows.append(_row("llama.cpp (Vulkan)", fmt, peer["firstToken"], peer["perToken"], peer["ids"], prompt, want))
        rows.append(_row("ours", OURS[fmt], first, per_token, ids, prompt, want, gpu, peer["perToken"] / per_token))
    return rows, {"title": f"Llama decoding, --arch {args.arch} ({llama.parameters(model) / 1e6:.2f} M parameters),"
                           f" {len(prompt)} prompt ids, {args.new_tokens} greedy tokens",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})",
                  "baseline": "; ".join(sorted(peers)) + " (wall clock on both sides)"}


def _ours(model, prompt: list[int], weights: str, args) -> tuple:
    """Seconds to the first token, then per token (medians over --runs), the greedy ids, the step's GPU time."""
    options = {"weights": weights} | ({"group_size": 32} if weights == "int4" else {})
    lm = llama.compile_step(model, len(prompt) + args.new_tokens + 1, **options)
    lm.generate(prompt, args.new_tokens)  # warm-up: a CPU adapter compiles shaders at their first dispatch
    firsts, steps = [], []
    for _ in range(args.runs):
        out = lm.generate(prompt, args.new_tokens)
        firsts.append(out.first_token)
        steps.append(statistics.median(out.steps[1:]))
    gpu = timing.gpu_time(lm.step.executor(args.engine), repeats=2, samples=3).seconds
    return statistics.median(firsts), statistics.median(steps), out.ids, gpu


def _llama_cpp(path: Path, prompt: list[int], args) -> dict:
    env = {"GGML_VK_VISIBLE_DEVICES": args.vulkan_device} | dict(os.environ)
    out = subprocess.run(["node", str(SCRIPT), str(path), "--prompt", ",".join(map(str, prompt)),
                          "--tokens", str(args.new_tokens), "--runs", str(args.runs)],
                         capture_output=True, text=True, env=env, cwd=REPO / "js")
    if out.returncode:
        raise SystemExit(f"bench llm: js/bench/llm.js failed ({out.returncode}): {out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(side: str, weights: str, first: float, per_token: float, ids: list[int], prompt: list[int],
         want: list[int], gpu: float | None = None, vs: float | None = None) -> dict:
    agree = next((i for i, (a, b) in enumerate(zip(ids, want, strict=True)) if a != b), len(want))
    return {"side": side, "weights": weights, "first token ms": first * 1e3, "prompt tok/s": len(prompt) / first,
            "decode ms/token": per_token * 1e3, "decode tok/s": 1 / per_token,
            "step GPU ms": "n/a" if gpu is None else gpu * 1e3,
            "decode vs llama.cpp": "1 (baseline)" if vs is None else f"{vs:.2f}x", "ids vs transformers":
            f"{agree}/{len(want)}"}
