"""The device side of decoding strategies, compiled from torch by this compiler like any model, each a program
of a model folder beside its decoder step (docs/artifact.md, "Decoding programs"):

    sampler   logits [1, 1, V], ids [1, n], params [5], uniform [1]  -> token [1, 1]
              state: seen [1, V], the tokens of the sequence so far (repetition penalty)
    beams     logits [B, 1, V], scores [B], forced [1]              -> the top K of scores + log_softmax over
              all beams: values [1, K], flat indices beam · V + token [1, K]
    reorder   beams [B]                                             -> beams; every cache state's batch row b
              replaced by row beams[b] (it shares the step's states)

The sampler applies transformers' processors in transformers' order (RepetitionPenalty, then the warpers
Temperature, TopK, TopP, MinP: generation/logits_process.py) with their values as inputs, so one program serves
every setting (a processor at its neutral value changes nothing), then draws by inverse CDF: the first token, in
vocabulary order, whose cumulative probability exceeds `uniform` (drawn on the host: decoding.uniforms). Only
the chosen id leaves the GPU.
"""

from __future__ import annotations

import torch
from torch.export import Dim

NEG_INF = float("-inf")


class Sampler(torch.nn.Module):
    def __init__(self, vocab_size: int):
        super().__init__()
        self.register_buffer("seen", torch.zeros(1, vocab_size), persistent=False)

    def forward(self, logits, ids, params, uniform):
        """`ids`: tokens now in the sequence (the prompt at first, then any the host placed; marking one again
        changes nothing); the chosen token is marked too. `params`: decoding.Options.sampler_params."""
        seen = self.seen.scatter(1, ids, 1.0)
        cdf = self.distribution(logits, seen, params).cumsum(-1)
        token = (cdf <= uniform * cdf[:, -1:]).sum(-1, keepdim=True)
        self.seen.copy_(seen.scatter(1, token, 1.0))
        return token

    def distribution(self, logits, seen, params):
        """transformers' sampling distribution [1, V] for these logits, `seen` tokens and settings."""
        temperature, top_k, top_p, min_p, penalty = params.unbind()
        scores = logits.reshape(1, seen.shape[-1])
        scores = torch.where(seen > 0, torch.where(scores < 0, scores * penalty, scores / penalty), scores)
        scores = _top_k_and_p(scores / temperature, top_k, top_p)
        probs = scores.softmax(-1)
        return scores.masked_fill(probs < min_p * probs.amax(-1, keepdim=True), NEG_INF).softmax(-1)


def _top_k_and_p(scores, k, p):
    """TopKLogitsWarper (keep the scores at least the k-th largest; k 0: all), then TopPLogitsWarper (drop the
    least likely tokens whose probabilities sum to at most 1 - p; the most likely always kept), over one stable
    ascending sort where each warper sorts on its own. TopP's sort of the top-k scores orders the survivors as
    this one does, and the rest (-inf after TopK, probability 0 either way) before them: the same cumulative
    sums, position for position. Those sums do not decrease (but by a rounding where a parallel scan's partial
    sums meet: a token that close to the cut may fall on either side, as under any other order of summing than
    transformers' own), so TopP drops the first `cut` places of the sort: the tokens ordered before the token
    in place `cut` by (score, id), as a stable sort orders them."""
    vocab = scores.shape[-1]
    ascending, order = scores.sort(-1)
    k = torch.where(k > 0, k.clamp(max=vocab), vocab).long().reshape(1, 1)
    kth = ascending.gather(1, vocab - k)
    sums = ascending.masked_fill(ascending < kth, NEG_INF).softmax(-1).cumsum(-1)
    cut = (sums <= 1 - p).sum(-1, keepdim=True).clamp(max=vocab - 1)
    score, token = ascending.gather(1, cut), order.gather(1, cut)
    before = (scores < score) | ((scores == score) & (torch.arange(vocab) < token))
    return scores.masked_fill((scores < kth) | before, NEG_INF)


class BeamScores(torch.nn.Module):
    """One beam search step's device work: log_softmax of each beam's logits, transformers' forced-token
    processor (`forced` >= 0: every other token -inf, that one 0), plus each beam's running score, and the top
    `keep` over all beams and tokens."""

    def __init__(self, keep: int):
        super().__init__()
        self.keep = keep

    def forward(self, logits, scores, forced):
        beams, vocab = logits.shape[0], logits.shape[-1]
        log_probs = logits.reshape(beams, vocab).log_softmax(-1)
        only = torch.where(torch.arange(vocab) == forced, 0.0, NEG_INF)
        log_probs = torch.where(forced >= 0, only, log_probs)
        return (log_probs + scores[:, None]).reshape(1, -1).topk(self.keep, -1)


class CacheReorder(torch.nn.Module):
    """Each of `cache`'s buffers (a decoder stage's CacheBuffers, the same names as its step's states) gathered
    along its batch dim by `beams`."""

    def __init__(self, cache):
        super().__init__()
        self.cache = cache

    def forward(self, beams):
        for _, buffer in self.cache.named_buffers():
            buffer.copy_(buffer.index_select(0, beams))
        return beams


def compile_programs(cache, vocab_size: int, num_beams: int, max_length: int, eos_ids: int) -> dict:
    """The decoding programs a decoder over `cache` (its stage's CacheBuffers) needs beside its step and prefill:
    a sampler for one beam; for several, the beams program (the top K for up to `eos_ids` EOS ids, as
    decoding.BeamSearch.keep) and the cache reorder. Float32 whatever the model's options."""
    import webgpu_torch

    with torch.no_grad():
        if num_beams == 1:
            ids = Dim("ids", min=1, max=max_length)
            example = (torch.zeros(1, 1, vocab_size), torch.tensor([[0, 1]]), torch.tensor([1.0, 50, 1, 0, 1]),
                       torch.tensor([0.5]))
            return {"sampler": webgpu_torch.compile_module(Sampler(vocab_size), example,
                                                           dynamic_shapes=(None, {1: ids}, None, None))}
        keep = max(2, 1 + eos_ids) * num_beams
        beams = webgpu_torch.compile_module(BeamScores(keep), (torch.zeros(num_beams, 1, vocab_size),
                                                               torch.zeros(num_beams), torch.tensor([-1])))
        reorder = webgpu_torch.compile_module(CacheReorder(cache), (torch.arange(num_beams),))
        return {"beams": beams, "reorder": reorder}


def eos_count(eos) -> int:
    """How many EOS ids a generation config's eos_token_id names (an id, a list or None)."""
    return 0 if eos is None else 1 if isinstance(eos, int) else len(eos)
