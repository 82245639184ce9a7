"""onnxruntime-web's side of `webgpu-torch bench llm --ort` (tools/bench/_ort.py's export_llm), checked on the
host by onnxruntime's CPU session: the exported functional step evaluates a prompt from empty caches and then
one token a call, the grown caches fed back, and computes transformers' logits and greedy ids over the same
float16-rounded weights; MatMulNBits q4 replaces every Linear of that graph (the LM head too, tied to the
embedding table or not)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import onnxruntime
import pytest

from webgpu_torch.tools.bench import _ort
from webgpu_torch.tools.models import llama

pytestmark = pytest.mark.host


@pytest.fixture(scope="module", params=["tiny", "llama-3.2-tiny"])  # the second's LM head is its embedding table
def exported(request, tmp_path_factory):
    model = llama.build(request.param).half().float()  # as bench llm holds it
    model.generation_config.eos_token_id = None
    tied = model.get_output_embeddings().weight is model.get_input_embeddings().weight
    path = tmp_path_factory.mktemp("ort") / "model.onnx"
    info = _ort.export_llm(model, path, 64)
    assert tied == (model.get_output_embeddings().weight is model.get_input_embeddings().weight)  # as it was
    return model, path, info


def _empty_caches(info: dict) -> list[np.ndarray]:
    """The exported step's past keys and values before a prompt: one [1, kv heads, 0, head_dim] per input."""
    kv_heads, head_dim = info["cache"]
    return [np.zeros((1, kv_heads, 0, head_dim), np.float32)] * (len(info["inputs"]) - 1)


def test_step_computes_transformers_logits(exported):
    model, path, info = exported
    prompt = llama.sample_prompt(model, 8, seed=0)
    want_ids, want_logits = llama.reference_generate(model, prompt, 8)
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    assert [i.name for i in session.get_inputs()] == info["inputs"]
    tokens, *past_names = info["inputs"]
    past = _empty_caches(info)
    ids, step = [], prompt
    for want in want_logits:  # the prompt in one call, then one call a token
        logits, token, *past = session.run(None, {tokens: np.array([step]), **dict(zip(past_names, past, strict=True))})
        assert logits.shape == (1, 1, model.config.vocab_size)
        np.testing.assert_allclose(logits[0, 0], want, atol=1e-4 * np.abs(want).max())
        ids.append(int(token[0, 0]))
        step = [ids[-1]]
    assert ids == want_ids
    assert past[0].shape[2] == len(prompt) + len(want_ids) - 1  # the last token's keys and values appended


def test_q4_replaces_every_linear_and_the_embedding_table(exported, tmp_path):
    """bench llm's q4 (llm.Q4_OPS: every Linear as MatMulNBits, the embedding table as GatherBlockQuantized, 4
    bits in blocks of 32), run by onnxruntime: the prompt's logits near the float model's."""
    from webgpu_torch.tools.bench import llm as bench_llm

    model, path, info = exported
    _ort.quantize_weights(path, tmp_path / "q4.onnx", bits=4, block_size=32, ops=bench_llm.Q4_OPS)
    ops = [n.op_type for n in onnx.load(str(tmp_path / "q4.onnx")).graph.node]
    linears = 7 * model.config.num_hidden_layers + 1  # q, k, v, o, gate, up, down a layer; the LM head
    assert ops.count("MatMulNBits") == linears and ops.count("GatherBlockQuantized") == 1 and "Gather" not in ops
    assert "IsNaN" not in ops  # eager attention: nothing ORT's WebGPU EP would leave to the CPU
    prompt = llama.sample_prompt(model, 8, seed=0)
    session = onnxruntime.InferenceSession(str(tmp_path / "q4.onnx"), providers=["CPUExecutionProvider"])
    tokens, *past_names = info["inputs"]
    feeds = {tokens: np.array([prompt]), **dict(zip(past_names, _empty_caches(info), strict=True))}
    logits, *_ = session.run(None, feeds)
    want = llama.reference_generate(model, prompt, 1)[1][0]  # the float model's logits
    # 4-bit weights of a width-64 model move its logits by about a fifth of their norm: a correlation of 0.97-0.99
    # (MatMuls alone or with the table, its blocks along either axis), where the logits of another prompt's
    # last token correlate 0.35 with these
    assert np.corrcoef(logits[0, 0], want)[0, 1] > 0.9


def test_bench_llm_exports_once_for_an_arch_and_length(monkeypatch, tmp_path):
    """bench llm --ort reuses the exports a run (or --prepare-only, on another call) left in its folder, and
    makes them again for another length."""
    import argparse

    from webgpu_torch.tools.bench import llm

    made = []

    def export_llm(model, path, max_length):
        made.append(("export", max_length))
        path.write_bytes(b"onnx")
        return {"cache": [1, 2], "inputs": ["t"], "outputs": ["l"]}

    def quantize_weights(path, out, bits, block_size, ops):
        made.append(("q4", bits, block_size, ops))
        out.write_bytes(b"q4")

    monkeypatch.setattr(_ort, "export_llm", export_llm)
    monkeypatch.setattr(_ort, "quantize_weights", quantize_weights)
    args = argparse.Namespace(arch="tiny", folder=str(tmp_path), new_tokens=4, formats=["F16", "Q4_0"])
    first = llm._onnx(None, [1, 2, 3], args)
    assert llm._onnx(None, [1, 2, 3], args) == first == {"max_length": 8, "cache": [1, 2], "inputs": ["t"],
                                                          "outputs": ["l"], "q4_ops": ["MatMul", "Gather"],
                                                          "path": tmp_path / "tiny.onnx",
                                                          "q4": tmp_path / "tiny-q4.onnx"}
    q4 = ("q4", 4, 32, ("MatMul", "Gather"))
    assert made == [("export", 8), q4]
    llm._onnx(None, [1, 2, 3, 4], args)  # one more prompt id: a longer graph
    assert made[2:] == [("export", 9), q4]
    record = json.loads((tmp_path / "tiny.onnx.json").read_text())
    (tmp_path / "tiny.onnx.json").write_text(json.dumps(record | {"q4_ops": ["MatMul"]}))  # an older q4
    llm._onnx(None, [1, 2, 3, 4], args)
    assert made[4:] == [q4]
