"""A Llama-architecture causal LM (transformers' LlamaForCausalLM, random seeded weights) compiled as one decoder
step over a static KV cache kept as the program's state (generation.CausalLM).

    step   token [1, 1], position [1]  -> logits [1, 1, V], next token [1, 1]
           state: every layer's keys and values, [1, kv_heads, max_length, head_dim], row `position` written
           in place each step

The step runs transformers' own LlamaForCausalLM over a StaticCache of the step's buffers (static_cache.py):
its causal mask over the cache becomes a key limit and repeat_kv grouped heads (cache_attention.py), so a
step reads the live prefix of the cache once per KV head. `compile(..., weights="int8" | "int4")` options
apply as to any program.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import torch
from transformers import LlamaConfig, LlamaForCausalLM

import webgpu_torch

from ...runtime.generation import CausalLM
from .rounded_weights import round_weights
from .static_cache import CacheBuffers
from .torchao_weights import quantize_weights

SIZES = {
    # 124.7 M parameters: 12 layers of width 768 (12 query heads, 4 key/value heads), a SwiGLU MLP of 2048,
    # a 32,000-token vocabulary with an untied LM head (Llama-2's vocabulary; sizes between GPT-2 small's and
    # SmolLM's).
    "base": {"vocab_size": 32000, "hidden_size": 768, "intermediate_size": 2048, "num_hidden_layers": 12,
             "num_attention_heads": 12, "num_key_value_heads": 4},
    "tiny": {"vocab_size": 257, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
             "num_attention_heads": 4, "num_key_value_heads": 2},
}


def config(size: str) -> LlamaConfig:
    if size not in SIZES:
        raise ValueError(f"size {size!r}: choose {' or '.join(map(repr, SIZES))}")
    c = LlamaConfig(**SIZES[size], max_position_embeddings=4096, tie_word_embeddings=False)
    c._attn_implementation = "sdpa"
    return c


def build(size: str, seed: int = 0, init_std: float = 0.05) -> LlamaForCausalLM:
    """Seeded random weights, a little larger than transformers' 0.02 so that greedy decoding does not settle
    into repeating one token at once (a comparison of such ids would compare little)."""
    c = config(size)
    c.initializer_range = init_std
    torch.manual_seed(seed)
    return LlamaForCausalLM(c).eval()


def quantize(model, bits: int = 4, group_size: int = 32) -> None:
    """torchao's weight-only quantization, in place, of every Linear (the LM head too) and the token embedding:
    the compiled step keeps them packed."""
    quantize_weights([(model, None), (model, lambda m, _: isinstance(m, torch.nn.Embedding))], bits, group_size)


def parameters(model) -> int:
    return sum(p.numel() for p in model.parameters())


class DecoderStep(torch.nn.Module):
    """One token at `position` over a cache of `max_length` rows kept as state."""

    def __init__(self, model: LlamaForCausalLM, max_length: int):
        super().__init__()
        self.model = model
        c = model.config
        head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
        self.cache = CacheBuffers(c, c.num_hidden_layers, c.num_key_value_heads, head_dim, max_length)

    def forward(self, token, position):
        logits = self.model(input_ids=token, past_key_values=self.cache.cache(position), use_cache=True).logits
        return logits, logits[:, -1:].argmax(-1)


def compile_step(model: LlamaForCausalLM, max_length: int = 256, **options) -> CausalLM:
    """Export and compile the step (options as for webgpu_torch.compile); `timings["compile"]` in seconds."""
    start = time.perf_counter()
    with torch.no_grad():
        session = webgpu_torch.compile_module(DecoderStep(model, max_length), (torch.tensor([[1]]), torch.tensor([0])),
                                              **options)
    gen = model.generation_config
    info = {"max_length": max_length, "vocab_size": model.config.vocab_size, "eos_token_id": gen.eos_token_id,
            "parameters": parameters(model)}
    return CausalLM(session, info, {"compile": time.perf_counter() - start})


def sample_prompt(model, length: int, seed: int) -> list[int]:
    """Seeded prompt ids after the BOS token."""
    g = torch.Generator().manual_seed(seed)
    ids = torch.randint(3, model.config.vocab_size, (length,), generator=g).tolist()
    return [model.config.bos_token_id, *ids]


def reference_generate(model, prompt: list[int], max_new_tokens: int):
    """transformers' own greedy generate (its dynamic cache), and the logits of every step given those ids."""
    with torch.no_grad():
        out = model.generate(torch.tensor([prompt]), max_new_tokens=max_new_tokens, do_sample=False, num_beams=1,
                             output_logits=True, return_dict_in_generate=True, attention_mask=torch.ones(1, len(prompt),
                                                                                                       dtype=torch.long))
    return out.sequences[0, len(prompt):].tolist(), [step[0].numpy() for step in out.logits]


def run(size: str = "base", new_tokens: int = 32, prompt_length: int = 8, max_length: int = 256,
        seeds=(0, 1), engine: str | None = None, save: str | None = None, weights: str = "float32",
        quantized: int | None = None, group_size: int = 32) -> bool:
    """Build, compile, generate and check against transformers; print tokens/s, wall and GPU ms per token.
    With `quantized` (4 or 8 bits) the model is quantized with torchao first (`quantize`), and transformers
    runs that same quantized model. With `weights` "int8" or "int4" (in groups of `group_size`) the compiler
    rounds the float model's weights, and transformers runs them rounded the same way (round_weights)."""
    import numpy as np

    from ...runtime import timing

    model = build(size)
    model.generation_config.eos_token_id = None  # generate every requested token on both sides
    count = parameters(model)
    if quantized:
        quantize(model, quantized, group_size)
    info = webgpu_torch.device_info(engine)
    what = f", torchao int{quantized} in groups of {group_size}" if quantized else ""
    print(f"Llama-{size}: {count / 1e6:.1f} M parameters, random seeded weights, weights={weights}{what}, "
          f"a cache of {max_length} tokens")
    print(f"device: {info['adapter']} via {info['engine_module']} ({info['backend']})")
    rounded = weights in ("int8", "int4")
    lm = compile_step(model, max_length, weights=weights, **({"group_size": group_size} if rounded else {}))
    program = lm.step.program
    weight_bytes = sum(a.nbytes for a in program.constants.values())
    print(f"compile: {lm.timings['compile']:.1f} s: {len(program.dispatches)} dispatches a step, "
          f"{weight_bytes / 2**20:.0f} MiB of constants")
    start = time.perf_counter()
    lm.step.executor(engine)
    print(f"load: {time.perf_counter() - start:.1f} s (pipelines, bind groups, weights)")
    if save:
        lm.save(save)
        print(f"saved to {save}")
    reference = "transformers"
    if rounded:  # the program holds the float weights rounded: transformers runs them rounded alike
        round_weights(model, weights, group_size)
        reference = f"transformers over the same {weights}-rounded weights"
    ok, per_token = True, []
    for seed in seeds:
        prompt = sample_prompt(model, prompt_length, seed)
        start = time.perf_counter()
        want_ids, want_logits = reference_generate(model, prompt, new_tokens)
        eager = time.perf_counter() - start
        _, logits = lm.generate(prompt, new_tokens, teacher=want_ids)
        error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
        start = time.perf_counter()
        ids, _ = lm.generate(prompt, new_tokens)
        total = time.perf_counter() - start
        agree = next((i for i, (a, b) in enumerate(zip(ids, want_ids, strict=True)) if a != b), len(ids))
        passed = error <= 1e-3 and agree == len(want_ids)
        ok &= passed
        steps, host = lm.timings["steps"], lm.timings["host"]
        per_token.append(float(np.median(steps[1:])))
        print(f"seed {seed}: ids match {reference} for {agree}/{len(want_ids)} tokens; teacher-forced logits "
              f"within {error:.1e} of the scale: {'PASS' if passed else 'FAIL'}")
        print(f"  generate: {len(prompt)} prompt + {len(ids)} new tokens in {total * 1e3:.0f} ms, "
              f"{per_token[-1] * 1e3:.2f} ms per new token after the first ({1 / per_token[-1]:.1f} tokens/s); "
              f"transformers eager on CPU {eager * 1e3:.0f} ms")
        print("  host per step (median ms): " + ", ".join(f"{k} {np.median(v) * 1e3:.3f}" for k, v in host.items()))
    if save and seeds:  # what js/bench/bench.js needs to generate the same way (tests/corpus.py's form, without logits)
        record = {"prompt_ids": prompt, "max_new_tokens": new_tokens, "ids": ids}
        (Path(save) / "generate.json").write_text(json.dumps(record) + "\n")
    gpu = timing.gpu_time(lm.step.executor(engine), repeats=2, samples=3).seconds
    wall = float(np.median(per_token))
    print(f"decode: wall {wall * 1e3:.2f} ms/token, step GPU {gpu * 1e3:.2f} ms/token: {wall / gpu:.2f}x; "
          f"{1 / wall:.1f} tokens/s")
    return ok
