"""Per-device autotuning: dispatches offer equivalent kernels as options, the runtime times them once, runs
the fastest, and remembers the choice across loads. A split-K GEMM and its reduction are one group, chosen as
a whole among splits of K (and none)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
import torch

import webgpu_torch
from webgpu_torch import artifact
from webgpu_torch.ops import gemm
from webgpu_torch.runtime import tuning
from webgpu_torch.runtime.engine import get_engine
from webgpu_torch.runtime.session import Session, open_executor

from .helpers import Fn, assert_close, seeded

pytestmark = pytest.mark.gemm


@pytest.fixture(autouse=True)
def _tuning_on(monkeypatch):
    monkeypatch.setenv(tuning.TUNE_VAR, "1")


def _linear_program():
    g = seeded("tuning")
    x, w, b = torch.randn(67, 36, generator=g), torch.randn(44, 36, generator=g), torch.randn(44, generator=g)
    fn = Fn(lambda x, w, b: torch.nn.functional.gelu(torch.nn.functional.linear(x, w, b)))
    return webgpu_torch.compile_module(fn, (x, w, b)).program, (x, w, b), fn(x.double(), w.double(), b.double())


@pytest.mark.host
def test_gemm_offers_the_other_configurations():
    program, _, _ = _linear_program()
    (d,) = program.dispatches
    names = [program.kernels[o.kernel].name for o in tuning.candidates(d)]
    family = len(gemm.VEC4_BY_SIZE + gemm.VEC4_TUNED_ONLY)
    assert len(names) == family and len(set(names)) == family and all(n.startswith("gemm[vec4_") for n in names), names


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


@pytest.mark.parametrize("index", range(len(gemm.VEC4_BY_SIZE + gemm.VEC4_TUNED_ONLY)))
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


def test_a_spent_budget_leaves_groups_at_their_defaults_for_a_later_load(monkeypatch, tmp_path):
    cache = tmp_path / "cache.json"
    monkeypatch.setenv(tuning.CACHE_VAR, str(cache))
    monkeypatch.setenv(tuning.BUDGET_VAR, "0")
    program, args, ref = _linear_program()
    session = Session(program)
    assert session.executor().program.dispatches[0].kernel == program.dispatches[0].kernel
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

    def spy(program, which, ranked):
        timed.extend(ranked)
        return probe(program, which, ranked)

    monkeypatch.setattr(tuning, "_probe", spy)
    Session(program).executor()
    assert timed and all(len(c) == 3 and c[0] == 0 for c in timed)  # the default, then two neighbours


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
    chosen = session.executor().program.dispatches[0].kernel
    assert chosen != bad
    assert_close(session(*args), ref)


def test_the_first_probe_times_one_group_then_as_many_as_the_budget_holds(monkeypatch, tmp_path):
    """A probe compiles every candidate before timing any, so the first holds one group: a cold shader cache
    on a software adapter then overruns the budget by one group's kernels, not a whole program's."""
    assert tuning.probe_size(0, 0.0, 5.0) == 1
    assert tuning.probe_size(1, 1.0, 5.0) == 4  # 4 s left at 1 s a group
    assert tuning.probe_size(2, 0.5, 5.0) == tuning.GROUPS_PER_PROBE
    assert tuning.probe_size(1, 4.9, 5.0) == 1
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    monkeypatch.setenv(tuning.BUDGET_VAR, "600")
    g = seeded("probes")
    x, *ws = (torch.randn(n, k, generator=g) for n, k in ((67, 36), (36, 44), (44, 53), (53, 29)))
    program = webgpu_torch.compile_module(Fn(lambda x, a, b, c: ((x @ a).relu() @ b).relu() @ c), (x, *ws)).program
    sizes = []
    probe = tuning._probe

    def spy(program, which, ranked):
        sizes.append(len(which))
        return probe(program, which, ranked)

    monkeypatch.setattr(tuning, "_probe", spy)
    Session(program).executor()
    assert sizes[0] == 1 and sum(sizes) == len(tuning.groups(program)) == 3, sizes
