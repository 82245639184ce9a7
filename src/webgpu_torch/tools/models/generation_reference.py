"""transformers as the reference for decoding strategies: the logits processors a sampled generate applies, the
token an inverse-CDF draw picks from their distribution, and checks of our sampled and beam-searched generations
against them (the CLIs' PASS/FAIL and the tests)."""

from __future__ import annotations

import numpy as np
import torch
from transformers.generation import logits_process as lp

import webgpu_torch

from ...runtime import decoding
from .decoder_programs import Sampler

PROBABILITY_TOLERANCE = 1e-4  # a filtered probability's distance from transformers' (float32 logits, two orders)


def processors(o: decoding.Options) -> lp.LogitsProcessorList:
    """The processors transformers' generate(do_sample=True) builds for these settings, in its order
    (GenerationMixin._get_logits_processor: the repetition penalty, then the warpers)."""
    out = lp.LogitsProcessorList()
    if o.repetition_penalty != 1.0:
        out.append(lp.RepetitionPenaltyLogitsProcessor(penalty=float(o.repetition_penalty)))
    if o.temperature != 1.0:
        out.append(lp.TemperatureLogitsWarper(float(o.temperature)))
    if o.top_k != 0:
        out.append(lp.TopKLogitsWarper(top_k=o.top_k))
    if o.top_p < 1.0:
        out.append(lp.TopPLogitsWarper(top_p=float(o.top_p)))
    if o.min_p > 0:
        out.append(lp.MinPLogitsWarper(min_p=float(o.min_p)))
    return out


def filtered(logits: np.ndarray, sequence: list[int], o: decoding.Options) -> np.ndarray:
    """transformers' sampling distribution over the vocabulary after `sequence` (its ids so far)."""
    scores = processors(o)(torch.tensor([sequence]), torch.tensor(logits, dtype=torch.float32).reshape(1, -1))
    return scores.softmax(-1)[0].double().numpy()


def inverse_cdf(probs: np.ndarray, u: float) -> tuple[int, float]:
    """The token an inverse-CDF draw `u` picks (the first in vocabulary order whose cumulative probability
    exceeds u of the total), and how far u · total lies from the nearest cumulative boundary."""
    cdf = np.cumsum(probs)
    target = u * cdf[-1]
    return int(np.searchsorted(cdf, target, side="right")), float(np.abs(cdf - target).min())


def probe(vocab_size: int, max_length: int):
    """The sampler's distribution as a program of its own, (logits, ids, params) -> probabilities [1, V], for
    checking what the GPU keeps against `filtered`."""

    class Probe(Sampler):
        def forward(self, logits, ids, params):
            return self.distribution(logits, self.seen.scatter(1, ids, 1.0), params)

    with torch.no_grad():
        ids = torch.export.Dim("ids", min=1, max=max_length)
        example = (torch.zeros(1, 1, vocab_size), torch.tensor([[0, 1]]), torch.tensor([1.0, 50, 1, 0, 1]))
        return webgpu_torch.compile_module(Probe(vocab_size), example, dynamic_shapes=(None, {1: ids}, None))


def check_sampled(ids: list[int], prompt: list[int], logits: list[np.ndarray], step_logits: list[np.ndarray],
                  o: decoding.Options, probe_session) -> tuple[bool, str]:
    """Our sampled `ids` after `prompt` against transformers, step by step: with `logits` transformers' own at
    each step (teacher-forced over our ids), the token its distribution gives for the same draw must be ours
    (unless the draw lies within the probability tolerance of a boundary); with `step_logits` ours, the GPU's
    kept set must be transformers' and its probabilities within PROBABILITY_TOLERANCE. (passed, summary)."""
    params = np.asarray(o.sampler_params(), np.float32)
    same, near, worst, kept = 0, 0, 0.0, True
    draws = decoding.uniforms(o.seed)  # one a step: no token of a causal LM is forced
    for step, (u, want_logits, ours) in enumerate(zip(draws, logits, step_logits, strict=False)):
        sequence = prompt + ids[:step]
        want = filtered(want_logits, sequence, o)
        token, margin = inverse_cdf(want, u)
        same += token == ids[step]
        near += token != ids[step] and margin <= PROBABILITY_TOLERANCE
        probs = probe_session(ours.reshape(1, 1, -1), np.asarray([sequence], np.int64), params)
        probs = np.asarray(probs, np.float64).reshape(-1)
        kept &= bool(((probs > 0) == (want > 0)).all())
        worst = max(worst, float(np.abs(probs - want).max()))
    steps = len(ids)
    passed = kept and worst <= PROBABILITY_TOLERANCE and same + near == steps
    return passed, (f"{same}/{steps} tokens are transformers' for the same draws ({near} at a near-tie); kept sets "
                    f"{'equal' if kept else 'DIFFER'}; probabilities within {worst:.1e}")


def teacher_logits(model, prompt: list[int], ids: list[int]) -> list[np.ndarray]:
    """transformers' logits at each generated step of a causal LM, given `ids` after `prompt`."""
    with torch.no_grad():
        logits = model(torch.tensor([prompt + ids])).logits[0, len(prompt) - 1:-1]
    return [row.numpy() for row in logits]


def check_beams(got, want_sequences: list[list[int]], want_scores: list[float], pad: int) -> tuple[bool, str]:
    """Our beam search's sequences and scores (a generation.Generation) against transformers' (which pads the
    shorter sequences with `pad`)."""
    same = sum(w[:len(g)] == g and set(w[len(g):]) <= {pad} for g, w in zip(got.sequences, want_sequences,
                                                                             strict=True))
    error = max(abs(a - b) for a, b in zip(got.scores, want_scores, strict=True))
    passed = same == len(want_sequences) and error <= 1e-4 * max(1.0, max(map(abs, want_scores)))
    return passed, f"{same}/{len(want_sequences)} sequences are transformers', scores within {error:.1e}"
