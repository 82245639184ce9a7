"""A transformers Llama model's weights as GGUF (the `gguf` package's writer), for llama.cpp as a baseline.

What llama.cpp's own convert_hf_to_gguf.py writes for LlamaForCausalLM, over the same weights: GGUF's tensor
names (gguf.TensorNameMap), the `llama.*` hyperparameters, and query and key rows permuted from transformers'
rotate-half rope layout to GGML's pairwise one (`permute`). 1-D tensors (the norms) stay float32; matrices are
F16 or Q4_0 (gguf.quants: blocks of 32 along a row, one float16 scale each). The vocabulary is placeholders of
the model's size (SentencePiece "llama": <unk> 0, <s> 1, </s> 2): the bench feeds and reads token ids only.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FORMATS = ("F16", "Q4_0")


def permute(w: np.ndarray, heads: int) -> np.ndarray:
    """Rows of `heads` heads from [half 0 | half 1] (transformers' rotate_half pairs i with i + d/2) to
    interleaved (GGML's NORM rope pairs 2i with 2i + 1): convert_hf_to_gguf.py's LlamaModel.permute."""
    return w.reshape(heads, 2, w.shape[0] // heads // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def refusal(config) -> str | None:
    """Why `config` cannot be written as a llama GGUF here, or None."""
    if config.model_type != "llama":
        return f"model_type {config.model_type!r}: only Llama's (GGUF architecture 'llama') is written"
    rope = getattr(config, "rope_parameters", None) or {}
    if rope.get("rope_type", "default") != "default":
        return f"rope_type {rope['rope_type']!r}: only default rope (no rope_freqs tensor) is written"
    if getattr(config, "attention_bias", False) or getattr(config, "mlp_bias", False):
        return "Linear biases: llama.cpp's llama graph has none"
    return None


def write(model, path: str | Path, fmt: str = "F16") -> Path:
    """`model` (a transformers LlamaForCausalLM) as GGUF at `path`, its matrices in `fmt` (FORMATS)."""
    import gguf

    if fmt not in FORMATS:
        raise ValueError(f"GGUF format {fmt!r}: choose one of {', '.join(FORMATS)}")
    c = model.config
    if why := refusal(c):
        raise ValueError(why)
    head_dim = getattr(c, "head_dim", None) or c.hidden_size // c.num_attention_heads
    rope = getattr(c, "rope_parameters", None) or {}
    w = gguf.GGUFWriter(str(path), gguf.MODEL_ARCH_NAMES[gguf.MODEL_ARCH.LLAMA])
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
    w.add_rope_freq_base(float(rope.get("rope_theta", getattr(c, "rope_theta", 10000.0))))
    w.add_layer_norm_rms_eps(c.rms_norm_eps)
    w.add_vocab_size(c.vocab_size)
    w.add_file_type(gguf.LlamaFileType.MOSTLY_F16 if fmt == "F16" else gguf.LlamaFileType.MOSTLY_Q4_0)
    _vocabulary(w, c.vocab_size)
    names = gguf.TensorNameMap(gguf.MODEL_ARCH.LLAMA, c.num_hidden_layers)
    qtype = gguf.GGMLQuantizationType[fmt]
    tied = model.lm_head.weight is model.get_input_embeddings().weight
    for name, p in model.state_dict().items():
        if tied and name == "lm_head.weight":  # llama.cpp reads token_embd as the output when output is absent
            continue
        array = p.detach().float().numpy()
        if name.endswith("self_attn.q_proj.weight"):
            array = permute(array, c.num_attention_heads)
        elif name.endswith("self_attn.k_proj.weight"):
            array = permute(array, c.num_key_value_heads)
        target = names.get_name(name, try_suffixes=(".weight",))
        if target is None:
            raise ValueError(f"{name}: no GGUF tensor name for it in the llama architecture")
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
