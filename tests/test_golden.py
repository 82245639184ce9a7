"""The golden corpus (tests/golden/README.md): the Python runtime runs every valid artifact as the files say
and refuses every damaged one with the reason they give — as the JavaScript runtime must."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import numpy as np
import pytest

import webgpu_torch
from webgpu_torch.format import dtypes, tree
from webgpu_torch.format.errors import ArtifactError
from webgpu_torch.runtime import fit, tuning
from webgpu_torch.runtime.session import Session

from .helpers import TOLERANCE, assert_close

GOLDEN = Path(__file__).parent / "golden"
VALID = sorted(p.stem for p in GOLDEN.glob("*.wgpt"))
EXPECTED = json.loads((GOLDEN / "bad" / "expected.json").read_text())


def tensor(j: dict) -> np.ndarray:
    """A corpus tensor in its numpy host form (bfloat16: its bits, uint16)."""
    name = "uint16" if j["dtype"] == "bfloat16" else j["dtype"]
    dtype = np.dtype("bool" if name == "bool" else "<" + np.dtype(name).str[1:])
    return np.frombuffer(base64.b64decode(j["data"]), dtype).reshape(j["shape"])


# float16 and bfloat16 host forms (numpy float16, bfloat16's bits) as float32 values.
WIDEN = {"float16": lambda a: a.astype(np.float32), "bfloat16": dtypes.widen_bfloat16}


def check_output(got: np.ndarray, want: dict, what: str, looser: float = 0.0) -> None:
    """The README's rule; float16 and bfloat16 compared as values, within their tolerance; `looser` (a file's
    "tolerance") replaces a smaller float tolerance."""
    expected = tensor(want)
    widen = WIDEN.get(want["dtype"])
    if widen is None:
        assert_close(got, expected, max(TOLERANCE["float32"], looser), what=what)
        return
    assert got.dtype == expected.dtype, f"{what}: host form {got.dtype}, expected {expected.dtype}"
    assert_close(widen(got), widen(expected), max(TOLERANCE[want["dtype"]], looser), what=what)


def value(v):
    if isinstance(v, dict) and set(v) == {"dtype", "shape", "data"}:
        return tensor(v)
    if isinstance(v, list):
        return [value(x) for x in v]
    if isinstance(v, dict):
        return {k: value(x) for k, x in v.items()}
    return v


@pytest.mark.host
def test_the_corpus_covers_every_part_of_the_format():
    assert {"tiny", "mlp", "weights_f16", "float16", "bfloat16", "activations_f16", "precision_f16", "options",
            "dynamic", "structured", "portable", "integers_as_floats", "state"} <= set(VALID)
    assert len(EXPECTED) == len(list((GOLDEN / "bad").glob("*.wgpt"))) >= 100


@pytest.mark.host
@pytest.mark.parametrize("name", VALID)
def test_valid_artifacts_load_without_a_device(name):
    webgpu_torch.load(GOLDEN / f"{name}.wgpt")


@pytest.mark.e2e
@pytest.mark.parametrize("name", VALID)
def test_valid_artifacts_give_the_recorded_outputs(name):
    session = webgpu_torch.load(GOLDEN / f"{name}.wgpt")
    recorded = json.loads((GOLDEN / f"{name}.json").read_text())
    for n, call in enumerate(recorded["calls"]):
        if call.get("reset_state"):
            session.reset_state()
        elif "error" in call:  # an index out of range: the call raises, the next one runs
            with pytest.raises(webgpu_torch.DeviceIndexError, match=call["error"]):
                session(*value(call["args"]), **value(call["kwargs"]))
        else:
            out = session(*value(call["args"]), **value(call["kwargs"]))
            leaves = tree.flatten(session.program.output_tree, out, "output")
            assert len(leaves) == len(call["outputs"])
            for k, (got, want) in enumerate(zip(leaves, call["outputs"], strict=True)):
                check_output(got, want, f"{name} call {n} output {k}", recorded.get("tolerance", 0.0))
        assert sorted(call.get("states", {})) == sorted(session.states)
        for state, want in call.get("states", {}).items():
            check_output(session.read_state(state), want, f"{name} call {n} state {state}")


@pytest.mark.e2e
@pytest.mark.parametrize("name", ["weights_f16", "float16", "activations_f16"])
def test_float16_artifacts_give_the_recorded_outputs_without_shader_f16(name):
    """The fallback kernels over widened constants (and scratch buffers sized for them) run the same file."""
    program = fit.without_f16(webgpu_torch.load(GOLDEN / f"{name}.wgpt").program)
    assert not any("shader-f16" in program.kernels[d.kernel].requires for d in program.dispatches)
    session = Session(program)
    recorded = json.loads((GOLDEN / f"{name}.json").read_text())
    for call in recorded["calls"]:
        out = session(*value(call["args"]), **value(call["kwargs"]))
        for k, (got, want) in enumerate(zip(tree.flatten(program.output_tree, out, "output"), call["outputs"],
                                            strict=True)):
            check_output(got, want, f"{name} output {k}", recorded.get("tolerance", 0.0))


@pytest.mark.host
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_damaged_artifacts_are_refused_with_the_recorded_reason(name):
    with pytest.raises(ArtifactError, match=re.escape(EXPECTED[name])):
        webgpu_torch.load(GOLDEN / "bad" / f"{name}.wgpt")


@pytest.mark.gemm
@pytest.mark.parametrize("name", ["portable", "precision_f16", "dynamic"])
def test_tuned_a_file_whose_options_need_unknown_or_missing_features_runs(name, monkeypatch, tmp_path):
    """Tuning skips the options this device cannot run (a feature no runtime knows, one the device lacks), and
    times a dynamic dispatch's options at the hint: whichever wins gives the outputs at every size."""
    monkeypatch.setenv(tuning.TUNE_VAR, "1")
    monkeypatch.setenv(tuning.CACHE_VAR, str(tmp_path / "cache.json"))
    test_valid_artifacts_give_the_recorded_outputs(name)


def test_a_constant_argument_must_be_the_exported_value():
    session = webgpu_torch.load(GOLDEN / "structured.wgpt")
    call = json.loads((GOLDEN / "structured.json").read_text())["calls"][0]
    args = value(call["args"])
    session(*args)  # constant keyword arguments may be left out
    with pytest.raises(webgpu_torch.WebGPUTorchError, match=r"exported with 2.0 here.*got 3.0"):
        session(*args, scale=3.0)
    with pytest.raises(webgpu_torch.WebGPUTorchError, match=r"exported with True here.*got 1"):
        session(*args, flag=1)
