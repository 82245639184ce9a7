"""The saved artifact: round trip in a process without torch, and clear errors for damaged files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch.compiler import wgsl
from webgpu_torch.format import artifact, program

from .helpers import assert_close

BLOCK_TORCH = """
import sys
class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ImportError("torch is blocked in this process")
sys.meta_path.insert(0, _NoTorch())
"""


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(37, 41), torch.nn.ReLU(), torch.nn.LayerNorm(41),
                                torch.nn.Linear(41, 3)).eval()
    x = torch.randn(5, 37)
    path = tmp_path_factory.mktemp("art") / "mlp.wgpt"
    webgpu_torch.compile_module(model, (x,)).save(path)
    return path, model, x


def test_a_program_is_checked_once_in_a_process(monkeypatch, tmp_path):
    """A compile, a call and a save scan the program once (lowering); a load and a call once (the reader):
    fitting and tuning derive checked programs, and a Session, an Executor and a save check only the rest."""
    scans = []
    problems = program._problems
    monkeypatch.setattr(program, "_problems", lambda p: scans.append(p) or problems(p))
    model, x = torch.nn.Sequential(torch.nn.Linear(6, 5), torch.nn.ReLU()).eval(), torch.randn(3, 6)
    session = webgpu_torch.compile_module(model, (x,))
    session(x)
    session.save(tmp_path / "m.wgpt")
    assert len(scans) == 1
    webgpu_torch.load(tmp_path / "m.wgpt")(x.numpy())
    assert len(scans) == 2


@pytest.mark.e2e
def test_round_trip_in_a_process_where_torch_cannot_be_imported(saved, tmp_path):
    path, model, x = saved
    np.save(tmp_path / "x.npy", x.numpy())
    script = BLOCK_TORCH + textwrap.dedent(f"""
        import numpy as np, webgpu_torch
        program = webgpu_torch.load({str(path)!r})
        y = program(np.load({str(tmp_path / "x.npy")!r}))
        assert "torch" not in sys.modules
        np.save({str(tmp_path / "y.npy")!r}, y)
    """)
    subprocess.run([sys.executable, "-c", script], check=True)
    with torch.no_grad():
        assert_close(np.load(tmp_path / "y.npy"), model.double()(x.double()))


@pytest.mark.host
def test_the_header_is_plain_json_that_says_each_kernels_interface(saved):
    raw = saved[0].read_bytes()
    _, version, crc, hlen, _ = artifact.PREAMBLE.unpack_from(raw)
    assert version == artifact.CONTAINER_VERSION and crc == zlib.crc32(raw[32:32 + hlen])
    header = json.loads(raw[32:32 + hlen])
    assert header["format"] == program.FORMAT_VERSION == 3 and all("@compute" in s for s in header["sources"])
    for k in header["kernels"]:  # bindings and uniform layout as the source declares them
        source = header["sources"][k["source"]]
        assert [b.kind for b in wgsl.bindings(source)] == k["bindings"]
        if "uniform" in k:
            assert k["uniform"]["size"] == wgsl.uniform_layout(source).size
        point = wgsl.entry_point(source, k["entry"], k["overrides"])  # the workgroup a runtime checks
        assert [k["workgroup_size"], k["workgroup_bytes"]] == [list(point.workgroup_size), point.workgroup_bytes]
    # the layer norm's subgroup twin: an option with the feature it needs, for any runtime to honour
    twins = [k for k in header["kernels"] if k.get("requires") == ["subgroups"]]
    assert twins and all(header["sources"][k["source"]].startswith("enable subgroups;") for k in twins)
    assert all(t["offset"] % 64 == 0 for t in header["tensors"])


@pytest.mark.host
def test_a_saved_program_loads_as_an_equal_program(saved):
    session = webgpu_torch.load(saved[0])
    again = artifact.from_bytes(artifact.to_bytes(session.program))
    assert again.dispatches == session.program.dispatches and again.kernels == session.program.kernels
    assert artifact.to_bytes(again) == saved[0].read_bytes()
