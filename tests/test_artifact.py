"""The saved artifact: round trip in a process without torch, and clear errors for damaged files."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import zlib
from pathlib import Path

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


MEASURE_LOAD = """
import gc, json, re, sys, threading, time
import webgpu_torch

def status(field):  # a /proc/self/status line, in bytes
    return 1024 * int(re.search(field + r":\\s+(\\d+)", open("/proc/self/status").read())[1])

warm = webgpu_torch.load(sys.argv[2])  # the runtime warm: the device open, a program loaded and run
warm()
del warm
gc.collect()
open("/proc/self/clear_refs", "w").write("5")  # VmHWM := VmRSS
def own():  # the resident set but the file's mapped pages: anonymous memory and lavapipe's shared memory
    return status("RssAnon") + status("RssShmem")

baseline, samples = status("VmRSS"), [own()]
loading = True

def sample():  # no high-water mark of its own
    while loading:
        samples.append(own())
        time.sleep(0.001)

sampler = threading.Thread(target=sample)
sampler.start()
session = webgpu_torch.load(sys.argv[1])
outputs = session()  # the executor, and so the upload, comes with the first call
loading = False
sampler.join()
print(json.dumps({"baseline": baseline, "peak": status("VmHWM"), "own": max(samples) - samples[0],
                  "device": sum(b.size for b in session.executor().buffers),
                  "outputs": [o.tolist() for o in outputs]}))
"""


@pytest.mark.runtime
def test_a_large_artifact_loads_from_its_map_in_little_host_memory(tmp_path):
    """Three 128 MiB constants (js/testkit/large.js writes the file, in pieces): the load maps the file, and the
    most memory of its own it holds (anonymous, and shared: lavapipe's device memory) past the warm runtime's and
    the program's buffers stays within 1.25 times the largest constant plus the header (issue 31). The map's
    pages that the checksum and the upload read count in the resident set too (VmHWM, reported), but they are
    the file's, which the OS drops as it needs."""
    large = Path(__file__).parents[1] / "js" / "testkit" / "large.js"
    written = subprocess.run(["node", str(large), str(tmp_path / "large.wgpt"), "3", "128"], check=True,
                             capture_output=True, text=True).stdout
    subprocess.run(["node", str(large), str(tmp_path / "small.wgpt"), "1", "1"], check=True, capture_output=True)
    f = json.loads(written)
    m = json.loads(subprocess.run([sys.executable, "-c", MEASURE_LOAD, str(tmp_path / "large.wgpt"),
                                   str(tmp_path / "small.wgpt")], check=True, capture_output=True, text=True).stdout)
    mib = 2**20
    host = m["own"] - m["device"]
    print(f"{f['size'] / mib:.1f} MiB file, largest constant {f['largest'] / mib:.0f} MiB: runtime baseline "
          f"{m['baseline'] / mib:.1f} MiB, peak {m['peak'] / mib:.1f} MiB (the map's pages included), device buffers "
          f"{m['device'] / mib:.1f} MiB, the load's own memory past them {host / mib:.1f} MiB")
    assert host <= 1.25 * f["largest"] + f["header"]
    assert m["outputs"] == f["views"]
