"""The GGUF writer of `webgpu-torch bench llm` (tools/bench/_gguf.py), read back by the gguf package's own
reader: every tensor under llama.cpp's name with its shape and values (query and key rows in GGML's pairwise
rope order, Q4_0 within its rounding), and the hyperparameters and vocabulary llama.cpp loads."""

from __future__ import annotations

import gguf
import numpy as np
import pytest

from webgpu_torch.tools.bench import _gguf
from webgpu_torch.tools.models import llama

pytestmark = pytest.mark.host


@pytest.fixture(scope="module")
def model():
    return llama.build("tiny").half().float()


def _read(model, tmp_path, fmt: str):
    reader = gguf.GGUFReader(_gguf.write(model, tmp_path / f"m-{fmt}.gguf", fmt))
    return reader, {t.name: t for t in reader.tensors}


def _expected(model) -> dict[str, np.ndarray]:
    """Each tensor as llama.cpp's convert script writes it, by GGUF name (query and key rows permuted)."""
    c = model.config
    names = gguf.TensorNameMap(gguf.MODEL_ARCH.LLAMA, c.num_hidden_layers)
    out = {}
    for name, p in model.state_dict().items():
        w = p.numpy()
        heads = {"q_proj": c.num_attention_heads, "k_proj": c.num_key_value_heads}.get(name.split(".")[-2])
        out[names.get_name(name, try_suffixes=(".weight",))] = _gguf.permute(w, heads) if heads else w
    return out


@pytest.mark.parametrize("fmt", _gguf.FORMATS)
def test_tensors_read_back(model, tmp_path, fmt):
    _, tensors = _read(model, tmp_path, fmt)
    expected = _expected(model)
    assert set(tensors) == set(expected)
    assert {"token_embd.weight", "output.weight", "output_norm.weight", "blk.1.ffn_down.weight"} <= set(tensors)
    for name, want in expected.items():
        t = tensors[name]
        assert list(t.shape[::-1]) == list(want.shape), name  # GGUF lists dimensions fastest first
        if want.ndim == 1:
            assert t.tensor_type == gguf.GGMLQuantizationType.F32
            np.testing.assert_array_equal(t.data, want)
        elif fmt == "F16":  # the model's values are float16 already: held exactly
            assert t.tensor_type == gguf.GGMLQuantizationType.F16
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
    fields = {name: f.contents() for name, f in reader.fields.items() if not name.startswith("GGUF.")}
    want = {"general.architecture": "llama", "llama.context_length": c.max_position_embeddings,
            "llama.embedding_length": c.hidden_size, "llama.block_count": c.num_hidden_layers,
            "llama.feed_forward_length": c.intermediate_size, "llama.attention.head_count": c.num_attention_heads,
            "llama.attention.head_count_kv": c.num_key_value_heads, "llama.rope.dimension_count": 16,
            "llama.vocab_size": 257, "general.file_type": int(gguf.LlamaFileType.MOSTLY_Q4_0),
            "tokenizer.ggml.model": "llama", "tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2}
    assert {k: fields[k] for k in want} == want
    assert fields["llama.rope.freq_base"] == pytest.approx(10000.0)
    assert fields["llama.attention.layer_norm_rms_epsilon"] == pytest.approx(c.rms_norm_eps)
    tokens = fields["tokenizer.ggml.tokens"]
    assert len(tokens) == len(set(tokens)) == len(fields["tokenizer.ggml.token_type"]) == 257
    assert tokens[:3] == ["<unk>", "<s>", "</s>"] and tokens[3 + 0x0A] == "<0x0A>"  # the newline llama.cpp looks up


def test_refuses_what_the_llama_graph_lacks():
    assert "llama3" in _gguf.refusal(llama.config("llama-3.2-tiny"))
    assert "qwen2" in _gguf.refusal(llama.config("qwen2.5-tiny"))
    assert _gguf.refusal(llama.config("tiny")) is None
