"""Florence-2 (DaViT vision tower + BART encoder/decoder) compiled as the three stages of a `Seq2Seq`.

    vision   pixel_values [1, 3, H, W]                  -> image features [1, N, d]   (static)
    encoder  image features, prompt ids [1, T]          -> cross K/V per decoder layer [1, heads, N+T, d_head]
    decoder  tokens [B, 1], position [1], cross K/V     -> logits [B, 1, V], next token [B, 1]
             state: the self-attention K/V of every layer, [B, heads, max_length, d_head], row `position`
             written in place each step (B: 1, or the beams of a beam search)
    prefill  tokens [B, P], position [1], cross K/V     -> the same for the last of a decoder prompt of P tokens
             (optional: compile_stages' max_decoder_prompt)

T (the prompt) is a dynamic dimension, so each stage is compiled once; the decoding programs of
models/decoder_programs.py come with the decoder. The stages run transformers' own
modules: the encoder stage embeds the prompt and places the image features first, as Florence2Model.forward
does with the processor's image placeholders; the decoder stage drives BartDecoder through an
EncoderDecoderCache of a StaticCache over the stage's own buffers (the program's state: static_cache.py) and
the cross K/V passed in, marked as computed, so cross K/V are never recomputed per token.
"""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import torch
from torch.export import Dim
from transformers import Florence2Config, Florence2ForConditionalGeneration
from transformers.cache_utils import DynamicCache, EncoderDecoderCache

import webgpu_torch

from ...runtime.generation import Seq2Seq
from . import decoder_programs
from .static_cache import CacheBuffers
from .torchao_weights import quantize_weights


def config(size: str) -> Florence2Config:
    """Florence-2-base's sizes ("base": text d_model 768, 6+6 layers, 12 heads, ffn 3072, vocab 51289; the
    DaViT defaults with projection_dim 768), or a reduced one for tests ("tiny"). Note Florence2Config()
    itself defaults to the large text model."""
    c = Florence2Config()
    t, v = c.text_config, c.vision_config
    if size == "base":
        t.d_model, t.encoder_layers, t.decoder_layers = 768, 6, 6
        t.encoder_attention_heads = t.decoder_attention_heads = 12
        t.encoder_ffn_dim = t.decoder_ffn_dim = 3072
        t.vocab_size = 51289
        v.projection_dim = 768
    elif size == "tiny":
        t.d_model, t.encoder_layers, t.decoder_layers = 64, 2, 2
        t.encoder_attention_heads = t.decoder_attention_heads = 4
        t.encoder_ffn_dim = t.decoder_ffn_dim = 128
        t.vocab_size = 1000
        v.embed_dim, v.num_heads, v.num_groups, v.depths = [16, 32, 64, 64], [1, 2, 4, 4], [1, 2, 4, 4], [1, 1, 1, 1]
        v.projection_dim, v.window_size = 64, 3
    else:
        raise ValueError(f"size {size!r}: choose 'base' or 'tiny'")
    # Random weights: the image placeholder must be a row of the embedding table for transformers' own
    # forward (the real checkpoints' tokenizer adds it); its embedding is replaced by image features anyway.
    c.image_token_id = t.vocab_size - 1
    t._attn_implementation = "sdpa"
    return c


def build(size: str, seed: int = 0, init_std: float = 0.1) -> Florence2ForConditionalGeneration:
    """Seeded random weights. The text model's init scale defaults higher than transformers' 0.02: at 0.02
    the layers barely move the residual stream, so the tied embedding makes every step repeat its input
    token and a greedy comparison would compare nothing. Much higher is no better: at 0.3 the base-width
    model is chaotic — eager float32 itself lands 1% away from float64 — so no float32 backend could match."""
    c = config(size)
    c.text_config.init_std = init_std
    torch.manual_seed(seed)
    return Florence2ForConditionalGeneration(c).eval()


def quantize(model, bits: int = 4, group_size: int = 32) -> None:
    """torchao's weight-only quantization, in place, of every Linear of the language model (encoder and
    decoder), the LM head and the language model's embeddings (the tied token table, quantized once for the
    gather and once as the LM head). The vision tower stays float."""
    text = model.model.language_model
    quantize_weights([(text, None), (model, lambda m, fqn: fqn == "lm_head"),
                      (text, lambda m, _: isinstance(m, torch.nn.Embedding))], bits, group_size)


def sample_inputs(model, image_size: int, prompt_length: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Seeded pixel values and prompt ids laid out as the processor does: <s> tokens </s>."""
    g = torch.Generator().manual_seed(seed)
    vocab = model.config.text_config.vocab_size
    prompt = torch.randint(3, vocab - 1, (1, prompt_length), generator=g)
    return torch.randn(1, 3, image_size, image_size, generator=g), torch.cat(
        [torch.tensor([[0]]), prompt, torch.tensor([[2]])], dim=1)


class VisionStage(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, pixel_values):
        return self.model.get_image_features(pixel_values).pooler_output


class EncoderStage(torch.nn.Module):
    def __init__(self, model):
        super().__init__()
        self.embed = model.get_input_embeddings()
        self.encoder = model.model.language_model.encoder
        self.decoder_layers = model.model.language_model.decoder.layers

    def forward(self, image_features, prompt_ids):
        embeds = torch.cat([image_features, self.embed(prompt_ids)], dim=1)
        states = self.encoder(inputs_embeds=embeds).last_hidden_state
        cross = []
        for layer in self.decoder_layers:
            attn = layer.encoder_attn
            shape = (*states.shape[:-1], -1, attn.head_dim)
            cross += [attn.k_proj(states).view(shape).transpose(1, 2), attn.v_proj(states).view(shape).transpose(1, 2)]
        return cross


class DecoderStage(torch.nn.Module):
    """Decoder tokens [B, T] from `position` on over a self-attention cache of `max_length` rows kept as state:
    token i attends to rows 0 ..= position + i (its own K/V written first); the logits of the last. The cross
    K/V of the one prompt serve every beam (a broadcast view, no copy)."""

    def __init__(self, model, max_length: int, batch: int = 1):
        super().__init__()
        self.decoder = model.model.language_model.decoder
        self.lm_head = model.lm_head
        config = self.decoder.config
        heads = config.decoder_attention_heads
        self.cache = CacheBuffers(config, config.decoder_layers, heads, config.d_model // heads, max_length, batch)

    def forward(self, tokens, position, cross_kv):
        batch = tokens.shape[0]
        cross_kv = [kv.expand(batch, -1, -1, -1) for kv in cross_kv]
        cache = EncoderDecoderCache(self.cache.cache(position), DynamicCache())
        for i in range(len(self.decoder.layers)):
            cache.cross_attention_cache.update(cross_kv[2 * i], cross_kv[2 * i + 1], i)
            cache.is_updated[i] = True
        # The cross-attention reads the cached K/V; these states only tell it that it runs (and are dead code).
        states = cross_kv[0].new_zeros(batch, cross_kv[0].shape[2], self.decoder.config.d_model)
        out = self.decoder(input_ids=tokens, encoder_hidden_states=states, past_key_values=cache, use_cache=True)
        logits = self.lm_head(out.last_hidden_state[:, -1:])
        return logits, logits.argmax(-1)


class FunctionalDecoderStage(torch.nn.Module):
    """The decoder step with the self-attention cache passed in and the grown cache returned (length P → P + 1):
    for exporters without state (ONNX, for onnxruntime-web's side of `bench browser`)."""

    def __init__(self, model):
        super().__init__()
        self.decoder = model.model.language_model.decoder
        self.lm_head = model.lm_head

    def forward(self, token, self_kv, cross_kv):
        cache = EncoderDecoderCache(DynamicCache(), DynamicCache())
        for i in range(len(self.decoder.layers)):
            cache.self_attention_cache.update(self_kv[2 * i], self_kv[2 * i + 1], i)
            cache.cross_attention_cache.update(cross_kv[2 * i], cross_kv[2 * i + 1], i)
            cache.is_updated[i] = True
        states = cross_kv[0].new_zeros(1, cross_kv[0].shape[2], self.decoder.config.d_model)
        out = self.decoder(input_ids=token, encoder_hidden_states=states, past_key_values=cache, use_cache=True)
        logits = self.lm_head(out.last_hidden_state)
        grown = [t for layer in cache.self_attention_cache.layers for t in (layer.keys, layer.values)]
        return logits, logits[:, -1:].argmax(-1), grown


def compile_stages(model, image_size: int, max_prompt: int = 64, max_new_tokens: int = 128, *, num_beams: int = 1,
                   max_decoder_prompt: int = 1, **options) -> Seq2Seq:
    """Export and compile the three stages (the decoder's cache holds max_new_tokens rows, in `num_beams` batch
    rows), a decoder prefill for decoder prompts of up to `max_decoder_prompt` tokens where that is over 1, and
    the decoding programs for `num_beams`; `timings` holds each stage's compile seconds."""
    text = model.config.text_config
    layers, heads = text.decoder_layers, text.decoder_attention_heads
    head_dim = text.d_model // heads
    pixels = torch.randn(1, 3, image_size, image_size)
    timings = {}

    def compiled(name, module, args, dynamic=None):
        start = time.perf_counter()
        program = webgpu_torch.compile_module(module, args, dynamic_shapes=dynamic, contiguous_outputs=True,
                                              **options)
        timings[name] = time.perf_counter() - start
        return program

    with torch.no_grad():
        features = VisionStage(model)(pixels)
        prompt = torch.randint(3, text.vocab_size - 1, (1, 5))
        cross = EncoderStage(model)(features, prompt)
    vision = compiled("vision", VisionStage(model), (pixels,))
    length = Dim("prompt", min=1, max=max_prompt)
    encoder = compiled("encoder", EncoderStage(model), (features, prompt), ({}, {1: length}))
    source = Dim("source", min=features.shape[1] + 1, max=features.shape[1] + max_prompt)
    stage, position = DecoderStage(model, max_new_tokens, num_beams), torch.tensor([0])
    decoder = compiled("decoder", stage, (torch.full((num_beams, 1), 2), position, cross),
                       (None, None, [{2: source}] * (2 * layers)))
    programs = {}
    if max_decoder_prompt > 1:
        tokens = torch.full((num_beams, max_decoder_prompt), 2)
        length = Dim("decoder_prompt", min=2, max=max_decoder_prompt)
        programs["prefill"] = compiled("prefill", stage, (tokens, position, cross),
                                       ({1: length}, None, [{2: source}] * (2 * layers)))
    gen = model.generation_config
    programs |= decoder_programs.compile_programs(stage.cache, text.vocab_size, num_beams, max_new_tokens,
                                                  decoder_programs.eos_count(gen.eos_token_id))
    info = {"layers": layers, "heads": heads, "head_dim": head_dim, "image_tokens": features.shape[1],
            "max_length": max_new_tokens,
            "decoder_start_token_id": gen.decoder_start_token_id or text.decoder_start_token_id,
            "eos_token_id": gen.eos_token_id, "forced_bos_token_id": gen.forced_bos_token_id,
            "forced_eos_token_id": gen.forced_eos_token_id}
    return Seq2Seq(vision, encoder, decoder, info, timings, programs)


def reference_generate(model, pixel_values: torch.Tensor, prompt_ids: torch.Tensor, max_new_tokens: int):
    """transformers' own greedy generate for the same inputs (the processor's layout: image placeholders,
    then the prompt), and the logits of every step given those ids (teacher forcing)."""
    n_image = VisionStage(model)(pixel_values).shape[1]
    input_ids = torch.cat([torch.full((1, n_image), model.config.image_token_id), prompt_ids], dim=1)
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, pixel_values=pixel_values, max_new_tokens=max_new_tokens,
                             do_sample=False, num_beams=1, output_scores=True, output_logits=True,
                             return_dict_in_generate=True)
    ids = out.sequences[0, 1:].tolist()  # after the decoder start token
    return ids, [step[0].numpy() for step in out.logits]


# How far teacher-forced logits may stray from transformers', relative to their scale: float32, and with float16
# activations (precision) or weights (the rounding of each f16 value, 2^-11, through the layers).
LOGIT_TOLERANCE = {"float32": 1e-3, "float16": 3e-2}


def run(size: str = "base", image_size: int = 768, new_tokens: int = 20, seeds=(0, 1, 2), prompt_length: int = 8,
        save: str | None = None, engine: str | None = None, precision: str = "float32", quantized: int | None = None,
        group_size: int = 32, weights: str = "float32", num_beams: int = 1) -> bool:
    """Build, compile (with `precision` and `weights`), generate and check against transformers; print timings.
    Greedy (every requested token: no EOS) unless `num_beams` is over 1: then a beam search with the model's EOS
    and forced EOS, as Florence-2 is used, against transformers' generate(num_beams=…) (sequences and scores).
    With `quantized` (4 or 8 bits), the language model is quantized with torchao first (`quantize`), checked
    against transformers running that same quantized model, and compared with the float32 model's stages
    compiled in the same run: artifact bytes, ms per token, GPU ms per decoder call. True when every check
    holds."""
    import copy

    import numpy as np

    model = build(size)
    if num_beams == 1:  # generate every requested token on both sides
        model.generation_config.eos_token_id = None
        model.generation_config.forced_eos_token_id = None
    float_model = copy.deepcopy(model) if quantized else None
    if quantized:
        quantize(model, quantized, group_size)
    info = webgpu_torch.device_info(engine)
    what = f", language model int{quantized} (torchao, groups of {group_size})" if quantized else ""
    strategy = f"beam search ({num_beams} beams)" if num_beams > 1 else "greedy"
    print(f"Florence-2-{size}, random seeded weights, {image_size}² image, {new_tokens} new tokens, {strategy}, "
          f"precision={precision}, weights={weights}{what}")
    print(f"device: {info['adapter']} via {info['engine_module']} ({info['backend']})")
    limits = {"max_prompt": max(16, prompt_length + 2), "max_new_tokens": new_tokens + 1}
    stages = compile_stages(model, image_size, **limits, num_beams=num_beams, precision=precision, weights=weights)
    print("compile: " + ", ".join(f"{k} {v:.1f} s" for k, v in stages.timings.items()))
    start = time.perf_counter()
    for stage in (stages.vision, stages.encoder, stages.decoder, *stages.programs.values()):
        stage.executor(engine)
    print(f"load: {time.perf_counter() - start:.1f} s (pipelines, bind groups, weights)")
    if save:
        stages.save(save)
        print(f"saved to {save}")
    ok, per_token = True, []
    half = "float16" in (precision, weights)  # f16 activations or weights: their rounding, not ours
    for seed in seeds:
        pixels, prompt = sample_inputs(model, image_size, prompt_length, seed)
        start = time.perf_counter()
        check = _beams if num_beams > 1 else _greedy
        passed, summary, ids, eager = check(model, stages, pixels, prompt, new_tokens, num_beams, half)
        total = time.perf_counter() - start - eager
        ok &= passed
        steps, host = stages.timings["decoder steps"], stages.timings["decoder host"]
        per_token.append(float(np.median(steps[1:])))
        print(f"seed {seed}: {summary}: {'PASS' if passed else 'FAIL'}")
        print(f"  generate: WebGPU {total * 1e3:.0f} ms, time to first token {steps[0] * 1e3:.1f} ms, "
              f"{per_token[-1] * 1e3:.2f} ms per token after it; transformers eager on CPU {eager * 1e3:.0f} ms")
        print("  host per step (median ms): " + ", ".join(f"{k} {np.median(v) * 1e3:.3f}" for k, v in host.items()
                                                          if v))
    if save and seeds:  # what js/bench/bench.js needs to generate the same way (tests/corpus.py's form)
        record = {"pixel_values": _tensor_record(pixels.numpy()), "prompt_ids": _tensor_record(prompt.numpy()),
                  "max_new_tokens": new_tokens, "ids": ids}
        (Path(save) / "generate.json").write_text(json.dumps(record) + "\n")
    gpu = _gpu_times(stages, engine)
    print("GPU time per call: " + ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in gpu.items()))
    wall = float(np.median(per_token))
    print(f"decode: wall {wall * 1e3:.2f} ms/token, decoder GPU {gpu['decoder'] * 1e3:.2f} ms/token: "
          f"{wall / gpu['decoder']:.2f}x")
    if float_model is not None:
        _against_float32(stages, compile_stages(float_model, image_size, **limits, precision=precision), gpu,
                         sample_inputs(model, image_size, prompt_length, seeds[0] if seeds else 0), new_tokens,
                         engine)
    return ok


def _greedy(model, stages: Seq2Seq, pixels, prompt, new_tokens: int, _, half: bool):
    """Greedy ids and teacher-forced logits against transformers' generate: (passed, summary, ids, the
    reference's seconds)."""
    import numpy as np

    start = time.perf_counter()
    want_ids, want_logits = reference_generate(model, pixels, prompt, new_tokens)
    eager = time.perf_counter() - start
    logits = stages.generate(pixels.numpy(), prompt.numpy(), new_tokens, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    ids = stages.generate(pixels.numpy(), prompt.numpy(), new_tokens).ids
    agree = next((i for i, (a, b) in enumerate(zip(ids, want_ids, strict=True)) if a != b), len(ids))
    # Ids may part only at a near-tie: where transformers' top-2 margin is within the measured error.
    tie = agree < len(want_ids) and _margin(want_logits[agree]) <= error
    passed = error <= LOGIT_TOLERANCE["float16" if half else "float32"] and (agree == len(want_ids) or tie)
    return (passed, f"ids match transformers for {agree}/{len(want_ids)} tokens; teacher-forced logits within "
                    f"{error:.1e} of the scale", ids, eager)


def reference_beams(model, pixel_values: torch.Tensor, prompt_ids: torch.Tensor, max_new_tokens: int,
                    num_beams: int, **settings):
    """transformers' generate(num_beams=…) for the same inputs: every beam's sequence after the decoder start
    token, best first, and its score."""
    n_image = VisionStage(model)(pixel_values).shape[1]
    input_ids = torch.cat([torch.full((1, n_image), model.config.image_token_id), prompt_ids], dim=1)
    with torch.no_grad():
        out = model.generate(input_ids=input_ids, pixel_values=pixel_values, max_new_tokens=max_new_tokens,
                             do_sample=False, num_beams=num_beams, num_return_sequences=num_beams, output_scores=True,
                             return_dict_in_generate=True, **settings)
    return out.sequences[:, 1:].tolist(), out.sequences_scores.tolist()


def _beams(model, stages: Seq2Seq, pixels, prompt, new_tokens: int, num_beams: int, _):
    from .generation_reference import check_beams

    start = time.perf_counter()
    want, scores = reference_beams(model, pixels, prompt, new_tokens, num_beams)
    eager = time.perf_counter() - start
    for _ in range(2):  # the second timed: a CPU adapter compiles shaders at their first dispatch
        got = stages.generate(pixels.numpy(), prompt.numpy(), new_tokens, num_beams=num_beams,
                              num_return_sequences=num_beams)
    passed, summary = check_beams(got, want, scores, pad=model.generation_config.pad_token_id)
    return passed, summary, got.ids, eager


def _tensor_record(a) -> dict:
    """An array as tests/corpus.py records one: dtype, shape, and base64 of its little-endian C-order bytes."""
    import numpy as np

    a = np.ascontiguousarray(a)
    return {"dtype": str(a.dtype), "shape": list(a.shape),
            "data": base64.b64encode(a.astype(a.dtype.newbyteorder("<")).tobytes()).decode()}


def _gpu_times(stages: Seq2Seq, engine: str | None) -> dict[str, float]:
    """GPU seconds per call of each stage, each as its last call left its inputs."""
    from ...runtime import timing

    return {name: timing.gpu_time(getattr(stages, name).executor(engine), repeats=2, samples=3).seconds
            for name in ("vision", "encoder", "decoder")}


def _against_float32(stages: Seq2Seq, floats: Seq2Seq, gpu: dict[str, float], inputs, new_tokens: int,
                     engine: str | None) -> None:
    """Print the quantized stages' artifact bytes, ms per token and decoder GPU time against the float32
    model's stages, the float32 ones measured now on the same inputs."""
    import numpy as np

    from ...format import artifact

    pixels, prompt = (t.numpy() for t in inputs)
    steps = {}
    for name, s in (("quantized", stages), ("float32", floats)):
        for _ in range(2):  # the second timed: a first generation after load runs slower on some GPUs
            s.generate(pixels, prompt, new_tokens, num_beams=s.decoding.batch)
        steps[name] = float(np.median(s.timings["decoder steps"][1:]))
    sizes = {name: sum(len(artifact.to_bytes(getattr(s, stage).program)) for stage in ("vision", "encoder",
                                                                                      "decoder"))
             for name, s in (("quantized", stages), ("float32", floats))}
    float_gpu = _gpu_times(floats, engine)
    print(f"artifacts: {sizes['quantized'] / 1e6:.1f} MB against float32's {sizes['float32'] / 1e6:.1f} MB "
          f"({sizes['quantized'] / sizes['float32']:.3f}x)")
    print(f"decode: {steps['quantized'] * 1e3:.2f} ms per token against float32's {steps['float32'] * 1e3:.2f} "
          f"({steps['float32'] / steps['quantized']:.2f}x float32's speed); decoder GPU {gpu['decoder'] * 1e3:.2f} ms "
          f"against {float_gpu['decoder'] * 1e3:.2f} ({float_gpu['decoder'] / gpu['decoder']:.2f}x)")


def _margin(scores) -> float:
    import numpy as np

    top2 = np.sort(scores)[-2:]
    return float((top2[1] - top2[0]) / np.abs(scores).max())
