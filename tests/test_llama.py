"""A Llama-architecture causal LM (models/llama.py) at a reduced size: its decoder step compiled over a static
KV cache kept as state, greedy generation against transformers' own generate (random seeded weights)."""

from __future__ import annotations

import numpy as np
import pytest

from webgpu_torch.runtime.generation import CausalLM
from webgpu_torch.tools.models import llama

from . import corpus

pytestmark = pytest.mark.e2e

NEW_TOKENS, MAX_LENGTH = 20, 48
LOGIT_TOLERANCE = 1e-3  # as Florence-2's: teacher-forced logits relative to the logit scale


@pytest.fixture(scope="module")
def model_and_lm():
    model = llama.build("tiny", seed=0)
    model.generation_config.eos_token_id = None  # all 20 tokens on both sides
    return model, llama.compile_step(model, MAX_LENGTH)


def test_the_base_size_has_over_100m_parameters():
    assert llama.parameters(llama.build("base")) > 100e6


def test_the_step_keeps_its_cache_as_state_and_reads_the_live_prefix(model_and_lm):
    _, lm = model_and_lm
    program = lm.step.program
    assert len(program.states) == 2 * llama.SIZES["tiny"]["num_hidden_layers"]
    kernels = [program.kernels[d.kernel].name for d in program.dispatches]
    assert sum(k.startswith("attention_split[") for k in kernels) == llama.SIZES["tiny"]["num_hidden_layers"]
    assert not any(k.startswith("softmax") for k in kernels)  # no unfused attention over the whole cache
    states = {s.buffer for s in program.states}
    readers = {k for k, d in zip(kernels, program.dispatches, strict=True) if states & set(d.buffers)}
    assert {k.split("[")[0] for k in readers} == {"scatter", "attention_split", "attention_merge"}  # no copies


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_matches_transformers(model_and_lm, seed):
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 3 + 3 * seed, seed)
    want_ids, want_logits = llama.reference_generate(model, prompt, NEW_TOKENS)
    _, logits = lm.generate(prompt, NEW_TOKENS, teacher=want_ids)
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    assert error <= LOGIT_TOLERANCE, f"teacher-forced logits off by {error:.2e} of the scale"
    ids, _ = lm.generate(prompt, NEW_TOKENS)
    assert ids == want_ids


def test_eos_stops_generation_a_step_late_and_a_long_request_is_refused(model_and_lm):
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 4, 0)
    ids, _ = lm.generate(prompt, NEW_TOKENS)
    lm.info["eos_token_id"] = ids[5]
    try:
        stopped, _ = lm.generate(prompt, NEW_TOKENS)
    finally:
        lm.info["eos_token_id"] = None
    assert stopped == ids[:ids.index(ids[5]) + 1]
    assert lm.generate(prompt, NEW_TOKENS)[0] == ids  # the discarded step left nothing a later call sees
    longest = MAX_LENGTH - len(prompt) + 1  # the last token is never fed back: the cache's last row is its own
    assert len(lm.generate(prompt, longest)[0]) == longest
    with pytest.raises(ValueError, match=f"need {MAX_LENGTH + 1} cache rows; this step's cache holds {MAX_LENGTH}"):
        lm.generate(prompt, longest + 1)


def test_save_load_and_the_javascript_runtime(model_and_lm, tmp_path):
    """The JavaScript runtime's tests generate from the same step and prompt and must give these ids."""
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 5, seed=3)
    ids, _ = lm.generate(prompt, NEW_TOKENS)
    lm.save(tmp_path)
    assert CausalLM.load(tmp_path).generate(prompt, NEW_TOKENS)[0] == ids
    _, logits = lm.generate(prompt, NEW_TOKENS, teacher=ids)
    corpus.write_causal_lm("llama_tiny", lm, prompt, NEW_TOKENS, ids, logits)


def test_torchao_int4_weights_stay_packed_and_generate_as_transformers():
    """`llama --quantize int4`: every Linear and the embedding quantized with torchao, kept packed in the step,
    which generates transformers' ids for the same quantized model."""
    model = llama.build("tiny", seed=1)
    model.generation_config.eos_token_id = None
    llama.quantize(model, 4, 32)
    lm = llama.compile_step(model, MAX_LENGTH)
    assert {p.bits for p in lm.step.program.packings.values()} == {4}
    prompt = llama.sample_prompt(model, 6, 0)
    want_ids, want_logits = llama.reference_generate(model, prompt, NEW_TOKENS)
    _, logits = lm.generate(prompt, NEW_TOKENS, teacher=want_ids)
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    assert error <= LOGIT_TOLERANCE, f"teacher-forced logits off by {error:.2e} of the scale"
    assert lm.generate(prompt, NEW_TOKENS)[0] == want_ids
