"""Llama decoding: ours against llama.cpp's Vulkan backend (and onnxruntime-web's WebGPU EP) on the same device,
weights, prompt ids and tokens.

One seeded causal LM of `webgpu-torch llama --arch` (Llama, Llama 3.2's or Qwen2.5's architecture, or their tiny
twins: llama.cpp's llama or qwen2 graph; _gguf.refusal names what neither reads) with its weights rounded to
float16, so that both sides hold the same values: written as GGUF (_gguf.py) F16 and Q4_0 for llama.cpp, which
runs it through the npm node-llama-cpp's prebuilt Vulkan build
(js/bench/llm.js, every layer offloaded), and compiled by us with weights="float16" and weights="int4"
(groups of 32, as Q4_0's blocks, though each side rounds to 4 bits its own way: Q4_0's scale is the block's
largest magnitude over -8, ours over 7, so the int4 rows' ids are not expected to agree). --formats F32: float32
matrices beside our weights="float32", the parity check at real sizes (F16's kernels round further).
Both sides evaluate the same prompt ids and then decode greedily, from an empty cache each generation, timed
by the wall clock: the time to the first token (the prompt's evaluation and one token), then the median time
between tokens; the median over --runs generations after --warm-up seconds of them. Every side runs in a
process of its own, ours too (_ours.py over the compiled model saved here: a side run after another in one
process measured slower on the H100). Ours also shows the step's GPU time (timestamp queries); with --node,
ours also in the JS runtime (the same folder through js/bench/bench.js, tuned at load as the Python runtime
is). Peak memory: the resident peak (host memory, which on a CPU adapter holds the device's buffers too) and
`GPU MB`, the most bytes of WebGPU buffers alive at once for the WebGPU sides (js/bench/sides.js, _ours.py)
and, on a GPU, how much llama.cpp's device's used memory grew. `ids` compares each side's greedy ids
with transformers' over the same float16 weights in float32, up to the first difference: llama.cpp caches keys
and values in float16 by default (--kv-cache F32 for float32, as ours are), and a near tie between two logits
may order differently.
With --ort, onnxruntime-web's WebGPU EP too (js/bench/llm_ort.js, ORT's WebGPU build on Dawn for Node, the
same adapter as ours): the same float16-rounded model exported by torch.onnx as one functional step (caches in,
grown caches out: the prompt in one call from empty caches, then a call a token, the caches kept on the GPU;
_ort.export_llm), its weights float32 beside F16 (the same values), and quantized beside Q4_0 by onnxruntime's
MatMulNBits quantizer (q4, symmetric, blocks of 32: its own rounding again, so its ids are not expected to
agree either). llm_ort.js refuses a model any of whose float work ORT placed off its WebGPU EP.
Needs node and `npm install --ignore-scripts --no-save` in js/bench/llama-cpp/ (NODE_LLAMA_CPP_SKIP_DOWNLOAD=true),
and the `gguf` package (the bench extra); --ort also `npm ci` in js/ and js/bench/ort/, torch.onnx's exporter (the bench
extra) and onnxruntime (its quantizer). On a CPU Vulkan device (lavapipe) llama.cpp needs GGML_VK_VISIBLE_DEVICES
(--vulkan-device sets it): without it ggml-vulkan skips CPU devices and node-llama-cpp falls back to its CPU
backend, which llm.js refuses.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import torch

import webgpu_torch

from ..models import llama
from . import _gguf, _ort

REPO = Path(__file__).resolve().parents[4]
SCRIPT = REPO / "js" / "bench" / "llm.js"
PACKAGE = REPO / "js" / "bench" / "llama-cpp"
ORT_SCRIPT = REPO / "js" / "bench" / "llm_ort.js"
ORT_DIST = REPO / "js" / "bench" / "ort" / "node_modules" / "onnxruntime-web" / "dist"
# What ORT's q4 model quantizes: every Linear's weight and the embedding table (GatherBlockQuantized), as our
# int4 packs both. At 1B a float32 table (1.05 GB) left in made the model 1.8 GB, and ORT-web's wasm heap ran
# out creating its session (std::bad_alloc).
Q4_OPS = ("MatMul", "Gather")
# GGUF format -> ORT's weights of the same kind: (row label, whether Q4_OPS quantize the float export)
ORT_WEIGHTS = {"F16": ("float32 (F16 values)", False), "Q4_0": ("MatMulNBits q4", True),
               "F32": ("float32", False)}
# GGUF format -> our weights= for the same kind of storage; F32 (llama.cpp's float32 arithmetic) on request only
OURS = {"F16": "float16", "Q4_0": "int4", "F32": "float32"}
COLUMNS = ["side", "weights", "first token ms", "prompt tok/s", "decode ms/token", "decode tok/s",
           "step GPU ms", "decode vs llama.cpp", "decode vs ORT-web", "peak RSS MB", "GPU MB", "ids vs transformers"]


def add_arguments(parser) -> None:
    parser.add_argument("--arch", default="tiny", help="a model of models/archs.py (tiny, base, qwen2.5-tiny, …)")
    parser.add_argument("--formats", nargs="*", default=["F16", "Q4_0"], choices=list(OURS))
    parser.add_argument("--prompt-length", type=int, default=32, help="prompt ids after BOS")
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--runs", type=int, default=3, help="timed generations a side, after the warm-up")
    parser.add_argument("--warm-up", type=float, default=2.0,
                        help="seconds each side generates before its timed runs (pipelines built at first use; "
                             "an idle GPU and CPU take a moment to reach their clocks)")
    parser.add_argument("--kv-cache", choices=["F16", "F32"], default="F16",
                        help="the type of llama.cpp's cached keys and values (its default F16; ours are float32)")
    parser.add_argument("--vulkan-device", default="0",
                        help="llama.cpp's GGML_VK_VISIBLE_DEVICES where the environment sets none")
    parser.add_argument("--folder", default=str(REPO / "build" / "bench-llm"),
                        help="where the GGUF files (and --node's compiled folders) go")
    parser.add_argument("--node", action="store_true",
                        help="ours in Node too: the compiled folder through js/bench/bench.js (JS runtime, Dawn)")
    parser.add_argument("--ort", action="store_true",
                        help="onnxruntime-web's WebGPU EP too (js/bench/llm_ort.js): the model as ONNX, float and "
                             "MatMulNBits q4")
    parser.add_argument("--prepare-only", action="store_true",
                        help="with --ort: export (and quantize) the ONNX model into --folder and stop; a later run "
                             "over the same folder, arch and lengths reuses it")


def run(args) -> tuple[list[dict], dict]:
    if args.prepare_only:
        return _prepare(args)
    if not (PACKAGE / "node_modules" / "node-llama-cpp").is_dir() or shutil.which("node") is None:
        raise SystemExit(f"bench llm: needs node and node-llama-cpp: cd {PACKAGE} && "
                         "NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm install --ignore-scripts --no-save")
    if (args.node or args.ort) and not (REPO / "js" / "node_modules" / "webgpu").is_dir():
        raise SystemExit("bench llm --node/--ort: needs the JS runtime's packages (Dawn for Node): npm ci in js/")
    if args.ort and not ORT_DIST.is_dir():
        raise SystemExit(f"bench llm --ort: no onnxruntime-web in {ORT_DIST}: npm ci in js/bench/ort")
    model, prompt = _model(args)
    want, _ = llama.reference_generate(model, prompt, args.new_tokens)
    info = webgpu_torch.device_info(args.engine)
    folder = Path(args.folder)
    folder.mkdir(parents=True, exist_ok=True)
    rows, peers = [], set()
    onnx = _onnx(model, prompt, args) if args.ort else None
    for fmt in args.formats:
        weights = OURS[fmt]
        peer = _side(["node", SCRIPT, _gguf.write(model, folder / f"{args.arch}-{fmt}.gguf", fmt), "--prompt",
                      ",".join(map(str, prompt)), "--tokens", args.new_tokens, "--runs", args.runs,
                      "--warm-up", args.warm_up, "--kv-cache", args.kv_cache],
                     {"GGML_VK_VISIBLE_DEVICES": args.vulkan_device} | dict(os.environ))
        if info["adapter_type"].lower() != "cpu":  # a CPU device's used memory is the whole host's
            peer["gpuPeak"] = peer["vramGrowth"]
        peers.add(f"node-llama-cpp {peer['version']} on {peer['device']} ({peer['gpuLayers']} of "
                  f"{peer['layers']} layers offloaded, {peer['kvCache']} KV cache)")
        rows.append(_row("llama.cpp (Vulkan)", fmt, peer, prompt, want))
        ort = None
        if onnx:
            label, quantized = ORT_WEIGHTS[fmt]
            ort = _ort_side(onnx, onnx["q4"] if quantized else onnx["path"], prompt, args)
            peers.add(f"onnxruntime-web {ort['version']} (WebGPU EP) on {ort['device']} (on its CPU EP: "
                      f"{sum(ort['placed'].get('CPUExecutionProvider', {}).values())} shape nodes)")
            rows.append(_row("onnxruntime-web (WebGPU)", label, ort, prompt, want, peer))
        saved = folder / f"{args.arch}-{weights}"
        ours = _ours(model, prompt, weights, saved, args)
        rows.append(_row("ours", weights, ours, prompt, want, peer, ort))
        if args.node:  # the same compiled folder in the JS runtime
            js = _side(["node", REPO / "js" / "bench" / "bench.js", "--json", "--tune", "--calls", 4 * args.runs,
                        "--warm-up", args.warm_up, saved],
                       dict(os.environ))
            rows.append(_row("ours (Node)", weights, js, prompt, want, peer, ort))
    return rows, {"title": f"Llama decoding, --arch {args.arch} ({llama.parameters(model) / 1e6:.2f} M parameters),"
                           f" {len(prompt)} prompt ids, {args.new_tokens} greedy tokens",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})",
                  "baseline": "; ".join(sorted(peers)) + " (wall clock on both sides)"}


def _model(args) -> tuple[torch.nn.Module, list[int]]:
    """The seeded model of --arch, its weights rounded to float16 values (held exactly by both sides' 16-bit
    storage), and the prompt's ids."""
    model = llama.build(args.arch)
    if why := _gguf.refusal(model.config):
        raise SystemExit(f"bench llm --arch {args.arch}: {why}")
    model = model.half().float()
    model.generation_config.eos_token_id = None  # every requested token on both sides
    return model, llama.sample_prompt(model, args.prompt_length, seed=0)


def _prepare(args) -> tuple[list[dict], dict]:
    """--prepare-only: ORT's model files (_onnx) written into --folder; no side runs."""
    if not args.ort:
        raise SystemExit("bench llm --prepare-only: prepares --ort's exports; add --ort")
    model, prompt = _model(args)
    onnx = _onnx(model, prompt, args)
    rows = [{"side": "onnxruntime-web (WebGPU)", "weights": ORT_WEIGHTS[fmt][0],
             "file": onnx["q4"] if ORT_WEIGHTS[fmt][1] else onnx["path"]} for fmt in args.formats]
    for row in rows:
        row["MB"] = row["file"].stat().st_size / 1e6
    return rows, {"title": f"bench llm --prepare-only --ort: ORT's model files for --arch {args.arch}",
                  "device": "no device", "baseline": "none", "columns": ["side", "weights", "file", "MB"]}


def _onnx(model, prompt: list[int], args) -> dict:
    """ORT's model files in --folder: the float export (its path, cache shape and names) and, where a Q4_0 side
    runs, its weights quantized by onnxruntime (Q4_OPS: MatMulNBits and GatherBlockQuantized q4, symmetric,
    blocks of 32, as Q4_0's: `q4`). Made once for an arch and a length: `{arch}.onnx.json` records what the
    export was made for and what its q4 quantized, and a run over the same folder reuses both files
    (--prepare-only writes them on a machine that lacks Node's sides)."""
    folder, max_length = Path(args.folder), len(prompt) + args.new_tokens + 1
    folder.mkdir(parents=True, exist_ok=True)
    path, record, q4 = (folder / f"{args.arch}{suffix}" for suffix in (".onnx", ".onnx.json", "-q4.onnx"))
    made = json.loads(record.read_text()) if record.exists() else {}
    if made.get("max_length") != max_length or not path.exists():
        made = {"max_length": max_length} | _ort.export_llm(model, path, max_length)
    if "Q4_0" in args.formats and (made.get("q4_ops") != list(Q4_OPS) or not q4.exists()):
        _ort.quantize_weights(path, q4, bits=4, block_size=32, ops=Q4_OPS)
        made["q4_ops"] = list(Q4_OPS)
    elif "q4_ops" not in made:  # quantized from another export, or never
        q4.unlink(missing_ok=True)
    record.write_text(json.dumps(made) + "\n")
    return made | {"path": path} | ({"q4": q4} if "Q4_0" in args.formats else {})


def _ours(model, prompt: list[int], weights: str, saved: Path, args) -> dict:
    """Our figures as llm.js reports llama.cpp's (seconds to the first token and per token after it, medians
    over --runs; the last greedy ids), the step's GPU seconds and peak memory: the model compiled here and saved
    in `saved` with its generate.json (which --node's run reads too), then loaded, warmed up and timed in a
    process of its own (_ours.py), on the engine this process uses."""
    options = {"weights": weights} | ({"group_size": 32} if weights == "int4" else {})
    llama.compile_step(model, len(prompt) + args.new_tokens + 1, **options).save(saved)
    record = {"prompt_ids": prompt, "max_new_tokens": args.new_tokens}
    (saved / "generate.json").write_text(json.dumps(record) + "\n")
    engine = {"WEBGPU_TORCH_ENGINE": webgpu_torch.device_info(args.engine)["engine"]}
    return _side([sys.executable, "-m", f"{__package__}._ours", saved, "--runs", args.runs, "--warm-up",
                  args.warm_up], os.environ | engine)


def _ort_side(onnx: dict, path: Path, prompt: list[int], args) -> dict:
    """onnxruntime-web's figures (llm_ort.js) over the ONNX model at `path` (one of _onnx's)."""
    return _side(["node", ORT_SCRIPT, path, "--prompt", ",".join(map(str, prompt)), "--tokens", args.new_tokens,
                  "--runs", args.runs, "--warm-up", args.warm_up, "--cache", ",".join(map(str, onnx["cache"]))],
                 dict(os.environ))


def _side(command: list, env: dict) -> dict:
    """The JSON line a side's process (a Node bench script, or _ours.py) prints last."""
    out = subprocess.run(list(map(str, command)), capture_output=True, text=True, env=env, cwd=REPO / "js")
    if out.returncode:
        raise SystemExit(f"bench llm: {' '.join(map(str, command[:3]))} failed ({out.returncode}): "
                         f"{out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _row(side: str, weights: str, r: dict, prompt: list[int], want: list[int], baseline: dict | None = None,
         ort: dict | None = None) -> dict:
    agree = next((i for i, (a, b) in enumerate(zip(r["ids"], want, strict=True)) if a != b), len(want))
    vs = "1 (baseline)" if baseline is None else f"{baseline['perToken'] / r['perToken']:.2f}x"
    return {"side": side, "weights": weights, "first token ms": r["firstToken"] * 1e3,
            "prompt tok/s": len(prompt) / r["firstToken"], "decode ms/token": r["perToken"] * 1e3,
            "decode tok/s": 1 / r["perToken"], "step GPU ms": r["stepGpu"] * 1e3 if "stepGpu" in r else "n/a",
            "decode vs llama.cpp": vs, "decode vs ORT-web": f"{ort['perToken'] / r['perToken']:.2f}x" if ort else "",
            "peak RSS MB": r["peakRss"] / 1e6, "GPU MB": r["gpuPeak"] / 1e6 if "gpuPeak" in r else "n/a",
            "ids vs transformers": f"{agree}/{len(want)}"}
