"""The webgpu-torch command line."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

import webgpu_torch


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "webgpu_torch.tools.cli", *args], capture_output=True, text=True)


def test_info_names_engine_and_adapter():
    r = cli("info")
    assert r.returncode == 0, r.stderr
    assert "engine" in r.stdout and "adapter" in r.stdout and "timestamp-query" in r.stdout


def test_run_with_random_and_given_inputs(tmp_path):
    model = torch.nn.Sequential(torch.nn.Linear(7, 5), torch.nn.ReLU())
    x = torch.randn(3, 7)
    path = tmp_path / "m.wgpt"
    webgpu_torch.compile_module(model, (x,)).save(path)
    r = cli("run", str(path), "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert "output 0: float32[3, 5]" in r.stdout
    np.save(tmp_path / "x.npy", x.numpy())
    r = cli("run", str(path), "--input", str(tmp_path / "x.npy"), "--save-outputs", str(tmp_path / "y"))
    assert r.returncode == 0, r.stderr
    with torch.no_grad():
        np.testing.assert_allclose(np.load(tmp_path / "y_0.npy"), model(x).numpy(), rtol=1e-5, atol=1e-6)


def test_run_on_a_damaged_file_fails_cleanly(tmp_path):
    bad = tmp_path / "bad.wgpt"
    bad.write_bytes(b"not a program at all, just text")
    r = cli("run", str(bad))
    assert r.returncode == 2
    assert "not a webgpu_torch program" in r.stderr and "Traceback" not in r.stderr


@pytest.mark.parametrize("model", ["minilm", "mlp"])
def test_demo_passes_and_prints_its_own_lines_only(model):
    """Nothing else: not what torchao logs when transformers imports it, nor transformers' progress bar."""
    r = cli("demo", "--model", model, "--repeat", "3")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "PASS" in r.stdout
    assert [line.split(":")[0] for line in r.stdout.splitlines()] == ["model", "device", "compile", "load", "run",
                                                                       "check"], r.stdout
    assert r.stderr == ""


@pytest.mark.parametrize("weights", ["float16", "int8", "int4"])
def test_llama_with_rounded_weights_is_checked_against_the_same_rounding(weights):
    r = cli("llama", "--size", "tiny", "--weights", weights, "--seeds", "0", "--new-tokens", "8")
    assert r.returncode == 0, r.stdout + r.stderr
    line = next(x for x in r.stdout.splitlines() if x.startswith("seed 0:"))
    assert "ids match for 8/8 tokens" in line and f"(transformers over the same {weights}-rounded weights)" in line
    assert line.endswith("PASS") and "FAIL" not in r.stdout
    # where the first token's time goes: the host's phases of the prompt's call, and its GPU time
    assert "host, the prompt's call (ms): encode " in r.stdout and "\nprompt call: GPU " in r.stdout, r.stdout


def test_llama_builds_a_published_architecture_by_name():
    """A tied Qwen2 in int4 (its shapes scaled down: models/archs.py); a name it does not know lists those it does."""
    r = cli("llama", "--arch", "qwen2.5-tiny", "--weights", "int4", "--seeds", "0", "--new-tokens", "8")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.startswith("qwen2.5-tiny (qwen2): 0.1 M parameters, tied embeddings"), r.stdout
    assert "seed 0: ids match for 8/8 tokens" in r.stdout and "PASS" in r.stdout and "FAIL" not in r.stdout
    r = cli("llama", "--arch", "llama-3.2-8b")
    assert r.returncode == 2 and "llama-3.2-1b" in r.stderr and "qwen2.5-0.5b" in r.stderr, r.stderr


def test_bench_conv_compares_im2col_with_direct_per_shape():
    r = cli("bench", "conv", "--shapes", "resnet18.layer4.down", "davit.cpe4", "--scale", "7", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    assert "im2col vs direct" in r.stdout and "conv[im2col,pr]" in r.stdout and "davit.cpe4" in r.stdout


def test_bench_profile_gives_each_kernel_its_weight_rate_against_a_peak(tmp_path):
    """A Linear(97, 61): its one dispatch reads 23,912 bytes of constants (weight and bias); the rate and its
    fraction of --peak follow from the time shown."""
    path = tmp_path / "m.wgpt"
    webgpu_torch.compile_module(torch.nn.Linear(97, 61), (torch.randn(1, 97),)).save(path)
    r = cli("bench", "profile", "--file", str(path), "--by", "kernel", "--peak", "1", "--repeat", "1")
    assert r.returncode == 0, r.stderr
    header, row = (line.split() for line in r.stdout.splitlines()[1:3])
    assert header[-6:] == ["share", "weights", "MB", "GB/s", "of", "peak"], header
    microseconds, megabytes, rate, percent = float(row[-5]), float(row[-3]), float(row[-2]), int(row[-1][:-1])
    assert megabytes == pytest.approx(0.023912, rel=1e-3)
    assert rate == pytest.approx(1e3 * megabytes / microseconds, rel=0.02)  # MB/µs = 1,000 GB/s
    assert abs(percent - 100 * rate) <= 1


def test_run_with_a_wrong_input_or_a_missing_file_says_what_is_wrong(tmp_path):
    path = tmp_path / "m.wgpt"
    webgpu_torch.compile_module(torch.nn.Linear(7, 5), (torch.randn(3, 7),)).save(path)
    np.save(tmp_path / "wide.npy", np.zeros((3, 8), np.float32))
    np.save(tmp_path / "double.npy", np.zeros((3, 7)))
    for args, message in [((str(path), "--input", str(tmp_path / "wide.npy")), "expected shape [3, 7], got [3, 8]"),
                          ((str(path), "--input", str(tmp_path / "double.npy")), "expected dtype float32, got float64"),
                          ((str(tmp_path / "absent.wgpt"),), "no such file")]:
        r = cli("run", *args)
        assert r.returncode != 0 and message in r.stderr and "Traceback" not in r.stderr, r.stderr


@pytest.fixture(scope="module")
def saved_linear(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "m.wgpt"
    webgpu_torch.compile_module(torch.nn.Linear(7, 5), (torch.randn(3, 7),)).save(path)
    return path


@pytest.mark.parametrize(("args", "message"), [
    (["run", "{m}", "--save-outputs", "{tmp}/absent/y"], "--save-outputs {tmp}/absent/y: there is no directory"),
    (["run", "{tmp}/picture.png"], "picture.png: not a webgpu_torch program (it does not start with WGPUTRCH)"),
    (["run", "{tmp}"], ": not a file"),
    (["run", "{m}", "--input", "{tmp}/picture.png"], "picture.png: not a NumPy array file"),
    (["run", "{m}", "--input", "{tmp}/absent.npy"], "--input {tmp}/absent.npy: no such file"),
    (["run", "{m}", "--repeat", "-2"], "'-2' is not a count"),
    (["demo", "--model", "resnet9000"], "demo --model resnet9000: choose one of minilm, mlp"),
])
def test_user_errors_get_one_line_and_no_traceback(args, message, saved_linear, tmp_path):
    (tmp_path / "picture.png").write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)))
    fill = {"m": str(saved_linear), "tmp": str(tmp_path)}
    r = cli(*(a.format(**fill) for a in args))
    assert r.returncode == 2 and message.format(**fill) in r.stderr, r.stderr
    assert "Traceback" not in r.stderr and "PNG" not in r.stderr and "\\x" not in r.stderr, r.stderr
