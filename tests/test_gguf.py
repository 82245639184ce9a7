"""The GGUF writer of `webgpu-torch bench llm` (tools/bench/_gguf.py), read back by the gguf package's own
reader, for Llama, Llama 3.2's (llama3 rope scaling, tied embeddings) and Qwen2.5's (query, key and value biases,
tied) tiny twins: every tensor under llama.cpp's name with its shape and values (llama's query and key rows in
GGML's pairwise rope order, qwen2's as transformers', Q4_0 within its rounding; rope_freqs as transformers' own
llama3 frequencies imply), and the hyperparameters and vocabulary llama.cpp loads."""

from __future__ import annotations

import gguf
import numpy as np
import pytest
import torch
from transformers.modeling_rope_utils import ROPE_INIT_FUNCTIONS
from transformers.models.llama.modeling_llama import LlamaRotaryEmbedding

from webgpu_torch.tools.bench import _gguf
from webgpu_torch.tools.models import llama

pytestmark = pytest.mark.host


ARCHS = ("tiny", "llama-3.2-tiny", "qwen2.5-tiny")


@pytest.fixture(scope="module", params=ARCHS)
def model(request):
    return llama.build(request.param).half().float()


def _read(model, tmp_path, fmt: str):
    reader = gguf.GGUFReader(_gguf.write(model, tmp_path / f"m-{fmt}.gguf", fmt))
    return reader, {t.name: t for t in reader.tensors}


def _expected(model) -> dict[str, np.ndarray]:
    """Each tensor as llama.cpp's convert script writes it, by GGUF name: llama's query and key rows permuted,
    rope_freqs for llama3 rope, no output where the LM head is the token embedding."""
    c = model.config
    arch = {"llama": gguf.MODEL_ARCH.LLAMA, "qwen2": gguf.MODEL_ARCH.QWEN2}[c.model_type]
    names = gguf.TensorNameMap(arch, c.num_hidden_layers)
    out = {}
    for name, p in model.state_dict().items():
        if name == "lm_head.weight" and c.tie_word_embeddings:
            continue
        w = p.numpy()
        heads = {"q_proj": c.num_attention_heads, "k_proj": c.num_key_value_heads}.get(name.split(".")[-2])
        if c.model_type == "llama" and heads:
            w = _gguf.permute(w, heads)
        out[names.get_name(name, try_suffixes=(".weight", ".bias"))] = w
    if c.rope_parameters["rope_type"] == "llama3":
        out["rope_freqs.weight"] = _gguf.rope_freqs(c)
    return out


@pytest.mark.parametrize("fmt", _gguf.FORMATS)
def test_tensors_read_back(model, tmp_path, fmt):
    _, tensors = _read(model, tmp_path, fmt)
    expected = _expected(model)
    assert set(tensors) == set(expected)
    c = model.config
    assert {"token_embd.weight", "output_norm.weight", "blk.1.ffn_down.weight"} <= set(tensors)
    assert ("output.weight" in tensors) != c.tie_word_embeddings  # llama.cpp's output is token_embd when absent
    assert ("rope_freqs.weight" in tensors) == (c.rope_parameters["rope_type"] == "llama3")
    assert ("blk.1.attn_v.bias" in tensors) == (c.model_type == "qwen2")
    for name, want in expected.items():
        t = tensors[name]
        assert list(t.shape[::-1]) == list(want.shape), name  # GGUF lists dimensions fastest first
        if want.ndim == 1:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32
            np.testing.assert_array_equal(t.data, want)
        elif fmt in ("F16", "F32"):  # the model's values are float16 already: held exactly by either
            assert t.tensor_type == gguf.GGMLQuantizationType[fmt]
            np.testing.assert_array_equal(t.data.astype(np.float32), want)
        else:  # Q4_0: blocks of 32 along a row, steps of (largest magnitude / 8) from -8 to 7 of them: within
            # half a step, but for the magnitude opposite the largest, clipped at 7, a step
            assert t.tensor_type == gguf.GGMLQuantizationType.Q4_0
            got = gguf.quants.dequantize(t.data, t.tensor_type).reshape(want.shape)
            blocks = np.abs(want).reshape(-1, 32).max(axis=1, keepdims=True)
            assert (np.abs(got - want).reshape(-1, 32) <= blocks / 8 * 1.01).all(), name


def test_permute_pairs_rotate_half_for_ggml():
    """transformers' rope rotates row i with row i + d/2 of a head; GGML's NORM rope, rows 2i and 2i + 1."""
    heads, d = 3, 8
    w = np.arange(heads * d, dtype=np.float32)[:, None] * np.ones((1, 5), np.float32)
    p = _gguf.permute(w, heads)
    for h in range(heads):
        for i in range(d // 2):
            assert p[h * d + 2 * i, 0] == w[h * d + i, 0] and p[h * d + 2 * i + 1, 0] == w[h * d + i + d // 2, 0]


def test_metadata_read_back(model, tmp_path):
    reader, _ = _read(model, tmp_path, "Q4_0")
    c = model.config
    a = c.model_type  # the GGUF architecture, and its keys' prefix
    fields = {name: f.contents() for name, f in reader.fields.items() if not name.startswith("GGUF.")}
    want = {"general.architecture": a, f"{a}.context_length": c.max_position_embeddings,
            f"{a}.embedding_length": c.hidden_size, f"{a}.block_count": c.num_hidden_layers,
            f"{a}.feed_forward_length": c.intermediate_size, f"{a}.attention.head_count": c.num_attention_heads,
            f"{a}.attention.head_count_kv": c.num_key_value_heads, f"{a}.rope.dimension_count": 16,
            f"{a}.vocab_size": 257, "general.file_type": int(gguf.LlamaFileType.MOSTLY_Q4_0),
            "tokenizer.ggml.model": "llama", "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2}
    assert {k: fields[k] for k in want} == want
    assert fields[f"{a}.rope.freq_base"] == pytest.approx(c.rope_parameters["rope_theta"])  # 1e4, 5e5 or 1e6
    assert fields[f"{a}.attention.layer_norm_rms_epsilon"] == pytest.approx(c.rms_norm_eps)
    tokens = fields["tokenizer.ggml.tokens"]
    assert len(tokens) == len(set(tokens)) == len(fields["tokenizer.ggml.token_type"]) == 257
    assert tokens[:3] == ["<unk>", "<s>", "</s>"] and tokens[3 + 0x0A] == "<0x0A>"  # the newline llama.cpp looks up


@pytest.mark.parametrize("arch", ["llama-3.2-tiny", "llama-3.2-1b", "llama-3.2-3b"])
def test_rope_freqs_divide_transformers_llama3_frequencies(arch):
    """llama.cpp's theta_i = position * base^(-2i/d) / rope_freqs[i]: transformers' default inverse frequencies
    over its llama3 ones, each of the three bands (kept: 1, blended, divided by `factor`) present."""
    c = llama.config(arch)
    scaled, _ = ROPE_INIT_FUNCTIONS["llama3"](c, torch.device("cpu"))
    unscaled, _ = LlamaRotaryEmbedding.compute_default_rope_parameters(c)  # base^(-2i/d), theta unscaled
    got = _gguf.rope_freqs(c)
    assert got.dtype == np.float32 and got.shape == (c.head_dim // 2,)
    np.testing.assert_allclose(got, (unscaled / scaled).numpy(), rtol=1e-6)
    factor = c.rope_parameters["factor"]
    assert got[0] == 1 and got[-1] == factor and ((got > 1) & (got < factor)).any()
    assert _gguf.rope_freqs(llama.config("qwen2.5-tiny")) is None


def _with(arch: str, **fields):
    c = llama.config(arch)
    for k, v in fields.items():
        setattr(c, k, v)
    return c


def test_refuses_what_llama_cpps_graphs_lack():
    assert all(_gguf.refusal(llama.config(a)) is None for a in (*ARCHS, "llama-3.2-1b", "qwen2.5-0.5b"))
    assert "mistral" in _gguf.refusal(_with("tiny", model_type="mistral"))
    assert "yarn" in _gguf.refusal(_with("tiny", rope_parameters={"rope_type": "yarn", "rope_theta": 1e4}))
    llama3 = llama.config("llama-3.2-tiny").rope_parameters
    assert "llama3" in _gguf.refusal(_with("qwen2.5-tiny", rope_parameters=llama3))  # qwen2 reads no rope_freqs
    assert "biases" in _gguf.refusal(_with("tiny", attention_bias=True))
    assert "sliding" in _gguf.refusal(_with("qwen2.5-tiny", use_sliding_window=True))
