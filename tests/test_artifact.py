"""The saved artifact: round trip in a process without torch, and clear errors for damaged files."""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
import torch

import webgpu_torch
from webgpu_torch import artifact
from webgpu_torch.errors import ArtifactError

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


def rewrite(src: Path, dst: Path, edit) -> None:
    """Copy an artifact, letting `edit(header_dict)` change its header; lengths are fixed up."""
    raw = src.read_bytes()
    _, version, _, hlen, dlen = artifact.PREAMBLE.unpack_from(raw)
    header = json.loads(raw[32:32 + hlen])
    edit(header)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 64)
    dst.write_bytes(artifact.PREAMBLE.pack(artifact.MAGIC, version, 0, len(text), dlen) + text + raw[32 + hlen:])


def drop_first_tensor(h):
    h["tensors"].pop(0)


def resize_first_tensor(h):
    h["tensors"][0]["shape"][0] += 1


def future_program(h):
    h["program"]["version"] = 99


def dangling_dispatch(h):
    h["program"]["dispatches"][0]["buffers"][0] = 999


@pytest.mark.parametrize("edit, message", [
    (drop_first_tensor, "constant data is missing"),
    (resize_first_tensor, "mis-sized or out of bounds"),
    (future_program, "program format version 99"),
    (dangling_dispatch, "bad buffer index"),
])
def test_damaged_headers_are_refused_with_the_reason(saved, tmp_path, edit, message):
    bad = tmp_path / "bad.wgpt"
    rewrite(saved[0], bad, edit)
    with pytest.raises(ArtifactError, match=message):
        webgpu_torch.load(bad)


def test_wrong_magic_truncation_version_and_damaged_data(saved, tmp_path):
    raw = saved[0].read_bytes()
    cases = {
        "not a webgpu_torch program": b"PK\x03\x04" + raw[4:],
        "truncated": raw[:-100],
        "truncated \\(10 bytes\\)": raw[:10],
        "not a webgpu_torch program \\(an empty file\\)": b"",
        "container version 7": raw[:8] + struct.pack("<I", 7) + raw[12:],
        "checksum mismatch": raw[:-5] + bytes([raw[-5] ^ 0xFF]) + raw[-4:],
        "trailing bytes": raw + b"\0",
    }
    for message, data in cases.items():
        bad = tmp_path / "bad.wgpt"
        bad.write_bytes(data)
        with pytest.raises(ArtifactError, match=message):
            webgpu_torch.load(bad)


def test_saved_header_is_plain_json_with_wgsl_sources(saved):
    raw = saved[0].read_bytes()
    _, _, _, hlen, _ = artifact.PREAMBLE.unpack_from(raw)
    header = json.loads(raw[32:32 + hlen])
    assert all("@compute" in s for s in header["program"]["sources"])
    # the layer norm's subgroup twin: an option with the feature it needs, for any runtime to honour
    twins = [k for k in header["program"]["kernels"] if k.get("requires") == ["subgroups"]]
    assert twins and all(header["program"]["sources"][k["source"]].startswith("enable subgroups;") for k in twins)
    assert all(t["offset"] % 64 == 0 for t in header["tensors"])
