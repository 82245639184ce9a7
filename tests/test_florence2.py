"""Florence-2 end to end at a reduced size: vision tower, encoder, KV-cache decoding and greedy generation
against transformers' own generate (random seeded weights)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from webgpu_torch.runtime.generation import Seq2Seq
from webgpu_torch.tools.models import florence2
from webgpu_torch.tools.models.generation_reference import check_beams

from . import corpus

pytestmark = pytest.mark.e2e

IMAGE, NEW_TOKENS = 96, 20
LOGIT_TOLERANCE = 1e-3  # the bound on teacher-forced logits, relative to the logit scale


@pytest.fixture(scope="module")
def model_and_stages():
    model = florence2.build("tiny", seed=0)
    # Generate all 20 tokens on both sides: no stopping at EOS, no forced EOS at the length limit.
    model.generation_config.eos_token_id = None
    model.generation_config.forced_eos_token_id = None
    return model, florence2.compile_stages(model, IMAGE, max_prompt=16, max_new_tokens=32)


@pytest.fixture(scope="module")
def beam_stages():
    """Florence-2 as it is used: generate(num_beams=3) with its EOS and forced EOS; a decoder prefill for decoder
    prompts of up to 4 tokens."""
    model = florence2.build("tiny", seed=0)
    return model, florence2.compile_stages(model, IMAGE, max_prompt=16, max_new_tokens=32, num_beams=3,
                                           max_decoder_prompt=4)


@pytest.mark.parametrize("seed", [0, 1])
def test_beam_search_returns_transformers_sequences_and_scores(beam_stages, seed):
    model, stages = beam_stages
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 4 + seed, seed)
    want, scores = florence2.reference_beams(model, pixels, prompt, NEW_TOKENS, 3)
    got = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS, num_beams=3, num_return_sequences=3)
    passed, summary = check_beams(got, want, scores, pad=model.generation_config.pad_token_id)
    assert passed, summary


def test_a_decoder_prompt_runs_in_one_prefill_call(beam_stages):
    """decoder_input_ids of several tokens: one prefill call over the beams, then transformers' beam search."""
    model, stages = beam_stages
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 5, seed=4)
    start = [model.generation_config.decoder_start_token_id, 0, 17]
    want, scores = florence2.reference_beams(model, pixels, prompt, 10, 3, decoder_input_ids=torch.tensor([start]))
    got = stages.generate(pixels.numpy(), prompt.numpy(), 10, num_beams=3, num_return_sequences=3,
                          decoder_prompt=start)
    passed, summary = check_beams(got, [w[len(start) - 1:] for w in want], scores,
                                  pad=model.generation_config.pad_token_id)
    assert passed, summary
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 3, seed=6)
    settings = {"num_beams": 3, "num_return_sequences": 2}
    got = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS, **settings)
    corpus.write_generation("florence2_tiny_beams", stages, pixels.numpy(), prompt.numpy(), NEW_TOKENS, None, None,
                            [corpus.strategy(settings, got)])


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_matches_transformers(model_and_stages, seed):
    model, stages = model_and_stages
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 3 + 2 * seed, seed)
    want_ids, want_logits = florence2.reference_generate(model, pixels, prompt, NEW_TOKENS)
    assert len(want_ids) == NEW_TOKENS

    logits = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS, teacher=want_ids).logits
    errors = [float(np.abs(got - want).max() / np.abs(want).max()) for got, want in zip(logits, want_logits,
                                                                                       strict=True)]
    assert max(errors) <= LOGIT_TOLERANCE, f"teacher-forced logits off by {max(errors):.2e} of the scale"

    ids = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS).ids
    measured = max(errors)
    for step, (got, want, scores) in enumerate(zip(ids, want_ids, want_logits, strict=True)):
        top2 = np.sort(scores)[-2:]
        if (top2[1] - top2[0]) / np.abs(scores).max() <= measured:
            break  # a near-tie within the measured error: the two may pick differently from here on
        assert got == want, f"step {step}: generated {got}, transformers {want}"
    else:
        assert ids == want_ids


def test_stages_save_and_load(model_and_stages, tmp_path):
    model, stages = model_and_stages
    stages.save(tmp_path)
    loaded = Seq2Seq.load(tmp_path)
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 4, seed=5)
    assert loaded.generate(pixels.numpy(), prompt.numpy(), 6).ids == stages.generate(pixels.numpy(), prompt.numpy(),
                                                                                     6).ids
    # the cache and prompt lengths stay dynamic
    assert loaded.decoder.program.symbols and loaded.encoder.program.symbols


def test_generation_is_written_for_the_javascript_runtime(model_and_stages):
    """The JavaScript runtime's tests generate from the same stages and inputs and must give these ids."""
    model, stages = model_and_stages
    pixels, prompt = florence2.sample_inputs(model, IMAGE, 5, seed=3)
    ids = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS).ids
    assert len(ids) == NEW_TOKENS
    logits = stages.generate(pixels.numpy(), prompt.numpy(), NEW_TOKENS, teacher=ids).logits
    corpus.write_generation("florence2_tiny", stages, pixels.numpy(), prompt.numpy(), NEW_TOKENS, ids, logits)


@pytest.mark.runtime
def test_a_thousand_decode_steps_keep_memory_flat(model_and_stages):
    """50 generations of 20 tokens: caches and cross K/V are DeviceTensors from the pool, freed each step."""
    model, stages = model_and_stages
    pixels, prompt = (a.numpy() for a in florence2.sample_inputs(model, IMAGE, 4, seed=4))
    for _ in range(5):  # warm: every cache size class has been allocated once
        stages.generate(pixels, prompt, NEW_TOKENS)
    start = _rss()
    for _ in range(50):
        stages.generate(pixels, prompt, NEW_TOKENS)
    per_step = (_rss() - start) / (50 * NEW_TOKENS)
    assert per_step < 256, f"{per_step:.0f} bytes per decode step"


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * 4096
