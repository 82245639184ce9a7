"""A transformers causal LM's weights as GGUF (the `gguf` package's writer), for llama.cpp as a baseline.

What llama.cpp's own convert_hf_to_gguf.py writes for LlamaForCausalLM and Qwen2ForCausalLM, over the same
weights: GGUF's tensor names (gguf.TensorNameMap) under the architecture `llama` or `qwen2`, its hyperparameters
(`llama.*` or `qwen2.*`), and for `llama` query and key rows permuted from transformers' rotate-half rope layout
to GGML's pairwise one (`permute`; llama.cpp ropes qwen2 in NEOX mode, rotate-half's own pairing, unpermuted).
Llama 3's rope scaling is the `rope_freqs` tensor of per-frequency divisors (`rope_freqs`); Qwen2's query, key
and value biases are `blk.N.attn_{q,k,v}.bias`; a tied LM head is left out (llama.cpp's output is then
token_embd). 1-D tensors (norms, biases, rope_freqs) stay float32; matrices are F16, Q4_0 (gguf.quants: blocks
of 32 along a row, one float16 scale each) or F32 (llama.cpp's float32 arithmetic then: a parity check). The
vocabulary is placeholders of the model's size (SentencePiece "llama": <unk> 0, <s> 1, </s> 2): the bench feeds
and reads token ids only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FORMATS = ("F16", "Q4_0", "F32")
# transformers model_type -> whether its query and key rows are permuted: the GGUF architecture of the same
# name ropes pairs (2i, 2i + 1) (llama.cpp's NORM rope: llama) or (i, i + d/2) (NEOX: qwen2, as transformers)
ARCHS = {"llama": True, "qwen2": False}


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of `heads` heads from [half 0 | half 1] (transformers' rotate_half pairs i with i + d/2) to
    interleaved (GGML's NORM rope pairs 2i with 2i + 1): convert_hf_to_gguf.py's LlamaModel.permute."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def rope_freqs(config) -> np.ndarray | None:
    """Llama 3's rope scaling as llama.cpp's `rope_freqs` (float32, head_dim / 2), or None for default rope.

    llama.cpp divides frequency i, base^(-2i/d), by rope_freqs[i]: here the unscaled frequency over the scaled one
    of transformers' "llama3" rule. Wavelengths (2 pi / frequency) under original_max_position_embeddings /
    high_freq_factor keep theirs (1), those over ... / low_freq_factor are divided by `factor`, and those between
    blend 1/factor and 1 by smooth = (original / wavelength - low) / (high - low)."""
    rope = config.rope_parameters
    if rope["rope_type"] != "llama3":
        return None
    d = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    freqs = 1.0 / rope["rope_theta"] ** (np.arange(0, d, 2, dtype=np.float32) / d)
    factor, low, high = rope["factor"], rope["low_freq_factor"], rope["high_freq_factor"]
    original = rope["original_max_position_embeddings"]
    smooth = np.clip((original * freqs / (2 * np.pi) - low) / (high - low), 0.0, 1.0)  # 0 long, 1 short
    return (1.0 / ((1.0 - smooth) / factor + smooth)).astype(np.float32)


def refusal(config) -> str | None:
    """Why `config` cannot be written as GGUF for llama.cpp here, or None."""
    if config.model_type not in ARCHS:
        return f"model_type {config.model_type!r}: only {', '.join(ARCHS)} (GGUF architectures of those names)"
    rope = config.rope_parameters["rope_type"]
    if rope not in ("default", "llama3") or (rope == "llama3" and config.model_type != "llama"):
        return f"rope_type {rope!r} with {config.model_type!r}: only default rope, and llama3's for llama"
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return "Linear biases in a llama model: its permuted query and key biases are not written"
    if getattr(config, "use_sliding_window", False):
        return "sliding-window attention: llama.cpp's qwen2 graph attends to every position"
    return None


def write(model, path: str | Path, fmt: str = "F16") -> Path:
    """`model` (a transformers LlamaForCausalLM or Qwen2ForCausalLM) as GGUF at `path`, its matrices in `fmt`
    (FORMATS)."""
    import gguf

    if fmt not in FORMATS:
        raise ValueError(f"GGUF format {fmt!r}: choose one of {', '.join(FORMATS)}")
    c = model.config
    if why := refusal(c):
        raise ValueError(why)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    arch = next(a for a, name in gguf.MODEL_ARCH_NAMES.items() if name == c.model_type)
    w = gguf.GGUFWriter(str(path), c.model_type)
    w.add_name("webgpu-torch bench llm")
    w.add_context_length(c.max_position_embeddings)
    w.add_embedding_length(c.hidden_size)
    w.add_block_count(c.num_hidden_layers)
    w.add_feed_forward_length(c.intermediate_size)
    w.add_head_count(c.num_attention_heads)
    w.add_head_count_kv(c.num_key_value_heads)
    w.add_rope_dimension_count(head_dim)
    w.add_key_length(head_dim)
    w.add_value_length(head_dim)
    w.add_rope_freq_base(float(c.rope_parameters["rope_theta"]))
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(c.vocab_size)
    w.add_file_type({"F16": gguf.LlamaFileType.MOSTLY_F16, "Q4_0": gguf.LlamaFileType.MOSTLY_Q4_0,
                     "F32": gguf.LlamaFileType.ALL_F32}[fmt])
    _vocabulary(w, c.vocab_size)
    if (factors := rope_freqs(c)) is not None:  # one tensor, read by every layer
        w.add_tensor(gguf.TENSOR_NAMES[gguf.MODEL_TENSOR.ROPE_FREQS] + ".weight", factors)
    names = gguf.TensorNameMap(arch, c.num_hidden_layers)
    qtype = gguf.GGMLQuantizationType[fmt]
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    pairwise = ARCHS[c.model_type]  # GGML's NORM rope: query and key rows permuted
    for name, p in model.state_dict().items():
        if tied and name == "lm_head.weight":  # llama.cpp reads token_embd as the output when output is absent
            continue
        array = p.detach().float().numpy()
        if pairwise and name.endswith("self_attn.q_proj.weight"):
            array = permute(array, c.num_attention_heads)
        elif pairwise and name.endswith("self_attn.k_proj.weight"):
            array = permute(array, c.num_key_value_heads)
        target = names.get_name(name, try_suffixes=(".weight", ".bias"))
        if target is None:
            raise ValueError(f"{name}: no GGUF tensor name for it in the {c.model_type} architecture")
        if array.ndim == 1:
            w.add_tensor(target, array)
        else:
            w.add_tensor(target, gguf.quants.quantize(array, qtype), raw_dtype=qtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return Path(path)


def _vocabulary(w, size: int) -> None:
    import gguf

    # SentencePiece's byte tokens next (llama.cpp looks <0x0A> up, its newline, while it loads), then names
    tokens = ["<unk>", "<s>", "</s>"]
    kinds = [gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL, gguf.TokenType.CONTROL]
    nbytes = min(256, size - len(tokens))
    tokens += [f"<0x{b:02X}>" for b in range(nbytes)]
    kinds += [gguf.TokenType.BYTE] * nbytes
    tokens += [f"<t{i}>" for i in range(len(tokens), size)]
    kinds += [gguf.TokenType.NORMAL] * (size - len(kinds))
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    w.add_token_scores([0.0] * size)
    w.add_token_types(kinds)
    w.add_unk_token_id(0)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_add_bos_token(False)
