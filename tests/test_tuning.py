"""Per-device autotuning: dispatches offer equivalent kernels as options, the runtime times them once, runs
the fastest, and remembers the choice across loads. A split-K GEMM and its reduction are one group, chosen as
a whole among splits of K (and none)."""

from __future__ import annotations

import json
import re
import struct
import subprocess
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler.ops import gemm
from webgpu_torch.format import artifact, packing
from webgpu_torch.format.errors import DeviceError, TuningWarning
from webgpu_torch.runtime import fit, tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.session import Session, open_executor

from .helpers import Fn, assert_close, seeded

pytestmark = pytest.mark.gemm


@pytest.fixture(autouse=True)
def _tuning_on(monkeypatch):
    """Tuning on, with a budget no compile on a loaded machine outlasts: the tests of the budget set their own."""
    monkeypatch.setenv(tuning.TUNE_VAR, "1")
    monkeypatch.setenv(tuning.BUDGET_VAR, "600")


def _linear_program():
    g = seeded("tuning")
    x, w, b = torch.randn(67, 36, generator=g), torch.randn(44, 36, generator=g), torch.randn(44, generator=g)
    fn = Fn(lambda x, w, b: torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b)))
    return webgpu_torch.compile_module(fn, (x, w, b)).program, (x, w, b), fn(x.double(), w.double(), b.double())


FAMILY = (*gemm.VEC4_BY_SIZE, *gemm.VEC4_TUNED_ONLY, *gemm.CPU_OPTIONS)


@pytest.mark.host
def test_gemm_offers_the_other_configurations():
    program, _, _ = _linear_program()
    (d,) = program.dispatches
    kernels = [program.kernels[o.kernel] for o in tuning.candidates(d)]
    names = [k.name for k in kernels]
    assert sorted(names) == sorted(f"gemm[{c}]+gelu" for c in FAMILY), names
    assert [k.targets for k in kernels if "cpu_" in k.name] == [("cpu",)] * len(gemm.CPU_OPTIONS)
    assert all(not k.targets for k in kernels if "cpu_" not in k.name)


@pytest.mark.host
def test_forced_configuration_offers_nothing():
    g = seeded("forced")
    x, w = torch.randn(5, 12, generator=g), torch.randn(12, 16, generator=g)
    session = webgpu_torch.compile_module(Fn(lambda x, w: x @ w), (x, w), gemm="vec4_64x64")
    assert all(not d.options for d in session.program.dispatches)


def test_choice_is_timed_once_then_read_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    program, args, ref = _linear_program()
    ex = open_executor(program)
    (d,) = ex.program.dispatches
    assert not d.options, "the executor runs a resolved program"
    cache = json.loads((tmp_path / "cache.json").read_text())
    (entries,) = cache.values()
    (choice,) = entries.values()
    assert choice in range(len(tuning.candidates(program.dispatches[0])))
    assert_close(Session(program)(*args), ref)

    def fail(*_):
        raise AssertionError("timed again despite the cache")

    monkeypatch.setattr(tuning, "_measure", fail)
    again = open_executor(_linear_program()[0])
    assert again.program.dispatches[0].kernel == d.kernel


def test_probes_bind_the_programs_constants_and_are_destroyed_once_chosen(monkeypatch, tmp_path):
    """A probe binds the program's constant buffers as uploaded for it, never copies (a vocabulary projection's
    probes held its weights once per candidate), and its own buffers are destroyed once its group is chosen."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    g = seeded("probe constants")
    linear, x = torch.nn.Linear(36, 44), torch.randn(67, 36, generator=g)
    probes, build = [], tuning.Executor

    def spied(*args, **kwargs):
        probes.append(build(*args, **kwargs))
        return probes[-1]

    monkeypatch.setattr(tuning, "Executor", spied)
    ex = open_executor(webgpu_torch.compile_module(linear, (x,)).program)
    constants = {id(b) for b in ex.constant_buffers().values()}
    assert len(probes) > 1 and len(constants) >= 2  # the weight and the bias at least
    for probe in probes:
        assert {id(probe.buffers[j]) for j in probe.program.constants} == constants
        assert [id(b) for b in probe.buffers] == [id(b) for b in probes[0].buffers]  # one copy for the group
        with pytest.raises(DeviceError, match="cannot run again: it was destroyed"):
            probe.run([])


def _last_option_with(name: str, fmt: str, value) -> tuple:
    """_linear_program's program with its last option's Params field `name` packed as `value` (struct format
    `fmt`), that option, the arguments and the reference."""
    program, args, ref = _linear_program()
    leader = program.dispatches[0]
    option = leader.options[-1]
    field = next(f for f in program.kernels[option.kernel].uniform.fields if f.name == name)
    uniform = bytearray(option.uniform)
    struct.pack_into(fmt, uniform, field.offset, value)
    changed = replace(option, uniform=bytes(uniform))
    return replace(program, dispatches=[replace(leader, options=(*leader.options[:-1], changed))]), changed, args, ref


def test_a_candidate_that_writes_nothing_does_not_pass_on_the_defaults_result(monkeypatch, tmp_path):
    """The candidates share the default's probe buffers: what they write is zeroed before each runs, so an option
    that stores nothing (here its Params say M = 0) reads zeros back, not the default's result, and is left out."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.TOP_VAR, "0")
    program, idle, args, ref = _last_option_with("M", "<I", 0)
    _scripted_times(monkeypatch, lambda k: 1e-4 if k == idle.kernel else 1e-3)
    session = Session(program)
    with pytest.warns(TuningWarning, match=r"its result differs from the default's"):
        chosen = session.executor().program.dispatches[0]
    assert chosen.kernel != idle.kernel or chosen.uniform != idle.uniform
    assert_close(session(*args), ref)


@pytest.mark.parametrize("index", range(len(FAMILY)))
def test_every_candidate_computes_the_same(index, monkeypatch, tmp_path):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    program, args, ref = _linear_program()
    (d,) = program.dispatches
    key = tuning.choice_key(program, [0], get_engine().name)
    device = tuning.device_key(get_engine())
    (tmp_path / "cache.json").write_text(json.dumps({device: {key: index}}))
    session = Session(program)
    assert session.executor().program.dispatches[0].kernel == tuning.candidates(d)[index].kernel
    assert_close(session(*args), ref)


def test_tuning_off_runs_the_default(monkeypatch):
    monkeypatch.setenv(tuning.TUNE_VAR, "0")
    program, _, _ = _linear_program()
    assert open_executor(program).program.dispatches == program.dispatches


@pytest.mark.host
@pytest.mark.parametrize("make", ["_linear_program", "_split_program"])
def test_options_survive_the_artifact(make, tmp_path):
    program, _, _ = globals()[make]()
    path = tmp_path / "p.wgpt"
    artifact.save(program, path)
    assert webgpu_torch.load(path).program.dispatches == program.dispatches


def _split_program():
    """A small output with a long K: the GEMM splits K, and a reduction sums the slices."""
    g = seeded("split")
    x, w, b = torch.randn(19, 1540, generator=g), torch.randn(37, 1540, generator=g), torch.randn(37, generator=g)
    fn = Fn(lambda x, w, b: torch.relu(torch.nn.functional.linear(x, w, b)))
    return webgpu_torch.compile_module(fn, (x, w, b)).program, (x, w, b), fn(x.double(), w.double(), b.double())


@pytest.mark.host
def test_a_split_gemm_and_its_reduction_are_one_group():
    program, _, _ = _split_program()
    gemm, reduction = program.dispatches  # the reduction applies bias and activation too
    assert tuning.groups(program) == [[0, 1]]
    assert reduction.follows == 1 and len(reduction.options) == len(gemm.options) > 4
    assert program.kernels[reduction.kernel].name == "gemm_split_sum+relu"
    plans = {(o.kernel, o.uniform) for o in tuning.candidates(gemm)}
    assert len(plans) == len(gemm.options) + 1, "every candidate is another configuration or split"
    assert any(o.grid == (1, 1, 1) for o in gemm.options), "one candidate does not split"


def test_every_split_candidate_computes_the_same(monkeypatch, tmp_path):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    program, args, ref = _split_program()
    key, device = tuning.choice_key(program, [0, 1], get_engine().name), tuning.device_key(get_engine())
    for index in range(len(program.dispatches[0].options) + 1):
        (tmp_path / "cache.json").write_text(json.dumps({device: {key: index}}))
        session = Session(program)
        chosen = [(d.kernel, d.grid) for d in session.executor().program.dispatches[:2]]
        assert chosen == [(o.kernel, o.grid) for o in (tuning.candidates(d)[index] for d in program.dispatches[:2])]
        assert_close(session(*args), ref)


def test_a_split_group_is_timed_as_a_whole(monkeypatch, tmp_path):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    program, args, ref = _split_program()
    session = Session(program)
    ex = session.executor()
    (entry,) = json.loads((tmp_path / "cache.json").read_text())[tuning.device_key(get_engine())].values()
    assert [d.kernel for d in ex.program.dispatches[:2]] == [
        tuning.candidates(d)[entry].kernel for d in program.dispatches[:2]]
    assert_close(session(*args), ref)


@pytest.mark.host
def test_a_follower_without_its_leader_is_refused():
    program, _, _ = _split_program()
    program.dispatches[0] = program.dispatches[0].choose(tuning.candidates(program.dispatches[0])[0])
    with pytest.raises(ValueError, match="follows no group leader"):
        program.check()


@pytest.mark.parametrize("entry", [7, "x", None])
def test_a_cache_entry_that_is_no_candidate_is_timed_again(entry, monkeypatch, tmp_path):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    program, args, ref = _linear_program()
    key = tuning.choice_key(program, [0], get_engine().name)
    device = tuning.device_key(get_engine())
    (tmp_path / "cache.json").write_text(json.dumps({device: {key: entry}}))
    session = Session(program)
    session.executor()
    assert json.loads((tmp_path / "cache.json").read_text())[device][key] in range(len(tuning.candidates(
        program.dispatches[0])))
    assert_close(session(*args), ref)


def test_a_subgroup_twin_is_timed_only_where_the_device_has_subgroups(tmp_path, monkeypatch):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    x = torch.randn(37, 96, generator=seeded("twin"))
    program = webgpu_torch.compile_module(torch.nn.LayerNorm(96), (x,)).program
    (d,) = program.dispatches
    assert [program.kernels[o.kernel].requires for o in tuning.candidates(d)] == [(), ("subgroups",)]
    assert tuning.usable(program, [0], set(), {}) == [0]
    assert tuning.usable(program, [0], {"subgroups"}, {}) == [0, 1]
    ex = open_executor(program)  # Dawn on lavapipe times both; wgpu-native takes the plain kernel untimed
    (chosen,) = ex.program.dispatches
    assert set(ex.program.kernels[chosen.kernel].requires) <= set(get_engine().device.features)
    assert_close(Session(program)(x), torch.nn.functional.layer_norm(x.double(), (96,)))


def test_a_spent_budget_leaves_groups_at_their_default_for_a_later_load(monkeypatch, tmp_path):
    """Untimed, a group runs its default, even where tuning would time an option shaped for the adapter first
    (a CPU adapter: this suite's lavapipe): no other candidate was checked against it."""
    cache = tmp_path / "cache.json"
    monkeypatch.setenv(tuning.CACHE_VAR, str(cache))
    monkeypatch.setenv(tuning.BUDGET_VAR, "0")
    program, args, ref = _linear_program()
    session = Session(program)
    chosen = session.executor().program.dispatches[0].kernel
    assert chosen == program.dispatches[0].kernel
    assert not cache.exists()
    assert_close(session(*args), ref)
    monkeypatch.setenv(tuning.BUDGET_VAR, "600")
    Session(program).executor()
    assert json.loads(cache.read_text())[tuning.device_key(get_engine())]


def test_only_the_best_ranked_candidates_are_timed(monkeypatch, tmp_path):
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.TOP_VAR, "3")
    program, _, _ = _split_program()
    timed = []
    probe = tuning._probe

    def spy(program, members, c):
        timed.append(c)
        return probe(program, members, c)

    monkeypatch.setattr(tuning, "_probe", spy)
    Session(program).executor()
    want = _ranked(program, [0, 1])[:3]
    # The default first (what the others are checked against), then the rest of the first three in rank order:
    # on a GPU its two neighbours; on a CPU adapter the two options targeting it.
    assert timed == [0, *(c for c in want if c != 0)] and 0 in want


def test_an_option_the_engine_refuses_is_never_chosen(monkeypatch, tmp_path):
    """A candidate whose kernel does not compile on this engine (a device-specific compiler bug, say) is
    dropped; the others are still timed and the program loads."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.TOP_VAR, "0")
    program, args, ref = _split_program()
    leader = program.dispatches[0]
    bad = leader.options[-1].kernel
    sources = list(program.sources)
    sources.append(sources[program.kernels[bad].source].replace("fn main(", "fn main(oops: , "))
    kernels = list(program.kernels)
    kernels[bad] = replace(kernels[bad], source=len(sources) - 1, engine_sources=())  # broken on every engine
    broken = replace(program, sources=sources, kernels=kernels)
    session = Session(broken)
    with pytest.warns(TuningWarning, match=rf"leaves out kernel {re.escape(kernels[bad].name)} for node .*: the "
                                           rf"{get_engine().name} engine refuses it: .*does not compile"):
        chosen = session.executor().program.dispatches[0].kernel
    assert chosen != bad
    assert_close(session(*args), ref)


def test_an_option_that_computes_other_numbers_is_never_chosen(monkeypatch, tmp_path):
    """A candidate whose result differs from the default's on the seeded inputs is left out, with a warning
    naming it, even where it runs fastest: here an option whose Params scale the product by 1.001, an error of
    about 1e-3 of the result's scale where float32 candidates must agree within 1e-4."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.TOP_VAR, "0")
    program, wrong, args, ref = _last_option_with("alpha", "<f", 1.001)
    _scripted_times(monkeypatch, lambda k: 1e-4 if k == wrong.kernel else 1e-3)
    session = Session(program)
    with pytest.warns(TuningWarning, match=rf"leaves out kernel {re.escape(program.kernels[wrong.kernel].name)} "
                                           r"for node linear: its result differs from the default's: off by up to"):
        chosen = session.executor().program.dispatches[0]
    assert chosen.kernel != wrong.kernel or chosen.uniform != wrong.uniform
    assert_close(session(*args), ref)


def test_a_split_softmax_row_agrees_with_its_subgroup_twin(monkeypatch, tmp_path):
    """A softmax over a vocabulary's row is split across workgroups, each slice's max and sum passed to the next
    dispatch as float32 words: the tuner compares the twin's within tolerance, as the floats they are. (Taken
    for integers, a last-bit difference left the twin out, with a warning, at every load of a sampler over
    32,000 tokens.)"""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    x = torch.randn(1, 32003, generator=seeded("vocabulary softmax")) * 4  # a prime: a ragged last slice
    fn = Fn(lambda x: torch.softmax(x, -1))
    session = webgpu_torch.compile_module(fn, (x,))
    kernels = [session.program.kernels[o.kernel].name for d in session.program.dispatches for o in d.options]
    assert any("slice_stats" in k and "+subgroups" in k for k in kernels), kernels
    with warnings.catch_warnings():
        warnings.simplefilter("error", TuningWarning)
        session.executor()
    assert_close(session(x), fn(x.double()))


DECISIONS = json.loads((Path(__file__).parent / "conformance" / "tuning_rules.json").read_text())


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["rank"], ids=str)
def test_decision_rank(case):
    assert tuning.candidate_order(case["workgroups"], case["targets"], case["kind"]) == case["order"]


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["probe_size"], ids=str)
def test_decision_probe_size(case):
    assert tuning.probe_size(case["timed"], case["elapsed"], case["budget"]) == case["size"]


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["keep"], ids=str)
def test_decision_keep(case):
    assert tuning.keep(case["scouted"]) == case["kept"]


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["repeats"], ids=str)
def test_decision_repeats(case):
    assert tuning.repeats(case["run"], case["fastest"], case["left"]) == case["repeats"]


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["seeded_words"], ids=str)
def test_decision_seeded_words(case):
    assert tuning.seeded_words(case["index"], case["count"]).tolist() == case["words"]


def _values(values: list, dtype: str) -> np.ndarray:
    return np.array([float(v) if isinstance(v, str) else v for v in values], dtype)


@pytest.mark.host
@pytest.mark.parametrize("case", DECISIONS["disagreement"], ids=str)
def test_decision_disagreement(case):
    want, got = (_values(case[k], case["dtype"]) for k in ("reference", "candidate"))
    assert (tuning.disagreement(want, got, case["tolerance"]) is None) == case["agrees"]


def test_the_first_probe_times_one_group_then_as_many_as_the_budget_holds(monkeypatch, tmp_path):
    """The first probe holds one group, later ones as many as the budget left holds at the time per group."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.BUDGET_VAR, "600")
    g = seeded("probes")
    x, *ws = (torch.randn(n, k, generator=g) for n, k in ((67, 36), (36, 44), (44, 53), (53, 29)))
    program = webgpu_torch.compile_module(Fn(lambda x, a, b, c: ((x @ a).relu() @ b).relu() @ c), (x, *ws)).program
    sizes = []
    fastest = tuning._fastest

    def spy(program, engine, constants, which, ranked, deadline):
        sizes.append(len(which))
        return fastest(program, engine, constants, which, ranked, deadline)

    monkeypatch.setattr(tuning, "_fastest", spy)
    Session(program).executor()
    assert sizes[0] == 1 and sum(sizes) == len(tuning.groups(program)) == 3, sizes


def _ranked(program, members):
    """The group's candidates in the order tuning times them on this suite's device."""
    engine = get_engine()
    return tuning.ranked_candidates(program, members, engine.device.features, engine.limits,
                                    fit.adapter_kind(engine.adapter.info))


def _scripted_times(monkeypatch, seconds):
    """Replaces per-dispatch timing with `seconds(kernel)` for each dispatch of kernel index `kernel` (a
    candidate's probe runs the program's own kernels); returns the calls made."""
    calls = []

    def fake(executor, samples=3, repeats=1, only=None, warm_up=True):
        calls.append((samples, repeats, warm_up))
        return [seconds(d.kernel) for d in executor.program.dispatches]

    monkeypatch.setattr(tuning, "dispatch_times", fake)
    return calls


def test_a_slow_candidate_is_scouted_once_and_never_measured(monkeypatch, tmp_path):
    """Each candidate runs once first (its check, then its scout); those over tuning.SLOWER times the fastest are
    not measured, so a tile that wastes most of its work (seconds a run on a CPU adapter) costs two runs, not
    SAMPLES x REPEATS."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.TOP_VAR, "0")
    program, _, _ = _linear_program()
    kernels = [o.kernel for o in tuning.candidates(program.dispatches[0])]
    slow, fast = kernels[0], kernels[-1]
    calls = _scripted_times(monkeypatch, lambda k: 10.0 if k == slow else 1e-4 if k == fast else 2e-4)
    ex = Session(program).executor()
    n = len(kernels)
    assert calls[:n] == [(1, 1, False)] * n  # the scouts, one candidate at a time, warm from their checks
    assert calls[n:] == [(1, tuning.REPEATS, False)] * (tuning.SAMPLES * (n - 1))  # all but the slow one
    assert ex.program.dispatches[0].kernel == fast


def test_candidates_past_the_span_are_measured_without_repeats(monkeypatch, tmp_path):
    """Repeats resolve runs shorter than a timestamp's quantum: when the fastest kept candidate's run alone
    spans tuning.SPAN, each sample runs every candidate once (a vocabulary projection on a CPU adapter spent
    half the budget on 8 repeats), whatever the budget left."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.BUDGET_VAR, "1000")
    program, _, _ = _linear_program()
    top = [tuning.candidates(program.dispatches[0])[c].kernel for c in _ranked(program, [0])[:4]]
    calls = _scripted_times(monkeypatch, lambda k: tuning.SPAN * (2 + top.index(k)))  # within SLOWER
    ex = Session(program).executor()
    assert calls == [(1, 1, False)] * 4 + [(1, 1, False)] * (tuning.SAMPLES * 4)
    assert ex.program.dispatches[0].kernel == top[0]


def test_a_probe_the_budget_cannot_measure_is_decided_by_its_scout(monkeypatch, tmp_path):
    """When one run of the candidates would not fit the budget left SAMPLES times, the scout decides: a load
    overruns its budget by a candidate's compile and scout, never by a measurement."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.BUDGET_VAR, "50")
    program, _, _ = _linear_program()
    top = [tuning.candidates(program.dispatches[0])[c].kernel for c in _ranked(program, [0])[:4]]
    calls = _scripted_times(monkeypatch, lambda k: 10.0 - top.index(k))  # within SLOWER, 3 x 34 s > 50 s
    ex = Session(program).executor()
    assert calls == [(1, 1, False)] * 4
    assert ex.program.dispatches[0].kernel == top[-1]


def test_no_candidate_is_begun_past_the_budget(monkeypatch, tmp_path):
    """A group whose candidates the budget cuts short stays untimed (its default runs and the cache has no
    entry): the load overruns by one candidate, not by the group's remaining compiles."""
    cache = tmp_path / "cache.json"
    monkeypatch.setenv(tuning.CACHE_VAR, str(cache))
    monkeypatch.setenv(tuning.BUDGET_VAR, "0.001")
    program, _, _ = _linear_program()
    calls = _scripted_times(monkeypatch, lambda k: 0.01)
    probe = tuning._probe

    def slow_compile(program, members, c):
        time.sleep(0.002)  # past the budget
        return probe(program, members, c)

    monkeypatch.setattr(tuning, "_probe", slow_compile)
    ex = Session(program).executor()
    assert calls == [(1, 1, False)] and not cache.exists()
    assert ex.program.dispatches[0].kernel == program.dispatches[0].kernel


DYNAMIC_STORAGES = {"float32": {}, "f16 weights": {"weights": "float16"}, "int8": {"weights": "int8"},
                    "int4": {"weights": "int4"}, "f16 activations": {"precision": "float16"},
                    "int4, gelu epilogue": {"weights": "int4", "gelu": True}}


def _dynamic_linear(gelu: bool = False, **options):
    """A Linear (then GELU, fused as the GEMM's epilogue, with `gelu`) over a dynamic number of rows (hint 67):
    its GEMM's options carry their own patches and count."""
    g = seeded("dynamic tuning")
    linear = torch.nn.Linear(36, 44).eval()
    with torch.no_grad():
        linear.weight.copy_(torch.randn(44, 36, generator=g))
    module = torch.nn.Sequential(linear, torch.nn.GELU()).eval() if gelu else linear
    x = torch.randn(67, 36, generator=g)
    rows = torch.export.Dim("rows", min=1, max=160)
    shapes = {"input": {0: rows}}
    program = webgpu_torch.compile_module(module, (x,), dynamic_shapes=shapes, **options).program
    return program, linear, g


@pytest.mark.host
def test_a_dynamic_gemm_offers_options_sized_as_it_is():
    program, _, _ = _dynamic_linear()
    (d,) = [d for d in program.dispatches if d.options]
    assert d.count is not None and all(o.count is not None and o.patches for o in d.options)
    assert [t.shape for t in d.result] == [(67, 44)]  # the result views at the hint: what the probe compares
    again = artifact.from_bytes(artifact.to_bytes(program))
    assert again.dispatches == program.dispatches


@pytest.mark.parametrize("storage", DYNAMIC_STORAGES)
def test_every_candidate_of_a_dynamic_gemm_computes_the_same_at_every_size(storage, monkeypatch, tmp_path):
    """Each candidate this device runs forced through the cache, at sizes on both sides of its tiles' edges,
    against the float64 reference of the weights the program holds (packed: rounded as it packs them; float16:
    rounded to half)."""
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    options = DYNAMIC_STORAGES[storage]
    program, linear, g = _dynamic_linear(**options)
    engine = get_engine()
    leader = next(i for i, d in enumerate(program.dispatches) if d.options)
    key, device = tuning.choice_key(program, [leader], engine.name), tuning.device_key(engine)
    weight = linear.weight.half().double() if options.get("weights") == "float16" else linear.weight.double()
    if program.packings:
        ((buffer, layout),) = program.packings.items()
        weight = torch.from_numpy(packing.dequantize(program.constants[buffer], layout)).double()
    tolerance = 2e-3 if storage == "f16 activations" else 1e-5  # activations stored in float16 between kernels
    for c in tuning.usable(program, [leader], engine.device.features, engine.limits):
        (tmp_path / "cache.json").write_text(json.dumps({device: {key: c}}))
        session = Session(program)
        chosen = session.executor().program.dispatches[leader]
        assert chosen.kernel == tuning.candidates(program.dispatches[leader])[c].kernel
        for rows in (1, 31, 67, 97, 160):
            x = torch.randn(rows, 36, generator=g)
            want = torch.nn.functional.linear(x.double(), weight, linear.bias.double())
            want = torch.nn.functional.gelu(want) if options.get("gelu") else want
            assert_close(session(x), want, tolerance, what=f"candidate {c}, {rows} rows")


def test_the_candidates_benchmark_times_each_candidate_of_a_group():
    """benchmarks/tuning_candidates.py: a split argmax's two candidates (rows split or whole), each timed."""
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "tuning_candidates.py"
    done = subprocess.run([sys.executable, str(script), "argmax", "2", "5003"], capture_output=True, text=True,
                          timeout=300, check=True)
    rows = [line for line in done.stdout.splitlines() if " ms  reduce[max+index," in line]
    assert len(rows) == 2 and {"5 slices]" in r for r in rows} == {True, False}, done.stdout
