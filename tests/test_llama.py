"""A Llama-architecture causal LM (models/llama.py) at a reduced size: its decoder step and prefill compiled over
a static KV cache kept as their shared state; greedy, sampled and beam-searched generation against transformers'
own generate and logits processors (random seeded weights)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from webgpu_torch.format import artifact
from webgpu_torch.format.errors import ArtifactError
from webgpu_torch.runtime import decoding
from webgpu_torch.runtime.fit import allocated
from webgpu_torch.runtime.generation import CausalLM, text_stream
from webgpu_torch.tools.models import generation_reference as reference
from webgpu_torch.tools.models import llama

from . import chat_fixture, corpus
from .golden import damage

pytestmark = pytest.mark.e2e

NEW_TOKENS, MAX_LENGTH = 20, 48
CHAT_TOKENS, CHAT_MAX_LENGTH = 16, 128  # a chat's reply, its cache: a turn's prompt with the template is ~40 ids
LOGIT_TOLERANCE = 1e-3  # as Florence-2's: teacher-forced logits relative to the logit scale
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def model_and_lm():
    model = llama.build("tiny", seed=0)
    model.generation_config.eos_token_id = None  # all 20 tokens on both sides
    return model, llama.compile_step(model, MAX_LENGTH)


@pytest.fixture(scope="module")
def beam_lm(model_and_lm):
    model, _ = model_and_lm
    return llama.compile_step(model, MAX_LENGTH, num_beams=3)


def test_the_base_size_has_over_100m_parameters():
    assert llama.parameters(llama.build("base")) > 100e6


def test_the_step_keeps_its_cache_as_state_and_reads_the_live_prefix(model_and_lm):
    _, lm = model_and_lm
    program = lm.step.program
    assert len(program.states) == 2 * llama.ARCHS["tiny"]["num_hidden_layers"]
    kernels = [program.kernels[d.kernel].name for d in program.dispatches]
    assert sum(k.startswith("attention_split[") for k in kernels) == llama.ARCHS["tiny"]["num_hidden_layers"]
    assert not any(k.startswith("softmax") for k in kernels)  # no unfused attention over the whole cache
    states = {s.buffer for s in program.states}
    readers = {k for k, d in zip(kernels, program.dispatches, strict=True) if states & set(d.buffers)}
    assert {k.split("[")[0] for k in readers} == {"scatter", "attention_split", "attention_merge"}  # no copies


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_generation_matches_transformers(model_and_lm, seed):
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 3 + 3 * seed, seed)
    want_ids, want_logits = llama.reference_generate(model, prompt, NEW_TOKENS)
    logits = lm.generate(prompt, NEW_TOKENS, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    assert error <= LOGIT_TOLERANCE, f"teacher-forced logits off by {error:.2e} of the scale"
    ids = lm.generate(prompt, NEW_TOKENS).ids
    assert ids == want_ids


@pytest.mark.parametrize("length", [1, 2, 31])
def test_the_prompt_runs_in_one_prefill_call(model_and_lm, length):
    """A prompt of two tokens or more is one prefill call writing cache rows 0 .. T - 1 (one token runs as a
    step): the first token's logits, and every step after it reading that cache, are transformers'."""
    model, lm = model_and_lm
    prefill = lm.programs["prefill"].program
    assert [s.name for s in prefill.states] == [s.name for s in lm.step.program.states] and prefill.symbols
    prompt = llama.sample_prompt(model, length - 1, seed=length)
    want_ids, want_logits = llama.reference_generate(model, prompt, 8)
    logits = lm.generate(prompt, 8, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    assert error <= LOGIT_TOLERANCE, f"teacher-forced logits off by {error:.2e} of the scale"
    assert lm.generate(prompt, 8).ids == want_ids


@pytest.mark.parametrize("settings", [
    {"num_return_sequences": 3},
    {"eos": 3, "early_stopping": True, "num_return_sequences": 2},
    {"eos": 3, "early_stopping": "never", "length_penalty": 0.6},
    {"eos": 5, "length_penalty": 1.5, "num_return_sequences": 3},
])
def test_beam_search_returns_transformers_sequences_and_scores(model_and_lm, beam_lm, settings):
    """Caches carried per beam and reordered on the GPU; the bookkeeping (decoding.BeamSearch) as transformers'.
    `eos`: the position in greedy output of a token made EOS, so that beams end at different lengths."""
    model, lm = model_and_lm
    settings = dict(settings)
    prompt = llama.sample_prompt(model, 6, seed=7)
    if "eos" in settings:
        settings["eos_token_id"] = lm.generate(prompt, 12).ids[settings.pop("eos")]
    count = settings.pop("num_return_sequences", 1)
    want, scores = llama.reference_beams(model, prompt, 12, 3, **settings)
    got = beam_lm.generate(prompt, 12, num_beams=3, num_return_sequences=count, **settings)
    passed, summary = reference.check_beams(got, want[:count], scores[:count], pad=-1)
    assert passed, summary
    assert got.ids == got.sequences[0] and len(got.sequences) == count


@pytest.mark.parametrize("settings", [
    {"temperature": 0.7, "top_k": 20},
    {"top_k": 0, "top_p": 0.8, "repetition_penalty": 1.3},
    {"temperature": 1.4, "min_p": 0.1, "top_p": 0.95, "top_k": 50},
])
def test_sampling_draws_from_transformers_filtered_distribution(model_and_lm, settings):
    """Step by step: the GPU keeps transformers' token set with its probabilities, and picks the token that the
    same uniform draw picks from transformers' distribution; the draws of another seed do not."""
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 5, seed=11)
    ids = lm.generate(prompt, 16, do_sample=True, seed=5, **settings).ids
    assert lm.generate(prompt, 16, do_sample=True, seed=5, **settings).ids == ids  # seeded: reproducible
    o = decoding.options(do_sample=True, seed=5, max_new_tokens=16, **settings)
    ours = lm.generate(prompt, 16, teacher=ids).logits
    probe = reference.probe(lm.info["vocab_size"], MAX_LENGTH)
    passed, summary = reference.check_sampled(ids, prompt, reference.teacher_logits(model, prompt, ids), ours, o, probe)
    assert passed, summary
    other = decoding.options(do_sample=True, seed=6, max_new_tokens=16, **settings)
    assert not reference.check_sampled(ids, prompt, reference.teacher_logits(model, prompt, ids), ours, other,
                                       probe)[0]


@pytest.mark.parametrize("settings", [
    {"top_k": 0, "top_p": 0.5},
    {"top_k": 300, "top_p": 0.9, "temperature": 0.7},
    {"top_k": 40, "top_p": 0.3, "repetition_penalty": 1.5},
    {"top_k": 0, "top_p": 1.0, "min_p": 0.2},
])
def test_the_sampler_keeps_transformers_set_where_scores_tie(settings, monkeypatch):
    """Scores in six levels of ~170 tied tokens each, so that TopK's k-th score and TopP's cut fall inside a tie:
    the GPU keeps the tokens transformers keeps, with its probabilities, where TopP's sort is stable (torch's
    default CPU sort orders ties as it happens to: tied tokens leave in id order here)."""
    vocab, sequence = 1031, [3, 500, 1000]
    logits = torch.randint(0, 6, (vocab,), generator=torch.Generator().manual_seed(2)).float().numpy()
    o = decoding.options(do_sample=True, max_new_tokens=1, **settings)
    sort = torch.sort
    monkeypatch.setattr(torch, "sort", lambda *args, **kwargs: sort(*args, **kwargs, stable=True))
    want = reference.filtered(logits, sequence, o)
    probe = reference.probe(vocab, 8)
    params = np.asarray(o.sampler_params(), np.float32)
    got = np.asarray(probe(logits.reshape(1, 1, -1), np.asarray([sequence]), params), np.float64).reshape(-1)
    assert 1 < (want > 0).sum() < vocab and np.array_equal(got > 0, want > 0)
    assert np.abs(got - want).max() <= reference.PROBABILITY_TOLERANCE


def test_streams_ids_and_text_and_stops_at_stop_strings(model_and_lm):
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 4, seed=2)
    ids = lm.generate(prompt, 12).ids
    assert list(lm.stream(prompt, 12)) == ids
    letters = lambda ids: "".join(chr(ord("a") + i % 26) for i in ids)  # noqa: E731  (a tokenizer's decode)
    assert "".join(text_stream(lm.stream(prompt, 12), letters)) == letters(ids)
    stop = letters(ids[5:7])
    stopped = lm.generate(prompt, 12, stop_strings=[stop], tokenizer=letters).ids
    assert stop in letters(stopped) and stop not in letters(stopped[:-1])
    with pytest.raises(ValueError, match="stop_strings need a tokenizer"):
        lm.generate(prompt, 12, stop_strings=[stop])
    with pytest.raises(ValueError, match="beam search needs a beams program"):
        lm.generate(prompt, 12, num_beams=2)


def test_eos_stops_generation_a_step_late_and_a_long_request_is_refused(model_and_lm):
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 4, 0)
    ids = lm.generate(prompt, NEW_TOKENS).ids
    lm.info["eos_token_id"] = ids[5]
    try:
        stopped = lm.generate(prompt, NEW_TOKENS).ids
    finally:
        lm.info["eos_token_id"] = None
    assert stopped == ids[:ids.index(ids[5]) + 1]
    assert lm.generate(prompt, NEW_TOKENS).ids == ids  # the discarded step left nothing a later call sees
    longest = MAX_LENGTH - len(prompt) + 1  # the last token is never fed back: the cache's last row is its own
    assert len(lm.generate(prompt, longest).ids) == longest
    with pytest.raises(ValueError, match=f"need {MAX_LENGTH + 1} cache rows; this step's cache holds {MAX_LENGTH}"):
        lm.generate(prompt, longest + 1)


def test_bench_llm_runs_our_sides_in_processes_of_their_own_and_counts_their_memory(model_and_lm, tmp_path):
    """bench llm's sides for ours over a saved folder, the Python runtime's (tools/bench/_ours.py) and the JS
    runtime's (js/bench/bench.js --json): each generates the folder's ids and counts the WebGPU buffers alive at
    once. Untuned, those are the step's, the prefill's and the sampler's, each buffer once (the prefill shares
    the step's cache and constants: Decoder.device_bytes), and a few small staging and timing ones: at least
    the larger program's buffers, at most all the programs' and 64 KiB (27 KiB measured, Node)."""
    _, lm = model_and_lm
    prompt = [1, 2, 3]
    lm.save(tmp_path)
    (tmp_path / "generate.json").write_text(json.dumps({"prompt_ids": prompt, "max_new_tokens": 2}))
    ids = lm.generate(prompt, 2).ids
    sizes = [sum(allocated(b.size) for b in s.program.buffers) for s in (lm.step, *lm.programs.values())]
    held = sum(lm.decoder.device_bytes().values())
    env = os.environ | {"WEBGPU_TORCH_TUNE": "0"}  # no probes: only the programs' own buffers
    python = [sys.executable, "-m", "webgpu_torch.tools.bench._ours", tmp_path, "--runs", "1", "--warm-up", "0"]
    node = ["node", REPO / "js" / "bench" / "bench.js", "--json", "--calls", "4", tmp_path]  # one generation
    for argv in python, node:
        out = subprocess.run(argv, capture_output=True, text=True, check=True, env=env, cwd=REPO / "js")
        m = json.loads(out.stdout.strip().splitlines()[-1])
        assert m["ids"] == ids and m["perToken"] > 0 and m["stepGpu"] > 0, (argv[1], m)
        assert max(sizes) <= m["gpuPeak"] <= held + 2**16, (argv[1], m, sizes, held)
        assert m["peakRss"] > m["gpuPeak"], (argv[1], m)


def test_save_load_and_the_javascript_runtime(model_and_lm, tmp_path):
    """The JavaScript runtime's tests generate from the same step and prompt and must give these ids."""
    model, lm = model_and_lm
    prompt = llama.sample_prompt(model, 5, seed=3)
    ids = lm.generate(prompt, NEW_TOKENS).ids
    lm.save(tmp_path)
    assert CausalLM.load(tmp_path).generate(prompt, NEW_TOKENS).ids == ids
    logits = lm.generate(prompt, NEW_TOKENS, teacher=ids).logits
    sampled = {"do_sample": True, "temperature": 0.8, "top_k": 30, "top_p": 0.9, "repetition_penalty": 1.2, "seed": 9}
    corpus.write_causal_lm("llama_tiny", lm, prompt, NEW_TOKENS, ids, logits,
                           [corpus.strategy(sampled, lm.generate(prompt, NEW_TOKENS, **sampled))])


def test_a_saved_prefill_refers_to_the_steps_weights_and_uses_its_buffers(model_and_lm, tmp_path, monkeypatch):
    """The folder holds the weights once (in step.wgpt), read once; loaded, the prefill's constants are the
    step's GPU buffers; a step saved again with other weights, or the prefill read without its folder, is
    refused."""
    _, lm = model_and_lm
    lm.save(tmp_path)
    header, data = damage.parts((tmp_path / "prefill.wgpt").read_bytes())
    assert {t["external"]["file"] for t in header["tensors"]} == {"step.wgpt"} and len(data) == 0
    read, parse = [], artifact._from_bytes

    def recorded(raw, where, *rest):
        read.append(Path(where).name)
        return parse(raw, where, *rest)

    monkeypatch.setattr(artifact, "_from_bytes", recorded)
    loaded = CausalLM.load(tmp_path)
    assert sorted(read) == ["prefill.wgpt", "sampler.wgpt", "step.wgpt"]  # each file read once
    step, prefill = loaded.step.executor(), loaded.programs["prefill"].executor()
    constants = [i for i, b in enumerate(prefill.program.buffers) if b.role == "constant"]
    assert len(constants) > 10 and all(any(prefill.buffers[i] is b for b in step.buffers) for i in constants)
    with pytest.raises(ArtifactError, match=r"is stored in step\.wgpt: load this file from its folder"):
        artifact.from_bytes((tmp_path / "prefill.wgpt").read_bytes())
    other = llama.compile_step(llama.build("tiny", seed=1), MAX_LENGTH)
    other.step.save(tmp_path / "step.wgpt")
    with pytest.raises(ArtifactError, match="has been saved again since"):
        CausalLM.load(tmp_path)


def test_beam_search_is_written_for_the_javascript_runtime(model_and_lm, beam_lm, tmp_path):
    model, _ = model_and_lm
    prompt = llama.sample_prompt(model, 5, seed=3)
    settings = {"num_beams": 3, "num_return_sequences": 3, "eos_token_id": 7, "length_penalty": 0.8}
    beam_lm.save(tmp_path)  # save and load keep the beam programs
    loaded = CausalLM.load(tmp_path)
    got = loaded.generate(prompt, 14, **settings)
    assert got.sequences == beam_lm.generate(prompt, 14, **settings).sequences
    corpus.write_causal_lm("llama_tiny_beams", beam_lm, prompt, 14, None, None, [corpus.strategy(settings, got)])


def test_a_chat_is_written_for_the_javascript_runtime(tmp_path):
    """A conversation for the JavaScript chat (js/test/chat.test.js): a tiny Llama (its EOS, 2, kept) in a
    folder with a chat tokenizer (chat_fixture.py), and each turn's request with the reply the Python runtime
    generates for its prompt ids. The turns continue one conversation, so the chat reuses its cache; the last
    samples."""
    model = llama.build("tiny", seed=0)
    lm = llama.compile_step(model, CHAT_MAX_LENGTH)
    folder = corpus.folder() / "llama_tiny_chat"
    lm.save(folder)
    tokenizer = chat_fixture.write(folder, model.config.vocab_size)
    assert tokenizer.eos_token_id in [lm.info["eos_token_id"]]  # the chat stops at either: here they are one
    messages = [{"role": "user", "content": "Hello! How are you today?"}]
    turns = []
    for follow_up, settings in [(None, {}), ("Tell me more about WebGPU, please.", {}),
                                (None, {"temperature": 0.8, "top_p": 0.9, "seed": 5})]:
        if follow_up:
            messages += [{"role": "assistant", "content": turns[-1]["content"]}, {"role": "user", "content": follow_up}]
        request = {"messages": list(messages), "max_tokens": CHAT_TOKENS, "temperature": 0, **settings}
        turns.append({"request": request, **chat_fixture.reply(lm, tokenizer, messages, CHAT_TOKENS, **settings)})
    assert len(turns[1]["prompt_ids"]) + CHAT_TOKENS <= CHAT_MAX_LENGTH
    (folder / "chat.json").write_text(json.dumps({"turns": turns}, indent=1) + "\n")


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
    logits = lm.generate(prompt, NEW_TOKENS, teacher=want_ids).logits
    error = max(float(np.abs(a - b).max() / np.abs(b).max()) for a, b in zip(logits, want_logits, strict=True))
    assert error <= LOGIT_TOLERANCE, f"teacher-forced logits off by {error:.2e} of the scale"
    assert lm.generate(prompt, NEW_TOKENS).ids == want_ids
