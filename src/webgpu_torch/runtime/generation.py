"""Greedy generation with compiled decoder steps whose KV caches are the program's state. No torch.

A decoder step program takes (token [1, 1] int64, position [1] int64, *context) and returns (logits [1, 1, V],
the greedy next token [1, 1]); it writes the token's keys and values into its cache state at `position` and
attends to rows 0 ..= position. `greedy` drives one: each step uploads a position and, where the host has not
chosen the token (a prompt token, a forced one, a teacher's), takes the token the previous step left on the
GPU. Steps are pipelined: step n + 1 is submitted before step n's token is read back, so the GPU never waits
for the host's round trip; a stop at EOS is seen one step late and that step's work is discarded.

`CausalLM` holds a decoder-only LM's step program (models/llama.py) and `Seq2Seq` an encoder-decoder's three
programs — `vision` (pixels -> image features), `encoder` (image features and prompt ids -> every decoder
layer's cross-attention keys and values) and `decoder` (the step above, with the cross K/V as its context) —
and the token ids generation needs. A Seq2Seq folder's `seq2seq.json` and the stopping rules are
docs/artifact.md's "Seq2Seq folders", which js/src/generation.js follows too.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..format.errors import ArtifactError
from .session import Session

STAGES = ("vision", "encoder", "decoder")
REQUIRED = ("layers", "heads", "head_dim", "decoder_start_token_id")  # integers
# Integers, null or absent; max_length: the decoder's cache rows (a longer generation is refused by name).
OPTIONAL = ("eos_token_id", "forced_bos_token_id", "forced_eos_token_id", "max_length")
STEP = "step.wgpt"
IN_FLIGHT = 2  # decoder steps submitted and not yet read back


def check_info(info, where: str) -> dict:
    """`info` (seq2seq.json's value) when it holds what generation needs; ArtifactError naming what not."""
    if not isinstance(info, dict):
        raise ArtifactError(f"{where}: not a JSON object")
    for key in REQUIRED:
        if not _is_int(info.get(key)):
            raise ArtifactError(f"{where}: no integer {key!r}")
    for key in OPTIONAL:
        if info.get(key) is not None and not _is_int(info[key]):
            raise ArtifactError(f"{where}: {key!r} is neither an integer nor null")
    return info


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**53


@dataclass
class Decoded:
    ids: list[int]  # the tokens chosen after the prompt (stopping after EOS)
    logits: list[np.ndarray]  # with a teacher, each step's logits
    steps: list[float]  # wall seconds from one token's arrival to the next (the first: from the start)
    host: dict[str, list[float]]  # host seconds per generated step: encode, submit, map (waiting), copy


def greedy(decoder: Session, prompt: list[int], max_new_tokens: int, context: tuple = (), *,
           eos: int | None = None, forced: Callable[[int], int | None] = lambda step: None,
           teacher: list[int] | None = None, on_token: Callable[[int, float], None] | None = None) -> Decoded:
    """Feed `prompt` (at least one token) at positions 0, 1, …, then up to `max_new_tokens` tokens chosen
    greedily — `forced(step)` replaces the choice where it returns an id (transformers' forced BOS/EOS) —
    stopping after `eos`. With `teacher`, each step's logits are read too and the teacher's ids are fed in
    place of the choices (a parity check). `on_token(id, seconds)` sees each token as it arrives."""
    if not prompt:
        raise ValueError("greedy decoding needs at least one prompt token (a start token)")
    for position, token in enumerate(prompt[:-1]):  # nothing read: these only fill the cache
        decoder.start((_ids(token), _ids(position, (1,)), *context), read=())
    first, reads = len(prompt) - 1, (0, 1) if teacher is not None else (1,)
    out = Decoded([], [], [], {"encode": [], "submit": [], "map": [], "copy": []})
    in_flight: deque = deque()
    token, arrivals = _ids(prompt[-1]), [time.perf_counter()]

    def stops() -> bool:  # read the oldest step in flight: whether it chose EOS
        chosen = _arrived(in_flight.popleft(), out, forced, teacher, on_token, arrivals)
        return eos is not None and teacher is None and chosen == eos

    try:
        for step in range(max_new_tokens):
            call = decoder.start((token, _ids(first + step, (1,)), *context), keep_on_device=(1,), read=reads)
            in_flight.append(call)
            host = teacher[step] if teacher is not None else forced(step)
            token = call.kept[1] if host is None else _ids(host)
            if len(in_flight) == IN_FLIGHT and stops():
                return out
        while in_flight:
            if stops():
                return out
    finally:
        for call in in_flight:  # steps past EOS: their work runs, their outputs are never read
            call.discard()
    return out


def _arrived(call, out: Decoded, forced, teacher, on_token, arrivals: list[float]) -> int:
    """Read one step's token (and logits); record it and its arrival; the id generation continues from."""
    logits, chosen = call.result()
    step = len(out.ids)
    token = forced(step)
    token = int(np.asarray(chosen).reshape(-1)[0]) if token is None else token
    if teacher is not None:
        out.logits.append(np.asarray(logits).reshape(-1))
    arrivals.append(time.perf_counter())
    out.steps.append(arrivals[-1] - arrivals[-2])
    for phase, seconds in call.host.items():
        out.host[phase].append(seconds)
    out.ids.append(token)
    if on_token is not None:
        on_token(token, out.steps[-1])
    return token


def _ids(value: int, shape: tuple = (1, 1)) -> np.ndarray:
    return np.full(shape, value, np.int64)


@dataclass
class CausalLM:
    step: Session
    info: dict  # max_length (the cache's rows), vocab_size, eos_token_id
    timings: dict = field(default_factory=dict)  # compile seconds; "steps" and "host": the last generate's

    def generate(self, prompt: list[int], max_new_tokens: int = 20, teacher: list[int] | None = None,
                 on_token: Callable[[int, float], None] | None = None) -> tuple[list[int], list[np.ndarray]]:
        """Greedy ids after `prompt` (stopping after EOS), and with `teacher` (ids fed instead of the model's own
        choices, for a parity check) the logits of every step. The prompt fills the cache one token a step."""
        prompt = [int(t) for t in np.asarray(prompt).reshape(-1)]
        if len(prompt) + max_new_tokens - 1 > self.info["max_length"]:
            raise ValueError(f"{len(prompt)} prompt tokens and {max_new_tokens} new ones need "
                             f"{len(prompt) + max_new_tokens - 1} cache rows; this step's cache holds "
                             f"{self.info['max_length']} (compile_step's max_length)")
        eos = None if teacher is not None else self.info.get("eos_token_id")
        decoded = greedy(self.step, prompt, max_new_tokens, eos=eos if isinstance(eos, int) else None,
                         teacher=teacher, on_token=on_token)
        self.timings.update(steps=decoded.steps, host=decoded.host)
        return decoded.ids, decoded.logits

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.step.save(folder / STEP)
        (folder / "causal_lm.json").write_text(json.dumps(self.info, indent=2))

    @staticmethod
    def load(folder: str | Path) -> CausalLM:
        folder = Path(folder)
        return CausalLM(Session.load(folder / STEP), json.loads((folder / "causal_lm.json").read_text()))


@dataclass
class Seq2Seq:
    vision: Session
    encoder: Session
    decoder: Session
    info: dict  # layers, heads, head_dim, max_length, decoder_start_token_id, eos_token_id, forced_bos/eos_token_id
    timings: dict = field(default_factory=dict)  # compile seconds by stage; "decoder steps": the last generate's

    def generate(self, pixel_values: np.ndarray, prompt_ids: np.ndarray, max_new_tokens: int = 20,
                 teacher: list[int] | None = None,
                 on_token: Callable[[int, float], None] | None = None) -> tuple[list[int], list[np.ndarray]]:
        """Greedy ids after the decoder start token (stopping after EOS), and with `teacher` (ids to feed
        instead of the model's own choices, for a parity check) the logits of every step."""
        info = self.info
        if info.get("max_length") is not None and max_new_tokens > info["max_length"]:
            raise ValueError(f"max_new_tokens={max_new_tokens}: the decoder's cache holds {info['max_length']} "
                             "tokens (compile_stages' max_new_tokens)")
        features = self.vision.on_device(pixel_values)  # queued: the first step's read waits for both
        cross = self.encoder.on_device(features, prompt_ids)
        decoded = greedy(self.decoder, [info["decoder_start_token_id"]], max_new_tokens, (cross,),
                         eos=None if teacher is not None else info.get("eos_token_id"),
                         forced=lambda step: self._forced(step, max_new_tokens), teacher=teacher, on_token=on_token)
        self.timings["decoder steps"] = decoded.steps  # wall seconds per token (the first waits for the encoder)
        self.timings["decoder host"] = decoded.host
        return decoded.ids, decoded.logits

    def _forced(self, step: int, max_new_tokens: int) -> int | None:
        """transformers' forced-BOS/EOS logits processors: the first token, and the last before the limit."""
        if step == 0 and self.info.get("forced_bos_token_id") is not None:
            return self.info["forced_bos_token_id"]
        if step == max_new_tokens - 1 and self.info.get("forced_eos_token_id") is not None:
            return self.info["forced_eos_token_id"]
        return None

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in STAGES:
            getattr(self, name).save(folder / f"{name}.wgpt")
        (folder / "seq2seq.json").write_text(json.dumps(self.info, indent=2))

    @staticmethod
    def load(folder: str | Path) -> Seq2Seq:
        folder = Path(folder)
        path = folder / "seq2seq.json"
        try:
            info = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, ValueError) as e:
            raise ArtifactError(f"{path}: not JSON: {e}") from None
        return Seq2Seq(*(Session.load(folder / f"{name}.wgpt") for name in STAGES), check_info(info, str(path)))
