"""What generation decides on the host, as pure functions both runtimes share (js/src/decoding.js, the same
rules; tests/conformance/generation.json holds their decision vectors). No torch, no device.

- `Options`: a generation's settings, with transformers' names and defaults (GenerationConfig), checked once.
- `uniforms(seed)`: the draws a sampled generation feeds its sampler program, one per token (SplitMix64).
- `BeamSearch`: transformers' beam search bookkeeping (generation/utils.py `_beam_search`) for one prompt:
  given each step's best continuations over all beams (the beam program's top-K accumulated log-probabilities
  and flat indices beam · V + token), the next tokens, which beam each continues (the cache reorder) and the
  finished hypotheses, in float32 as transformers' tensors hold them.
- `completes_stop`: whether a token completed a stop string; `printable`: how much of a growing decoded text
  a stream may show.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

import numpy as np

MASK = 2**64 - 1
DEAD = -1.0e9  # transformers' score for a beam that must not be chosen (added, in float32)
EARLY_STOPPING = (True, False, "never")


@dataclass(frozen=True)
class Options:
    """transformers' generate settings (GenerationConfig's names and defaults; `min_p` 0 is its None)."""

    max_new_tokens: int = 20
    do_sample: bool = False
    temperature: float = 1.0
    top_k: int = 50
    top_p: float = 1.0
    min_p: float = 0.0
    repetition_penalty: float = 1.0
    seed: int = 0
    num_beams: int = 1
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    num_return_sequences: int = 1
    eos_token_id: tuple[int, ...] = ()  # stop after any of these (the model's own when not given)
    stop_strings: tuple[str, ...] = ()  # stop once the text completes one (needs a tokenizer)

    def sampler_params(self) -> list[float]:
        """The sampler program's `params` input: temperature, top_k (0: off), top_p, min_p, repetition_penalty."""
        return [self.temperature, self.top_k, self.top_p, self.min_p, self.repetition_penalty]


def options(eos_token_id=None, **settings) -> Options:
    """Options from keyword settings, checked: ValueError naming the first one that is wrong. `eos_token_id`
    is an id, a list of ids or None."""
    known = {f.name for f in fields(Options)}
    unknown = sorted(set(settings) - known)
    if unknown:
        raise ValueError(f"unknown generation setting {unknown[0]!r}")
    eos = () if eos_token_id is None else (eos_token_id,) if _is_int(eos_token_id) else tuple(eos_token_id)
    o = replace(Options(), **{**settings, "stop_strings": tuple(settings.get("stop_strings", ()))}, eos_token_id=eos)
    problem = _problem(o)
    if problem:
        raise ValueError(problem)
    return o


def _problem(o: Options) -> str | None:
    """Why `o` cannot run (transformers refuses the same), or None."""
    positive = {"max_new_tokens": o.max_new_tokens, "num_beams": o.num_beams,
                "num_return_sequences": o.num_return_sequences}
    for name, value in positive.items():
        if not _is_int(value) or value < 1:
            return f"{name} must be a positive integer, got {value!r}"
    if not _is_int(o.top_k) or o.top_k < 0:
        return f"top_k must be an integer >= 0 (0: off), got {o.top_k!r}"
    if not _is_int(o.seed) or not 0 <= o.seed <= MASK:
        return f"seed must be an integer in [0, 2^64), got {o.seed!r}"
    checks = [("temperature", o.temperature, 0, float("inf"), False), ("top_p", o.top_p, 0, 1, True),
              ("min_p", o.min_p, 0, 1, True), ("repetition_penalty", o.repetition_penalty, 0, float("inf"), False)]
    for name, value, lo, hi, closed in checks:
        if not _is_number(value) or not (lo < value <= hi if not closed else lo <= value <= hi) or value != value:
            return f"{name} must be in {'[' if closed else '('}{lo}, {hi}], got {value!r}"
    if not _is_number(o.length_penalty):
        return f"length_penalty must be a number, got {o.length_penalty!r}"
    if o.early_stopping not in EARLY_STOPPING or isinstance(o.early_stopping, int) is not isinstance(
            o.early_stopping, bool):
        return f"early_stopping must be true, false or 'never', got {o.early_stopping!r}"
    if not all(_is_int(t) and t >= 0 for t in o.eos_token_id):
        return f"eos_token_id must be token ids, got {list(o.eos_token_id)!r}"
    if not all(isinstance(s, str) and s for s in o.stop_strings):
        return "stop_strings must be non-empty strings"
    if o.num_return_sequences > o.num_beams:
        return f"num_return_sequences ({o.num_return_sequences}) must be at most num_beams ({o.num_beams})"
    if o.num_beams > 1 and (o.do_sample or o.stop_strings):
        return "beam search runs without do_sample and stop_strings"
    return None


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_number(v) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def uniforms(seed: int):
    """Endless draws in [0, 1 - 2^-24], 24 bits each, from SplitMix64 (Steele, Lea and Flood 2014) seeded with
    `seed`: the top 24 bits of each output over 2^24. Below 1, so the sampler's inverse CDF never passes the
    last token it keeps."""
    state = seed
    while True:
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        z ^= z >> 31
        yield (z >> 40) / 2**24


# -- beam search --------------------------------------------------------------------------------------------
def _f32(x) -> float:
    return float(np.float32(x))


def _top(scores: list[float], k: int) -> list[int]:
    """Indices of the k largest scores, largest first; ties by index (the order torch.topk gives them here)."""
    return sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]


@dataclass
class Hypothesis:
    tokens: list[int]  # after the prompt
    score: float  # running: the sum of log-probabilities; finished: that over length ** length_penalty


@dataclass
class BeamSearch:
    """One prompt's beam search (transformers 5's vectorized form, batch 1). `step` takes the beam program's
    top `keep` continuations and returns each running beam's next token and the beam it continues."""

    num_beams: int
    vocab_size: int
    max_new_tokens: int
    eos: tuple[int, ...] = ()
    length_penalty: float = 1.0
    early_stopping: bool | str = False
    running: list[Hypothesis] = field(init=False)
    finished: list[Hypothesis] = field(init=False)
    is_finished: list[bool] = field(init=False)  # per finished slot: holds a real hypothesis
    improvable: bool = field(init=False, default=True)  # transformers' is_early_stop_heuristic_unsatisfied
    done: bool = field(init=False, default=False)

    def __post_init__(self):
        # Only the first beam is live at first: the others start at DEAD so the first step's continuations
        # all come from one beam (they hold the same prompt).
        self.running = [Hypothesis([], 0.0 if b == 0 else DEAD) for b in range(self.num_beams)]
        self.finished = [Hypothesis([], DEAD) for _ in range(self.num_beams)]
        self.is_finished = [False] * self.num_beams

    @property
    def keep(self) -> int:
        """How many continuations a step needs: enough that num_beams stay running if all the best end."""
        return max(2, 1 + len(self.eos)) * self.num_beams

    def scores(self) -> list[float]:
        """The running beams' accumulated log-probabilities: the beam program's `scores` input."""
        return [h.score for h in self.running]

    def step(self, values: list[float], indices: list[int]) -> tuple[list[int], list[int]]:
        """Advance by one token given the `keep` best (accumulated log-prob, beam · V + token) over all beams,
        best first. Returns the next token of each running beam and the beam each continues (the cache
        reorder); sets `done` when transformers' loop would stop."""
        n, generated = self.num_beams, len(self.running[0].tokens)
        candidates = [Hypothesis(self.running[i // self.vocab_size].tokens + [i % self.vocab_size], _f32(v))
                      for v, i in zip(values, indices, strict=True)]
        origins = [i // self.vocab_size for i in indices]
        ends = [c.tokens[-1] in self.eos or generated + 1 >= self.max_new_tokens for c in candidates]
        alive = [_f32(c.score + (DEAD if e else 0.0)) for c, e in zip(candidates, ends, strict=True)]
        chosen = _top(alive, n)
        self._finish(candidates, ends, generated + 1)
        self.running = [Hypothesis(candidates[k].tokens, alive[k]) for k in chosen]
        self._check_done(generated + 1, all(ends))
        return [h.tokens[-1] for h in self.running], [origins[k] for k in chosen]

    def _finish(self, candidates: list[Hypothesis], ends: list[bool], length: int) -> None:
        """Merge the top num_beams candidates that just ended into the finished hypotheses, scored by length."""
        full = all(self.is_finished) and self.early_stopping is True
        divisor = _f32(float(length) ** self.length_penalty)
        scored = []
        for k, (c, e) in enumerate(zip(candidates, ends, strict=True)):
            s = _f32(c.score / divisor)
            for dead in (full, not self.improvable, not (e and k < self.num_beams)):
                s = _f32(s + (DEAD if dead else 0.0))
            scored.append(s)
        merged = self.finished + [Hypothesis(c.tokens, s) for c, s in zip(candidates, scored, strict=True)]
        flags = self.is_finished + [e and k < self.num_beams for k, e in enumerate(ends)]
        best = _top([h.score for h in merged], self.num_beams)
        self.finished, self.is_finished = [merged[k] for k in best], [flags[k] for k in best]

    def _check_done(self, length: int, all_end: bool) -> None:
        never = self.early_stopping == "never" and self.length_penalty > 0
        best_length = self.max_new_tokens if never else length
        best_possible = _f32(self.running[0].score / _f32(float(best_length) ** self.length_penalty))
        worst = min(h.score for h in self.finished)
        self.improvable = self.improvable and any(
            best_possible > (worst if f else DEAD) for f in self.is_finished)
        all_full = all(self.is_finished) and self.early_stopping is True
        self.done = not self.improvable or all_full or all_end

    def results(self, count: int) -> list[Hypothesis]:
        """The best `count` finished hypotheses, best first (num_return_sequences)."""
        return self.finished[:count]


# -- stopping and streaming ---------------------------------------------------------------------------------
def completes_stop(text: str, before: int, stop_strings) -> bool:
    """Whether the generated text `text`, of which the last token added everything after `before`
    characters, completes a stop string: one ends past `before` (transformers' StopStringCriteria: the stop
    string overlaps the final token)."""
    return any(s in text[max(0, before - len(s) + 1):] for s in stop_strings)


def printable(text: str, shown: int) -> int:
    """How much of a growing decoded `text` a stream may show, `shown` characters having been: all of it but a
    trailing run of U+FFFD — a multi-byte character whose bytes have not all come (a byte-level tokenizer
    decodes it so); at the end of a generation the stream shows the rest."""
    return max(shown, len(text.rstrip("\ufffd")))
