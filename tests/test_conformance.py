"""The conformance corpus (tests/conformance/README.md): the Python runtime's decisions on the shared vectors,
which js/test/conformance.test.js replays for the JavaScript runtime. GPU-free."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from webgpu_torch.format import artifact, compile_cost, limits, program, symbolic, tree
from webgpu_torch.format.errors import ArtifactError, DeviceError
from webgpu_torch.runtime import decoding, executor, fit, generation, memory, session, tuning

from .conformance.make import StandInStages, python_limits

HERE = Path(__file__).parent / "conformance"
GOLDEN = Path(__file__).parent / "golden"

pytestmark = pytest.mark.host


def _vectors(name: str) -> dict:
    return json.loads((HERE / f"{name}.json").read_text())


def test_limits_js_is_generated_from_limits_json():
    assert (Path(__file__).parent.parent / "js" / "src" / "limits.js").read_text() == limits.js_module(), (
        "js/src/limits.js is stale: run python -m tests.golden.make")


def test_expressions():
    v = _vectors("expressions")
    symbols = {n: symbolic.Symbol(n, s["lo"], s["hi"], s["hint"], "") for n, s in v["symbols"].items()}

    def read(e):
        return symbolic.from_json(e, symbols)

    for case in v["evaluate"]:
        assert symbolic.evaluate(read(case["expr"]), case["env"]) == case["value"], case
        assert symbolic.compiled(read(case["expr"]))(case["env"]) == case["value"], case
    for case in v["bounds"]:
        assert list(symbolic.bounds(read(case["expr"]))) == case["bounds"], case
    for case in v["problems"]:
        with pytest.raises(ValueError, match=case["error"]):
            symbolic.bounds(read(case["expr"]))
    for case in v["fold_grid"]:
        assert list(program.fold_grid(case["count"])) == case["grid"], case


@pytest.mark.parametrize("case", _vectors("tuning")["files"], ids=lambda c: c["file"])
def test_tuning_groups_keys_and_ranking(case):
    p = artifact.load(GOLDEN / f"{case['file']}.wgpt")
    groups = tuning.groups(p)
    assert groups == case["groups"]
    for engine, keys in case["keys"].items():
        assert [tuning.choice_key(p, g, engine) for g in groups] == keys, engine
    for device in case["devices"]:
        fitted = fit.for_device(p, set(device["features"]))
        got = [tuning.ranked_candidates(fitted, g, device["features"], python_limits(device["limits"]))
               for g in groups]
        assert got == device["ranked"], device["about"]


def test_probe_sizes():
    for case in _vectors("tuning")["probe_size"]:
        assert tuning.probe_size(case["timed"], case["elapsed"], case["budget"]) == case["size"], case


def test_input_binding():
    for case in _vectors("inputs")["bind"]:
        p = artifact.load(GOLDEN / f"{case['file']}.wgpt")
        values = [SimpleNamespace(shape=tuple(s)) for s in case["shapes"]]
        if "error" in case:
            with pytest.raises(Exception, match=_literal(case["error"])):
                session.bind(p, values)
        else:
            assert session.bind(p, values) == case["env"]


def _literal(text: str) -> str:
    import re

    return re.escape(text)


def test_output_readback_and_device_tensor_passing():
    v = _vectors("outputs")
    for case in v["readback"]:
        p = artifact.load(GOLDEN / f"{case['file']}.wgpt")
        for t, want in zip(p.outputs, case["outputs"], strict=True):
            view, start, size = executor.readback(t, case["env"])
            got = {"shape": list(view.shape), "strides": list(view.strides), "start": start, "size": size,
                   "first": view.offset - start // 4, "contiguous": view.is_contiguous()}
            assert got == want, case["file"]
    for case in v["contiguous"]:
        assert program.Tensor(0, tuple(case["shape"]), tuple(case["strides"])).is_contiguous() == case["contiguous"]


def test_generation_info_and_stopping_rules():
    v = _vectors("generation")
    for case in v["info"]:
        if "error" in case:
            with pytest.raises(ArtifactError, match=_literal(case["error"])):
                generation.check_info(case["info"], "seq2seq.json")
        else:
            generation.check_info(case["info"], "seq2seq.json")
    for case in v["generate"]:
        stage = StandInStages(case["chosen"])
        model = generation.Seq2Seq(stage, stage, stage, case["info"])
        ids = model.generate(np.zeros((1, 3, 4, 4), np.float32), np.zeros((1, 2), np.int64),
                             max_new_tokens=case["max_new_tokens"]).ids
        assert ids == case["ids"], case


def test_generation_draws_settings_and_stop_strings():
    v = _vectors("generation")
    for case in v["uniforms"]:
        draws = decoding.uniforms(int(case["seed"]))
        assert [next(draws) for _ in case["draws"]] == case["draws"], case
    for case in v["settings"]:
        if "error" in case:
            with pytest.raises(ValueError, match=_literal(case["error"])):
                decoding.options(**case["settings"])
        else:
            assert decoding.options(**case["settings"]).sampler_params() == case["params"], case
    for case in v["stops"]:
        assert decoding.completes_stop(case["text"], len(case["before"]), case["stop_strings"]) == case["stops"], case
    for case in v["streams"]:
        texts = iter(case["texts"])
        decode = lambda ids, texts=texts: next(texts)  # noqa: E731  (the stream's successive decodings)
        assert list(generation.text_stream(range(len(case["texts"])), decode)) == case["pieces"]


def test_beam_search_bookkeeping():
    for case in _vectors("generation")["beams"]:
        search = decoding.BeamSearch(case["num_beams"], case["vocab_size"], case["max_new_tokens"], tuple(case["eos"]),
                                     case["length_penalty"], case["early_stopping"])
        for step in case["steps"]:
            assert search.keep == len(step["indices"]) and not search.done
            assert search.step(step["values"], step["indices"]) == (step["tokens"], step["beams"]), (case, step)
            assert search.done == step["done"]
        results = search.results(case["num_beams"])
        assert [h.tokens for h in results] == case["sequences"] and [h.score for h in results] == case["scores"]


def test_compile_cost():
    for case in _vectors("compile_cost")["cases"]:
        assert compile_cost.problem(case["source"]) == case["problem"], case["about"]


def test_output_classes():
    for case in _vectors("classes")["cases"]:
        got = tree.class_problem(case["node"])
        assert (got is None) if case["problem"] is None else case["problem"] in got, case["node"]


def test_memory_cap():
    for case in _vectors("memory")["cases"]:
        assert vars(memory.decide(case["kind"], case["device_local"], case["rooms"])) == case["cap"], case


def test_first_call_timeout():
    for case in _vectors("timeouts")["first_call"]:
        p = artifact.load(GOLDEN / f"{case['file']}.wgpt")
        assert executor.first_call_seconds(p, case["engine"], case["timeout"]) == case["seconds"], case


def test_a_program_needing_a_feature_the_device_lacks_is_refused_by_name():
    p = artifact.load(GOLDEN / "precision_f16.wgpt")
    forced = tuning.force(p, lambda k: program.SUBGROUP_MATRIX in k.requires)
    assert program.SUBGROUP_MATRIX in forced.requires
    with pytest.raises(Exception, match="needs the chromium-experimental-subgroup-matrix, subgroups features, "
                                        "which this device lacks"):
        fit.for_device(forced, {"shader-f16"})
    reread = artifact.from_bytes(artifact.to_bytes(forced))
    assert reread.requires == forced.requires


@pytest.mark.parametrize("case", _vectors("device_fit")["adapters"], ids=str)
def test_adapter_kind(case):
    assert fit.adapter_kind(case["info"]) == case["kind"]


@pytest.mark.parametrize("case", _vectors("device_fit")["fits"], ids=lambda c: f"{c['file']}: {c['about']}")
def test_device_fit(case):
    """A golden file as a device runs it (features, limits, the memory cap): its buffers and kernels, or why not."""
    try:
        fitted = fit.for_device(artifact.load(GOLDEN / f"{case['file']}.wgpt"), set(case["features"]))
        problem = fit.limit_problem(fitted, python_limits(case["limits"]), SimpleNamespace(**case["cap"]))
    except DeviceError as e:
        problem = str(e)
    if "refused" in case:
        assert problem == case["refused"]
        return
    assert problem is None
    assert [b.size for b in fitted.buffers] == case["buffers"]
    assert [d.kernel for d in fitted.dispatches] == case["kernels"]
    assert [[o.kernel for o in d.options] for d in fitted.dispatches] == case["options"]


def test_the_header_schema_says_of_each_golden_header_what_the_corpus_records():
    from .conformance.make import headers
    from .schema import problems

    recorded = {c["file"]: c["valid"] for c in _vectors("schema")["headers"]}
    found = headers()
    assert set(recorded) == set(found)
    assert all(recorded[f"{name}.wgpt"] for name in (p.stem for p in GOLDEN.glob("*.wgpt"))), "a valid file fails"
    for name, header in found.items():
        assert (not problems(header)) == recorded[name], (name, problems(header))
