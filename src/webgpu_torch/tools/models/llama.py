"""Llama-architecture causal LMs (transformers' LlamaForCausalLM and Qwen2ForCausalLM: random seeded weights in
a named architecture's shapes, or a checkpoint's from a local folder) compiled as a decoder step and a prefill
over a static KV cache kept as their shared state (generation.CausalLM), with the decoding programs of
models/decoder_programs.py.

    step     tokens [B, 1], position [1]  -> logits [B, 1, V] (float32), next token [B, 1]
             state: every layer's keys and values, [B, kv_heads, max_length, head_dim], row `position` written
             in place each step (B: 1, or the beams of a beam search)
    prefill  tokens [B, T], position [1]  -> the same for the last of T tokens (T dynamic, 2 .. max_length),
             rows position .. position + T - 1 written in one call with causal attention

The step runs transformers' own model over a StaticCache of the step's buffers (static_cache.py): its causal
mask over the cache becomes a key limit and repeat_kv grouped heads (cache_attention.py), so a step reads the
live prefix of the cache once per KV head. Qwen2's query, key and value biases merge with their weights
(linear_merging.py). `compile(..., weights="int8" | "int4")` options apply as to any program.
"""

from __future__ import annotations

import json
import resource
import time
from pathlib import Path

import torch
from torch.export import Dim
from transformers import AutoConfig, AutoModelForCausalLM, DynamicCache, PreTrainedModel

import webgpu_torch

from ...compiler.options import DEFAULT_MAX_BINDING
from ...format import packing
from ...runtime.generation import CausalLM
from . import decoder_programs
from .archs import ARCHS
from .rounded_weights import round_weights
from .static_cache import CacheBuffers
from .torchao_weights import quantize_weights

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
# Teacher-forced logits against transformers computing in float32 (over the same weights), relative to the
# logits' scale: float32 as Florence-2's; a 16-bit model is computed in float32 but rounded where it casts to
# its dtype (RMSNorm's output, rope's), four of that dtype's roundings (tests/helpers.py's per-op bounds)
# over a whole model; float16 activations as the float16 options' bound.
LOGIT_BOUND = {"float32": 1e-3, "bfloat16": 4 * 2**-7, "float16": 4 * 2**-10, "precision=float16": 3e-2}


def config(arch: str):
    if arch not in ARCHS:
        raise ValueError(f"arch {arch!r}: choose one of {', '.join(ARCHS)}")
    kwargs = dict(ARCHS[arch])
    c = AutoConfig.for_model(kwargs.pop("model_type"), **kwargs)
    c._attn_implementation = "sdpa"
    return c


def build(arch: str, seed: int = 0, init_std: float = 0.05, dtype: str = "float32",
          checkpoint: str | None = None) -> PreTrainedModel:
    """A causal LM in `arch`'s shapes with seeded random weights, a little larger than transformers' 0.02 so
    that greedy decoding does not settle into repeating one token at once (a comparison of such ids would
    compare little; Qwen2's attention biases drawn too, which transformers starts at zero), in `dtype`; or, with
    `checkpoint` (a local folder of config.json and weights), that model through from_pretrained."""
    if checkpoint is not None:
        model = AutoModelForCausalLM.from_pretrained(checkpoint, dtype=DTYPES[dtype], attn_implementation="sdpa")
        return model.eval()
    c = config(arch)
    c.initializer_range = init_std
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(c).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".bias"):
                p.normal_(0.0, init_std)
    return model.to(DTYPES[dtype])


def quantize(model, bits: int = 4, group_size: int = 32) -> None:
    """torchao's weight-only quantization, in place, of every Linear (the LM head too) and the token embedding:
    the compiled step keeps them packed. A tied LM head stays tied: the embedding's quantized table is its
    weight too, so the compiled program stores it once."""
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    quantize_weights([(model, lambda m, _: isinstance(m, torch.nn.Embedding))], bits, group_size)
    if tied:
        model.lm_head.weight = model.get_input_embeddings().weight
    quantize_weights([(model.model if tied else model, None)], bits, group_size)


def parameters(model) -> int:
    """Parameters as the model holds them: a tied embedding and LM head count once."""
    return sum(p.numel() for p in model.parameters())


class DecoderStep(torch.nn.Module):
    """Tokens [B, T] from `position` on over a cache of `max_length` rows kept as state: the logits of the last."""

    def __init__(self, model: PreTrainedModel, max_length: int, batch: int = 1):
        super().__init__()
        self.model = model
        c = model.config
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.cache = CacheBuffers(c, c.num_hidden_layers, c.num_key_value_heads, head_dim, max_length, batch,
                                  model.get_input_embeddings().weight.dtype)

    def forward(self, tokens, position):
        # float32 logits: what the decoding programs read, whatever the model's dtype
        logits = self.model(input_ids=tokens, past_key_values=self.cache.cache(position), use_cache=True,
                            logits_to_keep=1).logits.float()
        return logits, logits.argmax(-1)


class FunctionalStep(torch.nn.Module):
    """Tokens [1, T] after every layer's past keys and values [1, kv_heads, P, head_dim] (keys, values, layer by
    layer): the last token's logits [1, 1, V], its greedy id [1, 1] and the caches grown to P + T, in that
    order. The prompt from empty caches (P = 0) and one token a step are the same graph: for exporters without
    state (ONNX, for onnxruntime-web's side of `bench llm`)."""

    def __init__(self, model: PreTrainedModel):
        super().__init__()
        self.model = model

    def forward(self, tokens, past):
        cache = DynamicCache(config=self.model.config)
        for i in range(len(past) // 2):
            cache.update(past[2 * i], past[2 * i + 1], i)
        logits = self.model(input_ids=tokens, past_key_values=cache, use_cache=True, logits_to_keep=1).logits
        return logits, logits.argmax(-1), [t for layer in cache.layers for t in (layer.keys, layer.values)]


def compile_step(model: PreTrainedModel, max_length: int = 256, *, num_beams: int = 1, prefill: bool = True,
                 **options) -> CausalLM:
    """Export and compile the step, the prefill (unless `prefill` is false: the prompt then runs token by token)
    and the decoding programs for `num_beams` (options as for webgpu_torch.compile, for step and prefill);
    `timings["compile"]` in seconds."""
    start = time.perf_counter()
    module, position = DecoderStep(model, max_length, num_beams), torch.tensor([0])
    programs = {}
    with torch.no_grad(), packing.quantizing_once():
        session = webgpu_torch.compile_module(module, (torch.zeros(num_beams, 1, dtype=torch.long), position),
                                              **options)
        if prefill:  # the example's length is the hint kernels are chosen for
            tokens = torch.zeros(num_beams, min(64, max_length), dtype=torch.long)
            programs["prefill"] = webgpu_torch.compile_module(
                module, (tokens, position), dynamic_shapes=({1: Dim("prompt", min=2, max=max_length)}, None),
                **options)
    gen = model.generation_config
    programs |= decoder_programs.compile_programs(module.cache, model.config.vocab_size, num_beams, max_length,
                                                  decoder_programs.eos_count(gen.eos_token_id))
    info = {"max_length": max_length, "vocab_size": model.config.vocab_size, "eos_token_id": gen.eos_token_id,
            "parameters": parameters(model)}
    return CausalLM(session, info, {"compile": time.perf_counter() - start}, programs)


def sample_prompt(model, length: int, seed: int) -> list[int]:
    """Seeded prompt ids after the BOS token (id 1 for a config that names none)."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, model.config.vocab_size, (length,), generator=g).tolist()
    return [1 if model.config.bos_token_id is None else model.config.bos_token_id, *ids]


def reference_generate(model, prompt: list[int], max_new_tokens: int):
    """transformers' own greedy generate (its dynamic cache), and the logits of every step given those ids."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                             output_logits=True, return_dict_in_generate=True, attention_mask=torch.ones(1, len(prompt),
                                                                                                       dtype=torch.long))
    return out.sequences[0, len(prompt):].tolist(), [step[0].numpy() for step in out.logits]


def reference_beams(model, prompt: list[int], max_new_tokens: int, num_beams: int, **settings):
    """transformers' generate(num_beams=…): every beam's sequence after the prompt, best first, and its score."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False,
                             num_beams=num_beams, num_return_sequences=num_beams, output_scores=True,
                             return_dict_in_generate=True, attention_mask=torch.ones(1, len(prompt), dtype=torch.long),
                             **settings)
    return out.sequences[:, len(prompt):].tolist(), out.sequences_scores.tolist()


def run(arch: str = "base", new_tokens: int = 32, prompt_length: int = 8, max_length: int = 256,
        seeds=(0, 1), engine: str | None = None, save: str | None = None, weights: str = "float32",
        quantized: int | None = None, group_size: int = 32, num_beams: int = 1,
        sampling: dict | None = None, *, dtype: str = "float32", precision: str = "float32",
        checkpoint: str | None = None) -> bool:
    """Build, compile, generate and check against transformers; print time to first token, tokens/s, wall and
    GPU ms per token and the memory held. Greedy by default: ids and teacher-forced logits against
    transformers' generate, and the time to first token of the prompt's prefill against feeding it token by
    token. With `num_beams` over 1, a beam search against transformers' generate(num_beams=…) (sequences and
    scores); with `sampling` (decoding settings: temperature, top_k, top_p, min_p, repetition_penalty, seed),
    sampled tokens checked step by step against transformers' logits processors. With `quantized` (4 or 8 bits)
    the model is quantized with torchao first (`quantize`), and transformers runs that same quantized model.
    With `weights` "float16", "int8" or "int4" (int4 in groups of `group_size`) the compiler rounds the float
    model's weights, and transformers runs them rounded the same way (round_weights). A bfloat16 or float16
    model (`dtype`) is computed in float32 from its 16-bit weights, and so is its reference: transformers over
    the same weights widened (LOGIT_BOUND); `precision="float16"` stores activations in half (a looser bound)."""
    import numpy as np

    from ...runtime import timing

    model = build(arch, dtype=dtype, checkpoint=checkpoint)
    model.generation_config.eos_token_id = None  # generate every requested token on both sides
    count = parameters(model)
    if quantized:
        quantize(model, quantized, group_size)
    info = webgpu_torch.device_info(engine)
    max_length = max(max_length, prompt_length + new_tokens + 1)  # the prompt: BOS (where there is one) and ids
    what = f", torchao int{quantized} in groups of {group_size}" if quantized else ""
    strategy = f"beam search ({num_beams} beams)" if num_beams > 1 else "sampling" if sampling else "greedy"
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    print(f"{checkpoint or arch} ({model.config.model_type}): {count / 1e6:.1f} M parameters"
          f"{', tied embeddings' if tied else ''}, {'checkpoint' if checkpoint else 'random seeded'} weights, "
          f"{dtype}, weights={weights}{what}, precision={precision}, a cache of {max_length} tokens, {strategy}")
    print(f"device: {info['adapter']} via {info['engine_module']} ({info['backend']})")
    grouped = weights in ("int8", "int4")
    rounded = grouped or weights == "float16"  # stored rounded: the reference is rounded alike
    options = {"weights": weights, "precision": precision, "max_binding_size": binding_limit(info)}
    lm = compile_step(model, max_length, num_beams=num_beams, **options,
                      **({"group_size": group_size} if grouped else {}))
    program = lm.step.program
    print(f"compile: {lm.timings['compile']:.1f} s: {len(program.dispatches)} dispatches a step, "
          f"{sum(a.nbytes for a in program.constants.values()) / 2**20:.0f} MiB of constants"
          f"{'' if options['max_binding_size'] == DEFAULT_MAX_BINDING else ', bindings up to this device limit'}")
    start = time.perf_counter()
    for session in (lm.step, *lm.programs.values()):
        session.executor(engine)
    print(f"load: {time.perf_counter() - start:.1f} s (pipelines, bind groups, weights)")
    if save:
        lm.save(save)
        print(f"saved to {save}")
    reference = "transformers"
    if rounded:  # the program holds the float weights rounded: transformers runs them rounded alike
        round_weights(model, weights, group_size)
        reference = f"transformers over the same {weights}-rounded weights"
    if dtype != "float32":  # what the program computes: float32 arithmetic over the 16-bit weights
        model = model.float()
        reference += f", in float32 over the {dtype} weights"
    check = _beams if num_beams > 1 else _sampled if sampling else _greedy
    tolerance = LOGIT_BOUND["precision=float16" if precision == "float16" else dtype]
    ok, per_token = True, []
    for seed in seeds:
        prompt = sample_prompt(model, prompt_length, seed)
        passed, summary, ids = check(model, lm, prompt, new_tokens, num_beams=num_beams, settings=sampling or {},
                                     tolerance=tolerance)
        ok &= passed
        steps = lm.timings["steps"]
        per_token.append(float(np.median(steps[1:])))
        print(f"seed {seed}: {summary} ({reference}): {'PASS' if passed else 'FAIL'}")
        by_token = lm.timings.pop("first token, token by token", None)
        baseline = f" (the prompt token by token: {by_token * 1e3:.1f} ms)" if by_token else ""
        print(f"  generate: {len(prompt)} prompt + {len(ids)} new tokens: time to first token "
              f"{steps[0] * 1e3:.1f} ms{baseline}, {len(prompt) / steps[0]:.1f} prompt tokens/s, "
              f"{per_token[-1] * 1e3:.2f} ms per token after it ({1 / per_token[-1]:.1f} tokens/s)")
        host = {k: v for k, v in lm.timings["host"].items() if v}
        print("  host per step (median ms): " + ", ".join(f"{k} {np.median(v) * 1e3:.3f}" for k, v in host.items()))
        print("  host, the prompt's call (ms): " + ", ".join(f"{k} {v[0] * 1e3:.3f}" for k, v in host.items()))
    if save and seeds:  # what js/bench/bench.js needs to generate the same way (tests/corpus.py's form, without logits)
        record = {"prompt_ids": prompt, "max_new_tokens": new_tokens, "ids": ids}
        (Path(save) / "generate.json").write_text(json.dumps(record) + "\n")
    gpu = timing.gpu_time(lm.step.executor(engine), repeats=2, samples=3).seconds
    wall = float(np.median(per_token))
    print(f"decode: wall {wall * 1e3:.2f} ms/token, step GPU {gpu * 1e3:.2f} ms/token: {wall / gpu:.2f}x; "
          f"{1 / wall:.1f} tokens/s")
    if "prefill" in lm.programs and seeds:  # the last prompt's call again: what of its first token the GPU took
        prompt_gpu = timing.gpu_time(lm.programs["prefill"].executor(engine), repeats=2, samples=3).seconds
        print(f"prompt call: GPU {prompt_gpu * 1e3:.2f} ms, timed again after generating (its first token came "
              f"in {steps[0] * 1e3:.2f} ms)")
    held = lm.decoder.device_bytes(engine)
    print("memory: device buffers " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in held.items()) +
          f"; this process's peak resident {resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10:.0f} MiB "
          "(torch and the reference model included)")
    return ok


def binding_limit(info: dict) -> int:
    """The compile option max_binding_size for this device: WebGPU's guaranteed 128 MiB, or the device's own
    larger limit, under which a table over 128 MiB (a 1B model's int4 vocabulary) binds whole rather than in
    row chunks: such a program runs only where a device binds as much."""
    limits = info.get("limits", {})
    device = min(limits.get("max-storage-buffer-binding-size", 0), limits.get("max-buffer-size", 0))
    return max(DEFAULT_MAX_BINDING, device // 16 * 16)


def _greedy(model, lm: CausalLM, prompt: list[int], new_tokens: int, tolerance: float = 1e-3,
            **_) -> tuple[bool, str, list[int]]:
    """Greedy ids and teacher-forced logits against transformers; the time to first token fed token by token."""
    import numpy as np

    want_ids, want_logits = reference_generate(model, prompt, new_tokens)
    logits = lm.generate(prompt, new_tokens, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    by_token = CausalLM(lm.step, lm.info).generate(prompt, new_tokens).first_token  # the same step, no prefill
    ids = lm.generate(prompt, new_tokens).ids
    lm.timings["first token, token by token"] = by_token
    agree = next((i for i, (a, b) in enumerate(zip(ids, want_ids, strict=True)) if a != b), len(ids))
    return (error <= tolerance and agree == len(want_ids),
            f"ids match for {agree}/{len(want_ids)} tokens; teacher-forced logits within {error:.1e} of the scale", ids)


def _beams(model, lm: CausalLM, prompt: list[int], new_tokens: int, num_beams: int, **_):
    from .generation_reference import check_beams

    want, scores = reference_beams(model, prompt, new_tokens, num_beams)
    for _ in range(2):  # the second timed: a CPU adapter compiles shaders at their first dispatch
        got = lm.generate(prompt, new_tokens, num_beams=num_beams, num_return_sequences=num_beams)
    passed, summary = check_beams(got, want, scores, pad=-1)
    return passed, summary, got.ids


def _sampled(model, lm: CausalLM, prompt: list[int], new_tokens: int, settings: dict, **_):
    from ...runtime import decoding
    from . import generation_reference as ref

    o = decoding.options(**settings, do_sample=True, max_new_tokens=new_tokens)
    for _ in range(2):  # the second timed: a CPU adapter compiles shaders at their first dispatch
        ids = lm.generate(prompt, new_tokens, do_sample=True, **settings).ids
    timings = dict(lm.timings)
    ours = lm.generate(prompt, new_tokens, teacher=ids).logits
    lm.timings.update(timings)
    probe = ref.probe(lm.info["vocab_size"], lm.info["max_length"])
    passed, summary = ref.check_sampled(ids, prompt, ref.teacher_logits(model, prompt, ids), ours, o, probe)
    return passed, summary, ids
