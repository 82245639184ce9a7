"""Generation with compiled decoder programs whose KV caches are the programs' state. No torch.

A decoder's programs (`Decoder`; docs/artifact.md, "Decoding programs") share one KV cache (Session.share):

    step     tokens [B, 1], position [1], *context -> logits [B, 1, V], the greedy next token [B, 1]; writes row
             `position` of the cache, attends to rows 0 ..= position
    prefill  tokens [B, T], position [1], *context -> the same for the last of T tokens, written at rows
             position .. position + T - 1 in one call (T dynamic)
    sampler, beams, reorder   sampling, beam search and the cache reorder (tools/models/decoder_programs.py)

B is 1, or the beams of a beam search. A generation runs the prompt through `prefill` (or token by token through
`step` where there is none), then steps: greedy, its token the step's own; sampled, through `sampler` given a
uniform the host draws (decoding.uniforms); or a beam search, whose bookkeeping is decoding.BeamSearch. Greedy
and sampled steps are pipelined: step n + 1 is submitted before step n's token is read back (the token passed on
the GPU), so the GPU never waits for the host's round trip; a stop is seen one step late and that step's work is
discarded. A beam search reads each step's best continuations before it chooses the next tokens.

`CausalLM` holds a decoder-only LM's programs (tools/models/llama.py) and `Seq2Seq` an encoder-decoder's — `vision`
(pixels -> image features), `encoder` (image features and prompt ids -> every decoder layer's cross-attention
keys and values) and the decoder's, with the cross K/V as their context — and the token ids generation needs.
Their folders and the stopping rules are docs/artifact.md's "Seq2Seq folders", which js/src/generation.js
follows too.
"""

from __future__ import annotations

import json
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..format import artifact
from ..format.errors import ArtifactError
from . import decoding
from .session import Session

STAGES = ("vision", "encoder", "decoder")
PROGRAMS = ("prefill", "sampler", "beams", "reorder")  # a folder's optional decoding programs
SHARING = ("prefill", "reorder")  # those that use the step's buffers: its cache, and the weights a prefill holds too
REQUIRED = ("layers", "heads", "head_dim", "decoder_start_token_id")  # integers
# Integers, null or absent; max_length: the decoder's cache rows (a longer generation is refused by name).
OPTIONAL = ("forced_bos_token_id", "forced_eos_token_id", "max_length")
STEP = "step.wgpt"
DECODER = "decoder.wgpt"  # a Seq2Seq folder's decoder step
IN_FLIGHT = 2  # decoder steps submitted and not yet read back


def check_info(info, where: str, required=REQUIRED, optional=OPTIONAL) -> dict:
    """`info` (a folder's JSON) when it holds what generation needs; ArtifactError naming what not. Besides
    `required` integers and `optional` integers or nulls: `eos_token_id`, an id, a list of ids or null, and
    `programs`, the folder's decoding programs (PROGRAMS)."""
    if not isinstance(info, dict):
        raise ArtifactError(f"{where}: not a JSON object")
    for key in required:
        if not _is_int(info.get(key)):
            raise ArtifactError(f"{where}: no integer {key!r}")
    for key in optional:
        if info.get(key) is not None and not _is_int(info[key]):
            raise ArtifactError(f"{where}: {key!r} is neither an integer nor null")
    eos = info.get("eos_token_id")
    if eos is not None and not _is_int(eos) and not (isinstance(eos, list) and all(map(_is_int, eos))):
        raise ArtifactError(f"{where}: 'eos_token_id' is neither an integer, a list of integers nor null")
    programs = info.get("programs", [])
    if not isinstance(programs, list) or any(p not in PROGRAMS for p in programs):
        raise ArtifactError(f"{where}: 'programs' must list some of {', '.join(PROGRAMS)}")
    return info


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**53


@dataclass
class Generation:
    ids: list[int]  # the generated tokens (stopping after EOS); beam search: the best sequence's
    sequences: list[list[int]]  # beam search: num_return_sequences of them, best first; else [ids]
    scores: list[float]  # beam search: each sequence's score (transformers' sequences_scores); else []
    logits: list[np.ndarray]  # with a teacher, each step's logits
    steps: list[float]  # wall seconds from one token's arrival to the next (the first: from the start)
    host: dict[str, list[float]]  # host seconds per generated step: encode, submit, map (waiting), copy

    @property
    def first_token(self) -> float:
        """Seconds from the start of the generation to its first token (the prompt's prefill and one step)."""
        return self.steps[0] if self.steps else float("nan")


@dataclass
class Decoder:
    """A decoder's programs (None where a folder lacks one); prefill and reorder write the step's cache."""

    step: Session
    prefill: Session | None = None
    sampler: Session | None = None
    beams: Session | None = None
    reorder: Session | None = None

    def __post_init__(self):
        for name in SHARING:
            if getattr(self, name) is not None:
                getattr(self, name).share(self.step)

    @property
    def batch(self) -> int:
        return self.step.program.inputs[0].shape[0]

    def device_bytes(self, engine: str | None = None) -> dict[str, int]:
        """Bytes of the device buffers the programs hold, by role, each buffer once (the KV cache, and the
        weights a prefill takes from the step, count once): weights (constants), cache (states), scratch (the
        rest). js/src/generation.js's deviceBytes is its twin."""
        held, seen = {"weights": 0, "cache": 0, "scratch": 0}, set()
        for session in (self.step, self.prefill, self.sampler, self.beams, self.reorder):
            if session is None:
                continue
            executor = session.executor(engine)
            for buffer, spec in zip(executor.buffers, executor.program.buffers, strict=True):
                if id(buffer) not in seen:
                    seen.add(id(buffer))
                    held[{"constant": "weights", "state": "cache"}.get(spec.role, "scratch")] += buffer.size
        return held

    def start_prompt(self, prompt: list[int], context: tuple, keep, read):
        """Submit the prompt (in every batch row) at positions 0 .. T - 1: one prefill call where there is a
        prefill, else one step per token; the call whose outputs are the last token's."""
        rows = np.tile(np.asarray(prompt, np.int64), (self.batch, 1))
        if self.prefill is not None and len(prompt) >= 2:
            return self.prefill.start((rows, _position(0), *context), keep_on_device=keep, read=read)
        for p in range(len(prompt) - 1):  # nothing read: these only fill the cache
            self.step.start((rows[:, p:p + 1], _position(p), *context), read=())
        return self.step.start((rows[:, -1:], _position(len(prompt) - 1), *context), keep_on_device=keep, read=read)

    def require(self, o: decoding.Options) -> None:
        """ValueError naming the program these options need that this decoder lacks."""
        needs = {"sampler": o.do_sample, "beams": o.num_beams > 1, "reorder": o.num_beams > 1}
        for name, needed in needs.items():
            if needed and getattr(self, name) is None:
                raise ValueError(f"{'sampling' if name == 'sampler' else 'beam search'} needs a {name} program; "
                                 f"compile the model with it (its folder's 'programs')")
        if self.batch != o.num_beams:
            raise ValueError(f"num_beams={o.num_beams}: this decoder's step was compiled for {self.batch} "
                             f"{'beams' if self.batch > 1 else 'beam'}")


def _ids(value: int) -> np.ndarray:
    return np.full((1, 1), value, np.int64)


def _position(p: int) -> np.ndarray:
    return np.array([p], np.int64)


def tokens(decoder: Decoder, prompt: list[int], o: decoding.Options, context: tuple = (), *,
           forced: Callable[[int], int | None] = lambda step: None, teacher: list[int] | None = None,
           out: Generation | None = None) -> Iterator[int]:
    """The greedy or sampled tokens after `prompt` (at least one token), each as soon as it is read back,
    stopping after any of `o.eos_token_id` or `o.max_new_tokens` tokens. `forced(step)` replaces the choice
    where it returns an id (transformers' forced BOS/EOS); with `teacher`, its ids are fed in place of the
    choices and each step's logits recorded (a parity check). `out` records arrivals, host times and logits."""
    if not prompt:
        raise ValueError("generation needs at least one prompt token (a start token)")
    out = out if out is not None else _empty()
    sampling = o.do_sample and teacher is None
    if sampling:
        decoder.sampler.reset_state()
        draws, params = decoding.uniforms(o.seed), np.asarray(o.sampler_params(), np.float32)
    keep = () if teacher is not None else (0,) if sampling else (1,)
    reads = (0, 1) if teacher is not None else () if sampling else (1,)
    # Each step in flight: (the call to wait for or None, the output holding its id or None, the host's id).
    in_flight: deque = deque()
    arrivals, seen = [time.perf_counter()], np.asarray([prompt], np.int64)  # seen: ids the sampler marks
    token = None
    try:
        for step in range(o.max_new_tokens):
            call = decoder.start_prompt(prompt, context, keep, reads) if step == 0 else decoder.step.start(
                (token, _position(len(prompt) + step - 1), *context), keep_on_device=keep, read=reads)
            host = teacher[step] if teacher is not None else forced(step)
            if host is not None:
                token, seen = _ids(host), _ids(host)
                in_flight.append((call if reads else None, None, host))
            elif sampling:
                pick = decoder.sampler.start((call.kept[0], seen, params, np.float32([next(draws)])),
                                             keep_on_device=(0,), read=(0,))
                token, seen = pick.kept[0], seen[:, -1:]
                in_flight.append((pick, 0, None))
            else:
                token = call.kept[1]
                in_flight.append((call, 1, None))
            if len(in_flight) == IN_FLIGHT:
                chosen = _arrive(in_flight.popleft(), out, arrivals, teacher is not None)
                yield chosen
                if chosen in o.eos_token_id and teacher is None:
                    return
        while in_flight:
            chosen = _arrive(in_flight.popleft(), out, arrivals, teacher is not None)
            yield chosen
            if chosen in o.eos_token_id and teacher is None:
                return
    finally:
        for call, _, _ in in_flight:  # steps past a stop: their work runs, their outputs are never read
            if call is not None:
                call.discard()


def _arrive(entry, out: Generation, arrivals: list[float], logits: bool) -> int:
    """Wait for one step; record its arrival, host times and (`logits`) its logits; its id."""
    call, index, host = entry
    if call is not None:
        result = call.result()
        if logits:
            out.logits.append(np.asarray(result[0]).reshape(-1))
        for phase, seconds in call.host.items():
            out.host[phase].append(seconds)
    arrivals.append(time.perf_counter())
    out.steps.append(arrivals[-1] - arrivals[-2])
    if host is not None:
        return host
    return int(np.asarray(result[index] if isinstance(result, (tuple, list)) else result).reshape(-1)[0])


def beam_search(decoder: Decoder, prompt: list[int], o: decoding.Options, context: tuple = (), *,
                forced: Callable[[int], int | None] = lambda step: None,
                out: Generation | None = None) -> decoding.BeamSearch:
    """transformers' beam search after `prompt` over `decoder`'s batch of beams: each step's best continuations
    come from the beams program (log_softmax, forced tokens, running scores, top K on the GPU), the host chooses
    (decoding.BeamSearch), the reorder program gathers the caches by beam on the GPU, and the step runs the
    chosen tokens. Returns the finished search."""
    out = out if out is not None else _empty()
    vocab_size = decoder.step.program.outputs[0].shape[-1]
    search = decoding.BeamSearch(o.num_beams, vocab_size, o.max_new_tokens, o.eos_token_id, o.length_penalty,
                                 o.early_stopping)
    keep = decoder.beams.program.outputs[0].shape[-1]
    if search.keep > keep:
        raise ValueError(f"{len(o.eos_token_id)} EOS ids need the {search.keep} best continuations a step; this "
                         f"beams program gives {keep}")
    arrivals = [time.perf_counter()]
    call = decoder.start_prompt(prompt, context, (0,), ())
    for step in range(o.max_new_tokens):
        forced_id = forced(step)
        top = decoder.beams.start((call.kept[0], np.float32(search.scores()),
                                   _position(-1 if forced_id is None else forced_id)), read=(0, 1))
        values, indices = (np.asarray(a).reshape(-1)[:search.keep] for a in top.result())
        for phase, seconds in top.host.items():  # the read of each step's candidates
            out.host[phase].append(seconds)
        next_tokens, beams = search.step(values.tolist(), indices.tolist())
        arrivals.append(time.perf_counter())
        out.steps.append(arrivals[-1] - arrivals[-2])
        if search.done:
            break
        if beams != list(range(o.num_beams)):
            decoder.reorder.start((np.asarray(beams, np.int64),), read=())
        call = decoder.step.start((np.asarray(next_tokens, np.int64)[:, None], _position(len(prompt) + step), *context),
                                  keep_on_device=(0,), read=())
    return search


def _empty() -> Generation:
    return Generation([], [], [], [], [], {"encode": [], "submit": [], "map": [], "copy": []})


def generate(decoder: Decoder, prompt: list[int], o: decoding.Options, context: tuple = (), *,
             forced: Callable[[int], int | None] = lambda step: None, teacher: list[int] | None = None,
             on_token: Callable[[int, float], None] | None = None, tokenizer=None) -> Generation:
    """Run one generation with options `o` (greedy, sampled or beam search); `on_token(id, seconds)` sees each
    token as it arrives (not a beam search's: its sequences are known at the end); `tokenizer` (anything with
    `decode(ids)`) is needed for `o.stop_strings`."""
    decoder.require(o)
    out = _empty()
    if o.num_beams > 1:
        search = beam_search(decoder, prompt, o, context, forced=forced, out=out)
        best = search.results(o.num_return_sequences)
        out.sequences, out.scores = [h.tokens for h in best], [h.score for h in best]
        out.ids = out.sequences[0]
        return out
    if o.stop_strings and tokenizer is None:
        raise ValueError("stop_strings need a tokenizer to decode the generated text")
    text = ""
    for token in tokens(decoder, prompt, o, context, forced=forced, teacher=teacher, out=out):
        out.ids.append(token)
        if on_token is not None:
            on_token(token, out.steps[-1])
        if o.stop_strings:
            before, text = len(text), _decode(tokenizer, out.ids)
            if decoding.completes_stop(text, before, o.stop_strings):
                break
    out.sequences = [out.ids]
    return out


def _decode(tokenizer, ids: list[int]) -> str:
    return tokenizer.decode(ids) if hasattr(tokenizer, "decode") else tokenizer(ids)


def text_stream(ids: Iterator[int], tokenizer) -> Iterator[str]:
    """The text of a stream of token ids as it grows, in pieces that never split a character (a multi-byte
    one whose bytes came in separate tokens waits for its last byte): transformers' TextStreamer without its
    word buffering. `tokenizer`: anything with `decode(ids)`, or a function of the ids."""
    seen: list[int] = []
    shown, text = 0, ""
    for token in ids:
        seen.append(token)
        text = _decode(tokenizer, seen)
        end = decoding.printable(text, shown)
        if end > shown:
            yield text[shown:end]
            shown = end
    if len(text) > shown:
        yield text[shown:]


def _settings(info: dict, settings: dict) -> decoding.Options:
    """Options from generate's keyword settings, the model's EOS ids where none are given."""
    if settings.get("eos_token_id") is None:
        settings = {**settings, "eos_token_id": info.get("eos_token_id")}
    return decoding.options(**settings)


def _programs(folder: Path, info: dict, step_file: str, step: Session) -> dict[str, Session]:
    """The folder's decoding programs; those sharing the step's buffers take the weights they refer to from
    the loaded step (its file's header checked, its data not read again)."""
    loaded = {step_file: step.program}
    return {name: Session(artifact.load(folder / f"{name}.wgpt", loaded if name in SHARING else None))
            for name in info.get("programs", [])}


def _save_programs(folder: Path, programs: dict[str, Session], info: dict, step: str) -> dict:
    """Each decoding program saved beside the step's file `step`: those sharing its buffers refer to the
    constants it holds rather than holding them again."""
    for name, session in programs.items():
        session.save(folder / f"{name}.wgpt", beside=folder / step if name in SHARING else None)
    return {**info, "programs": [p for p in PROGRAMS if p in programs]}


def _read_info(path: Path, required=REQUIRED, optional=OPTIONAL) -> dict:
    try:
        info = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as e:
        raise ArtifactError(f"{path}: not JSON: {e}") from None
    return check_info(info, str(path), required, optional)


@dataclass
class CausalLM:
    step: Session
    info: dict  # max_length (the cache's rows), vocab_size, eos_token_id, programs
    timings: dict = field(default_factory=dict)  # compile seconds; "steps" and "host": the last generate's
    programs: dict[str, Session] = field(default_factory=dict)  # prefill, sampler, beams, reorder (PROGRAMS)

    def __post_init__(self):
        self.decoder = Decoder(self.step, **self.programs)

    def generate(self, prompt: list[int], max_new_tokens: int = 20, *, teacher: list[int] | None = None,
                 on_token: Callable[[int, float], None] | None = None, tokenizer=None, **settings) -> Generation:
        """Generate after `prompt` with transformers' settings (decoding.Options: do_sample, temperature, top_k,
        top_p, min_p, repetition_penalty, seed, num_beams, length_penalty, early_stopping, num_return_sequences,
        eos_token_id, stop_strings), stopping after EOS. With `teacher` (ids fed instead of the model's own
        choices, for a parity check) the logits of every step are recorded."""
        prompt, o = self._check(prompt, max_new_tokens, settings)
        out = generate(self.decoder, prompt, o, teacher=teacher, on_token=on_token, tokenizer=tokenizer)
        self.timings.update(steps=out.steps, host=out.host)
        return out

    def stream(self, prompt: list[int], max_new_tokens: int = 20, **settings) -> Iterator[int]:
        """The greedy or sampled ids after `prompt`, each as soon as the GPU has it (`text_stream` for text)."""
        prompt, o = self._check(prompt, max_new_tokens, settings)
        if o.num_beams > 1 or o.stop_strings:
            raise ValueError("stream() yields ids as they come: use generate() for beam search and stop_strings")
        self.decoder.require(o)
        return tokens(self.decoder, prompt, o)

    def _check(self, prompt, max_new_tokens: int, settings: dict) -> tuple[list[int], decoding.Options]:
        prompt = [int(t) for t in np.asarray(prompt).reshape(-1)]
        o = _settings(self.info, {**settings, "max_new_tokens": max_new_tokens})
        rows = len(prompt) + max_new_tokens - 1
        if rows > self.info["max_length"]:
            raise ValueError(f"{len(prompt)} prompt tokens and {max_new_tokens} new ones need {rows} cache rows; "
                             f"this step's cache holds {self.info['max_length']} (compile_step's max_length)")
        return prompt, o

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        self.step.save(folder / STEP)
        info = _save_programs(folder, self.programs, self.info, STEP)
        (folder / "causal_lm.json").write_text(json.dumps(info, indent=2))

    @staticmethod
    def load(folder: str | Path) -> CausalLM:
        folder = Path(folder)
        info = _read_info(folder / "causal_lm.json", ("max_length", "vocab_size"), ())
        step = Session.load(folder / STEP)
        return CausalLM(step, info, programs=_programs(folder, info, STEP, step))


@dataclass
class Seq2Seq:
    vision: Session
    encoder: Session
    decoder: Session
    info: dict  # layers, heads, head_dim, max_length, decoder_start_token_id, eos_token_id, forced_bos/eos_token_id
    timings: dict = field(default_factory=dict)  # compile seconds by stage; "decoder steps": the last generate's
    programs: dict[str, Session] = field(default_factory=dict)  # the decoder's prefill, sampler, beams, reorder

    def __post_init__(self):
        self.decoding = Decoder(self.decoder, **self.programs)

    def generate(self, pixel_values: np.ndarray, prompt_ids: np.ndarray, max_new_tokens: int = 20, *,
                 teacher: list[int] | None = None, on_token: Callable[[int, float], None] | None = None,
                 decoder_prompt: list[int] | None = None, tokenizer=None, **settings) -> Generation:
        """Generate after the decoder prompt (the decoder start token by default) with transformers' settings
        (CausalLM.generate's), stopping after EOS, with transformers' forced BOS/EOS tokens. With `teacher` the
        logits of every step are recorded."""
        info = self.info
        o = _settings(info, {**settings, "max_new_tokens": max_new_tokens})
        start = decoder_prompt or [info["decoder_start_token_id"]]
        if info.get("max_length") is not None and len(start) + max_new_tokens - 1 > info["max_length"]:
            raise ValueError(f"max_new_tokens={max_new_tokens}: the decoder's cache holds {info['max_length']} "
                             "tokens (compile_stages' max_new_tokens)")
        self.decoding.require(o)
        features = self.vision.on_device(pixel_values)  # queued: the first step's read waits for both
        cross = self.encoder.on_device(features, prompt_ids)
        out = generate(self.decoding, start, o, (cross,),
                       forced=lambda step: self._forced(len(start) + step, len(start) + max_new_tokens),
                       teacher=teacher, on_token=on_token,
                       tokenizer=tokenizer)
        self.timings["decoder steps"] = out.steps  # wall seconds per token (the first waits for the encoder)
        self.timings["decoder host"] = out.host
        return out

    def _forced(self, length: int, max_length: int) -> int | None:
        """transformers' forced-BOS/EOS logits processors: the token after the first of the decoder's sequence
        and the last before `max_length`, given the sequence's `length` so far."""
        if length == 1 and self.info.get("forced_bos_token_id") is not None:
            return self.info["forced_bos_token_id"]
        if length == max_length - 1 and self.info.get("forced_eos_token_id") is not None:
            return self.info["forced_eos_token_id"]
        return None

    def save(self, folder: str | Path) -> None:
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        for name in STAGES:
            getattr(self, name).save(folder / f"{name}.wgpt")
        info = _save_programs(folder, self.programs, self.info, DECODER)
        (folder / "seq2seq.json").write_text(json.dumps(info, indent=2))

    @staticmethod
    def load(folder: str | Path) -> Seq2Seq:
        folder = Path(folder)
        info = _read_info(folder / "seq2seq.json")
        vision, encoder, decoder = (Session.load(folder / f"{name}.wgpt") for name in STAGES)
        return Seq2Seq(vision, encoder, decoder, info, programs=_programs(folder, info, DECODER, decoder))
