"""Ours against onnxruntime-web's WebGPU EP in one headless Chromium: same models, inputs, adapter and device.

Each model is compiled by us (.wgpt) and exported by torch.onnx (.onnx) from the same torch module into
`--folder` with its inputs (manifest.json; js/bench/side_by_side.js says what each kind times); the page
js/bench/side_by_side.html runs both call for call, alternating. MiniLM, MobileNetV2 and ViT-B/16 per call
(host in, host out); Florence-2's decoder step per token of a greedy decode with the caches on the GPU.
With `--quantize int4` each decoder also runs quantized, group 32: ours with torchao's int4 weight-only
quantization of the language model's Linears, LM head and embeddings (florence2.quantize), ORT's with
onnxruntime's own MatMulNBits quantizer (q4, symmetric, blocks of 32) over the float model's ONNX export.
Needs the checkout's js/ (`npm ci` in js/ and in js/bench/ort/) and torch.onnx's exporter (onnx, onnxscript);
--quantize also onnxruntime (its quantizer) and torchao.
With `--prepare-only` it writes the folder and stops (for a machine without Chromium: side_by_side_node.js);
with `--prepared` it runs over a folder written so before (the same artifacts measured again, or elsewhere).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import torch

import webgpu_torch

from .. import serve
from . import _ort, models

REPO = Path(__file__).resolve().parents[4]
ORT_DIST = "js/bench/ort/node_modules/onnxruntime-web/dist"
COLUMNS = ["model", "per", "ours ms", "ORT ms", "ours vs ORT", "outputs agree"]
CALL_MODELS = {name: models.MODELS[name] for name in ("minilm", "mobilenet_v2", "vit_b16")}
DECODERS = {"florence2_decoder": ("tiny", 96), "florence2_base_decoder": ("base", 768)}


def add_arguments(parser) -> None:
    parser.add_argument("--models", nargs="*", default=[*CALL_MODELS, "florence2_decoder"],
                        choices=[*CALL_MODELS, *DECODERS])
    parser.add_argument("--adapter", choices=["swiftshader", "lavapipe"], default="swiftshader")
    parser.add_argument("--calls", type=int, default=3, help="timed calls (decoders: generations) a side")
    parser.add_argument("--steps", type=int, default=20, help="tokens a decoder generation")
    parser.add_argument("--folder", default=str(REPO / "build" / "bench-browser"))
    parser.add_argument("--prepare-only", action="store_true", help="write the folder, run nothing")
    parser.add_argument("--prepared", action="store_true", help="run over the folder as written before")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds the page may take")
    parser.add_argument("--quantize", choices=["int4"],
                        help="decoders also with 4-bit weights: ours torchao's, ORT's MatMulNBits (q4)")


def _save_input(folder: Path, name: str, x: torch.Tensor, onnx_name: str) -> dict:
    array = x.detach().numpy()
    (folder / name).write_bytes(np.ascontiguousarray(array).tobytes())
    return {"onnx": onnx_name, "dtype": str(array.dtype), "shape": list(array.shape), "file": name}


def prepare_call(folder: Path, name: str) -> dict:
    torch.manual_seed(0)
    module, inputs = CALL_MODELS[name]()
    module = module.eval()
    webgpu_torch.compile_module(module, inputs).save(folder / f"{name}.wgpt")
    names, _ = _ort.export(module, inputs, folder / f"{name}.onnx")
    return {"name": name, "kind": "call", "wgpt": f"{name}.wgpt", "onnx": f"{name}.onnx",
            "inputs": [_save_input(folder, f"{name}.input{i}.bin", x, n)
                       for i, (x, n) in enumerate(zip(inputs, names, strict=True))]}


def prepare_decoder(folder: Path, name: str, steps: int, quantize: str | None = None) -> list[dict]:
    """Florence-2's decoder step (random seeded weights), the cross K/V from its own vision tower and encoder.
    With `quantize` ("int4"), also the same decoder with 4-bit weights in groups of 32 on each side, named
    NAME_int4: ours quantized by torchao, ORT's by its MatMulNBits quantizer from the float model's export."""
    from torch.export import Dim

    from ..models import florence2

    size, image = DECODERS[name]
    model = florence2.build(size)
    text = model.config.text_config
    layers, heads = text.decoder_layers, text.decoder_attention_heads
    head_dim = text.d_model // heads
    pixels, prompt = florence2.sample_inputs(model, image, 5, seed=0)
    with torch.no_grad():
        cross = florence2.EncoderStage(model)(florence2.VisionStage(model)(pixels), prompt)
    # Ours: the step with its cache as state; ORT's: the functional step (ONNX has no state).
    functional = florence2.FunctionalDecoderStage(model)
    past = [torch.randn(1, heads, 3, head_dim) for _ in range(2 * layers)]
    args = (torch.tensor([[2]]), past, cross)
    dynamic = (None, [{2: Dim("past", min=0, max=steps + 1)}] * (2 * layers), [None] * (2 * layers))
    inputs, outputs = _ort.export(functional, args, folder / f"{name}.onnx", dynamic_shapes=dynamic)
    token, past_names, cross_names = inputs[0], inputs[1:1 + 2 * layers], inputs[1 + 2 * layers:]
    entry = {"kind": "decoder", "inputs": [_save_input(folder, f"{name}.cross{i}.bin", x, n)
                                           for i, (x, n) in enumerate(zip(cross, cross_names, strict=True))],
             "start": int(model.generation_config.decoder_start_token_id or text.decoder_start_token_id),
             "steps": steps, "layers": layers, "heads": heads, "headDim": head_dim, "tokenInput": token,
             "pastInputs": past_names, "crossInputs": cross_names, "outputs": outputs}

    def save_ours(n: str) -> None:
        webgpu_torch.compile_module(florence2.DecoderStage(model, steps), (torch.tensor([[2]]), torch.tensor([0]),
                                                                           cross),
                                    contiguous_outputs=True).save(folder / f"{n}.wgpt")

    names = [name]
    save_ours(name)
    if quantize:
        names.append(f"{name}_{quantize}")
        _ort.quantize_weights(folder / f"{name}.onnx", folder / f"{names[-1]}.onnx", bits=4, block_size=32)
        florence2.quantize(model, 4, 32)
        save_ours(names[-1])
    return [{"name": n, "wgpt": f"{n}.wgpt", "onnx": f"{n}.onnx", **entry} for n in names]


def prepare(folder: Path, names: list[str], steps: int, quantize: str | None = None) -> dict:
    folder.mkdir(parents=True, exist_ok=True)
    entries = []
    for name in names:
        try:
            entries += prepare_decoder(folder, name, steps, quantize) if name in DECODERS else [
                prepare_call(folder, name)]
        except ImportError as e:  # MiniLM's weights package, where it is not installed
            print(f"{name}: skipped ({e.name} is not installed)")
    manifest = {"models": entries}
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    return manifest


def run(args) -> tuple[list[dict], dict]:
    from ..headless import Chromium

    folder = Path(args.folder)
    manifest = (json.loads((folder / "manifest.json").read_text()) if args.prepared
                else prepare(folder, args.models, args.steps, args.quantize))
    if args.prepare_only:
        per = {"call": "call", "decoder": "token"}
        rows = [{"model": e["name"], "per": per[e["kind"]]} for e in manifest["models"]]
        return rows, {"title": f"Prepared in {folder} (run nothing)", "device": "none", "baseline": "none"}
    if not (REPO / ORT_DIST).is_dir():
        raise SystemExit(f"bench browser: no onnxruntime-web in {REPO / ORT_DIST}: run npm ci in js/bench/ort")
    site = serve.Site({}, {"/js/": REPO / "js", "/model/": folder})
    server = serve.start(site)
    try:
        with Chromium(args.adapter) as browser:
            browser.open(f"http://127.0.0.1:{server.server_address[1]}/js/bench/side_by_side.html"
                         f"?featureLevel={browser.feature_level}&calls={args.calls}")
            result = browser.wait_for("window.result", timeout=args.timeout, poll=2)
    finally:
        server.shutdown()
    rows = [_row(r) for r in result["rows"]]
    return rows, {"title": "Ours vs onnxruntime-web's WebGPU EP, one Chromium page, alternating",
                  "baseline": f"onnxruntime-web {result['ort']} (WebGPU EP), same adapter",
                  "device": f"{result['adapter']} ({args.adapter}, {browser.feature_level}), {result['browser']}"}


def _row(r: dict) -> dict:
    if "error" in r:
        return {"model": r["name"], "per": "n/a", "ours ms": f"failed: {r['error'][:80]}"}
    agree = f"{r['agree']:.1e} rel" if r["unit"] == "call" else f"{r['agree']} of {len(r['ids']['ours'])} tokens"
    return {"model": r["name"], "per": r["unit"], "ours ms": r["ours"], "ORT ms": r["ort"],
            "ours vs ORT": r["ort"] / r["ours"], "outputs agree": agree}
