"""Greedy generation with an encoder-decoder's compiled stages, the KV caches kept on the GPU. No torch.

A `Seq2Seq` holds three programs — `vision` (pixels -> image features), `encoder` (image features and prompt
ids -> every decoder layer's cross-attention keys and values) and `decoder` (one token, the self-attention
cache, the cross K/V -> logits, the greedy next token, the grown cache) — and the token ids generation needs.
Between decoder steps the cache and the cross K/V stay DeviceTensors: each step uploads one token id and
reads back one (or, for a parity check, the logits as well). The folder's `seq2seq.json` and the stopping
rules are docs/artifact.md's "Seq2Seq folders", which js/src/generation.js follows too.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ArtifactError
from .runtime.session import Session

STAGES = ("vision", "encoder", "decoder")
REQUIRED = ("layers", "heads", "head_dim", "decoder_start_token_id")  # integers
OPTIONAL = ("eos_token_id", "forced_bos_token_id", "forced_eos_token_id")  # integers, null or absent


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
class Seq2Seq:
    vision: Session
    encoder: Session
    decoder: Session
    info: dict  # layers, heads, head_dim, decoder_start_token_id, eos_token_id, forced_bos/eos_token_id
    timings: dict = field(default_factory=dict)  # compile seconds by stage; "decoder steps": the last generate's

    def generate(self, pixel_values: np.ndarray, prompt_ids: np.ndarray, max_new_tokens: int = 20,
                 teacher: list[int] | None = None) -> tuple[list[int], list[np.ndarray]]:
        """Greedy ids after the decoder start token (stopping after EOS), and with `teacher` (ids to feed
        instead of the model's own choices, for a parity check) the logits of every step."""
        features = self.vision.on_device(pixel_values)  # queued: the first step's read waits for both
        cross = self.encoder.on_device(features, prompt_ids)
        info = self.info
        past = [np.zeros((1, info["heads"], 0, info["head_dim"]), np.float32)] * (2 * info["layers"])
        token, ids, logits, steps = info["decoder_start_token_id"], [], [], []
        for step in range(max_new_tokens):
            t0 = time.perf_counter()
            # The caches stay on the GPU; the token (and with a teacher, the logits) come back in the same submit.
            keep = [1 if teacher is not None else 0, *range(2, 2 + len(past))]  # outputs: logits, token, caches
            out, chosen, past = self.decoder.run((np.array([[token]], np.int64), past, cross), keep_on_device=keep)
            if teacher is not None:
                logits.append(np.asarray(out).reshape(-1))
                token = teacher[step]
            else:
                token = self._forced(step, max_new_tokens, int(np.asarray(chosen).reshape(-1)[0]))
            steps.append(time.perf_counter() - t0)
            ids.append(token)
            if teacher is None and token == info.get("eos_token_id"):  # none: run to max_new_tokens
                break
        self.timings["decoder steps"] = steps  # wall seconds per step (the first also waits for vision+encoder)
        return ids, logits

    def _forced(self, step: int, max_new_tokens: int, token: int) -> int:
        """transformers' forced-BOS/EOS logits processors: the first token, and the last before the limit."""
        if step == 0 and self.info.get("forced_bos_token_id") is not None:
            return self.info["forced_bos_token_id"]
        if step == max_new_tokens - 1 and self.info.get("forced_eos_token_id") is not None:
            return self.info["forced_eos_token_id"]
        return token

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
