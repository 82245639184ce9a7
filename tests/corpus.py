"""The model corpus: artifacts of real models with their inputs and the Python runtime's outputs, written by
tests/test_corpus.py, tests/test_florence2.py, tests/test_half.py and tests/test_quantized.py (an int4 Llama)
for the JavaScript runtime's tests (js/test/corpus.test.js) to run and match. Files (in the golden corpus's
form, tests/golden/README.md):

    NAME.wgpt, NAME.json                  a program and its calls: args, kwargs, outputs
    florence2_tiny/                       a Seq2Seq folder (generation.py) and generate.json: pixel_values,
                                          prompt_ids, max_new_tokens, the ids Python generated and, with
                                          those ids as the teacher, each step's logits ([steps, vocab])
    llama_tiny/                           a CausalLM folder and generate.json: prompt_ids (a list of ids),
                                          max_new_tokens, ids and logits as above
    llama_tiny_beams/, florence2_tiny_beams/  folders compiled for beam search, whose generate.json holds no
                                          greedy ids: only strategies
    llama_tiny_chat/                      a CausalLM folder with a chat tokenizer (chat_fixture.py) and
                                          chat.json: a conversation's turns, each a chat completion request
                                          with its prompt_ids, ids, content and finish_reason as Python gave them

A generate.json's `strategies` are other generations of the same prompt: each its `settings` (decoding.Options'
keywords) and the `sequences` and `scores` Python generated (Generation's).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import torch

from webgpu_torch.format import tree

from .golden.make import tensor_json

ROOT = Path(__file__).resolve().parent.parent
VAR = "WEBGPU_TORCH_CORPUS"


def folder() -> Path:
    path = Path(os.environ.get(VAR) or ROOT / "build" / "corpus")
    path.mkdir(parents=True, exist_ok=True)
    return path


def _value(v):
    if isinstance(v, torch.Tensor):
        return tensor_json(v)
    if isinstance(v, np.ndarray):
        return tensor_json(v)
    if isinstance(v, (tuple, list)):
        return [_value(x) for x in v]
    if isinstance(v, dict):
        return {k: _value(x) for k, x in v.items()}
    return v


def write(name: str, session, calls: list[tuple[tuple, dict, object]]) -> None:
    """Save `session` as NAME.wgpt with each call (args, kwargs, the outputs it gave) in NAME.json."""
    session.save(folder() / f"{name}.wgpt")
    records = [{"args": _value(list(args)), "kwargs": _value(kwargs),
                "outputs": [tensor_json(o if isinstance(o, torch.Tensor) else np.asarray(o), t.dtype) for o, t in
                            zip(tree.flatten(session.program.output_tree, out, "output"), session.program.outputs,
                                strict=True)]}
               for args, kwargs, out in calls]
    (folder() / f"{name}.json").write_text(json.dumps({"calls": records}) + "\n")


def write_generation(name: str, stages, pixels: np.ndarray, prompt: np.ndarray, new_tokens: int,
                     ids: list[int] | None, logits: list[np.ndarray] | None, strategies=()) -> None:
    stages.save(folder() / name)
    record = {"pixel_values": tensor_json(pixels), "prompt_ids": tensor_json(prompt)}
    _write_record(folder() / name, record, new_tokens, ids, logits, strategies)


def write_causal_lm(name: str, lm, prompt: list[int], new_tokens: int, ids: list[int] | None,
                    logits: list[np.ndarray] | None, strategies=()) -> None:
    lm.save(folder() / name)
    _write_record(folder() / name, {"prompt_ids": list(prompt)}, new_tokens, ids, logits, strategies)


def strategy(settings: dict, generation) -> dict:
    """A generate.json strategy: `settings` and what a generation.Generation with them gave."""
    return {"settings": settings, "sequences": generation.sequences, "scores": generation.scores}


def _write_record(path: Path, record: dict, new_tokens: int, ids, logits, strategies) -> None:
    record["max_new_tokens"] = new_tokens
    if ids is not None:
        record |= {"ids": ids, "logits": tensor_json(np.stack(logits))}
    record["strategies"] = list(strategies)
    (path / "generate.json").write_text(json.dumps(record) + "\n")
