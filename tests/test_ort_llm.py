"""onnxruntime-web's side of `webgpu-torch bench llm --ort` (tools/bench/_ort.py's export_llm), checked on the
host by onnxruntime's CPU session: the exported functional step evaluates a prompt from empty caches and then
one token a call, the grown caches fed back, and computes transformers' logits and greedy ids over the same
float16-rounded weights; MatMulNBits q4 replaces every Linear of that graph (the LM head too)."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
import pytest

from webgpu_torch.tools.bench import _ort
from webgpu_torch.tools.models import llama

pytestmark = pytest.mark.host


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    model = llama.build("tiny").half().float()  # as bench llm holds it
    model.generation_config.eos_token_id = None
    path = tmp_path_factory.mktemp("ort") / "tiny.onnx"
    return model, path, _ort.export_llm(model, path, 64)


def test_step_computes_transformers_logits(exported):
    model, path, info = exported
    prompt = llama.sample_prompt(model, 8, seed=0)
    want_ids, want_logits = llama.reference_generate(model, prompt, 8)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == info["inputs"]
    tokens, *past_names = info["inputs"]
    kv_heads, head_dim = info["cache"]
    past = [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * len(past_names)  # empty caches
    ids, step = [], prompt
    for want in want_logits:  # the prompt in one call, then one call a token
        logits, token, *past = session.run(None, {tokens: np.array([step]), **dict(zip(past_names, past, strict=True))})
        assert logits.shape == (1, 1, model.config.vocab_size)
        np.testing.assert_allclose(logits[0, 0], want, atol=1e-4 * np.abs(want).max())
        ids.append(int(token[0, 0]))
        step = [ids[-1]]
    assert ids == want_ids
    assert past[0].shape[2] == len(prompt) + len(want_ids) - 1  # the last token's keys and values appended


def test_q4_replaces_every_linear(exported, tmp_path):
    model, path, _ = exported
    _ort.quantize_matmuls(path, tmp_path / "q4.onnx", bits=4, block_size=32)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "q4.onnx")).graph.node]
    linears = 7 * model.config.num_hidden_layers + 1  # q, k, v, o, gate, up, down a layer; the LM head
    assert ops.count("MatMulNBits") == linears
    assert "IsNaN" not in ops  # eager attention: nothing ORT's WebGPU EP would leave to the CPU
