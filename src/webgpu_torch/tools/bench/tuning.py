"""What checking candidates adds to tuning: a load from an empty tuning cache, every group timed.

Before it may be timed, each candidate runs on seeded inputs and its result is read back and compared with the
default's (runtime/tuning.py). That run replaces the warm-up run a scout made before checks existed, and its
result is read back in the run's own submit (the probe's outputs), so what the checks add is that read and
the comparison. This suite times each candidate's checked run and its comparison, against the tuning they
are part of, for small programs of the families that offer options: a two-layer MLP, a small BERT encoder, a
small Llama with int4 weights.
"""

from __future__ import annotations

import os
import tempfile
import time
from contextlib import contextmanager

import torch

import webgpu_torch

from ...runtime import tuning
from ...runtime.session import Session
from ..quiet_imports import import_torchao

COLUMNS = ["program", "groups", "comparisons", "tuning s", "checks add s", "share"]


def add_arguments(parser) -> None:
    parser.add_argument("--programs", nargs="*", default=["mlp", "bert", "llama_int4"])


def _mlp():
    model = torch.nn.Sequential(torch.nn.Linear(384, 1536), torch.nn.GELU(), torch.nn.Linear(1536, 384)).eval()
    return model, (torch.randn(128, 384),), {}


def _bert():
    from transformers import BertConfig, BertModel

    config = BertConfig(hidden_size=256, num_hidden_layers=2, num_attention_heads=4, intermediate_size=1024)
    return BertModel(config).eval(), (torch.randint(0, 1000, (1, 128)),), {}


def _llama_int4():
    import_torchao()
    from torchao.quantization import IntxWeightOnlyConfig, quantize_
    from torchao.quantization.granularity import PerGroup
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=512, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64)
    model = LlamaForCausalLM(config).eval()
    quantize_(model, IntxWeightOnlyConfig(weight_dtype=torch.int4, granularity=PerGroup(32)))
    return model, (torch.randint(0, 512, (1, 13)),), {"use_cache": False}


PROGRAMS = {"mlp": _mlp, "bert": _bert, "llama_int4": _llama_int4}


def run(args) -> tuple[list[dict], dict]:
    info = webgpu_torch.device_info(args.engine)
    rows = []
    for name in args.programs:
        torch.manual_seed(0)
        model, inputs, kwargs = PROGRAMS[name]()
        program = webgpu_torch.compile_module(model, inputs, kwargs).program
        groups = [g for g in tuning.groups(program) if program.dispatches[g[0]].result]
        runs, compares, tuned = [0, 0.0], [0, 0.0], [0, 0.0]
        with tempfile.TemporaryDirectory() as cache, _tuning_on(cache), _timed("Candidate", runs), \
                _timed("disagreement", compares), _timed("resolve", tuned):
            Session(program).executor(args.engine)
        added = runs[1] + compares[1]
        rows.append({"program": name, "groups": len(groups), "comparisons": compares[0], "tuning s": tuned[1],
                     "checks add s": added, "share": f"{100 * added / tuned[1]:.1f}%"})
    return rows, {"title": "Tuning from an empty cache, every group timed: what checking candidates adds",
                  "baseline": "the same load's whole tuning time",
                  "device": f"{info['adapter']} via {info['engine_module']} ({info['backend']})"}


@contextmanager
def _timed(name: str, spent: list):
    """tuning's function (or class) `name`, its calls counted in spent[0] and their seconds added to spent[1].
    A Candidate's seconds are its build, its run and the read of its result: an upper bound on what the check
    adds, since the run stands for the warm-up run a scout made before checks existed."""
    fn = getattr(tuning, name)

    def timed(*args, **kwargs):
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            spent[0] += 1
            spent[1] += time.perf_counter() - start

    setattr(tuning, name, timed)
    try:
        yield
    finally:
        setattr(tuning, name, fn)


@contextmanager
def _tuning_on(cache: str):
    """Tuning on, into an empty cache, with a budget that times every group."""
    settings = {tuning.TUNE_VAR: "1", tuning.CACHE_VAR: os.path.join(cache, "tuning.json"), tuning.BUDGET_VAR: "3600"}
    saved = {k: os.environ.get(k) for k in settings}
    os.environ.update(settings)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
