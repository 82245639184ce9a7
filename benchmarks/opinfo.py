"""PyTorch's own op tests through the compiler: for each op of the OpInfo database
(`torch.testing._internal.common_methods_invocations.op_db`) that takes float32, its first float32 samples,
each exported as a tiny module (the sample's tensors are the inputs, everything else is baked in), compiled,
run on WebGPU and compared with eager PyTorch.

    PYTHONPATH=src python benchmarks/opinfo.py [--samples 2] [--ops REGEX] [--jobs 2] [--json FILE] [--verbose]

`--json docs/opinfo.json` over the whole database records the run that docs/ops.md reports (python -m
webgpu_torch.tools.opsdoc renders it): torch's version, the engine and adapter, and every op's class and reason.

Each sample is one of
  PASS     every output has eager's structure, shape and dtype, and its numbers (below);
  refused  the compiler refused it (UnsupportedError: an op, dtype or size without a kernel, by name);
  wrong    it compiled and ran, and an output differs;
  error    anything else raised while compiling or running (a bug, as much as a wrong number);
  export   torch.export cannot export the sample (not ours: not counted in the share).
An op takes the worst class of its exportable samples (wrong, error, refused, PASS); an op none of whose
samples export is "export". The share is PASS over the ops that have an exportable sample.

Numbers match when they are as close to a float64 run of the same sample as eager float32 is (within 4×,
or 1e-5 of the output's scale, the suite's float32 tolerance), with NaN and ±inf where eager has them;
integer and bool outputs match eager float32 exactly. An op whose CPU kernel does not take float64 is compared
with eager float32 at 1e-5 of the scale; `empty` and its kin (uninitialised memory in eager) by their shapes and
dtypes alone.

torch's test database imports `expecttest` (the `test` extra installs it). Autotuning is off: every dispatch
runs the compiler's default kernel, as in the test suite.
"""

from __future__ import annotations

import argparse
import functools
import itertools
import json
import multiprocessing
import os
import re
import sys
import time
import warnings
from collections import Counter
from dataclasses import asdict, dataclass

os.environ.setdefault("WEBGPU_TORCH_TUNE", "0")

import torch
from torch.utils import _pytree as pytree

import webgpu_torch
from webgpu_torch.format.errors import UnsupportedError

CLASSES = ("PASS", "refused", "wrong", "error", "export")
# Ops whose result is uninitialised memory in eager PyTorch: only their structure, shapes and dtypes compare.
UNINITIALISED = re.compile(r"^(new_)?empty(_like|_strided|_permuted)?$")
WORST_FIRST = ("wrong", "error", "refused", "PASS")
TOLERANCE = 1e-5  # of the output's scale: tests/helpers.py's float32 tolerance


@dataclass
class Result:
    op: str
    status: str  # one of CLASSES
    detail: str = ""  # the reason of the sample that gave the status
    samples: int = 0  # exportable samples tried


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=2, help="float32 samples per op (the first ones)")
    parser.add_argument("--ops", default="", help="only ops whose name matches this regular expression")
    parser.add_argument("--jobs", type=int, default=1, help="worker processes (each opens its own device)")
    parser.add_argument("--json", help="write the run (torch, adapter, every op's result) here")
    parser.add_argument("--verbose", action="store_true", help="list every op that does not pass, with why")
    a = parser.parse_args()
    names = [op for op in _op_names() if re.search(a.ops, op)]
    start = time.perf_counter()
    results = []
    with multiprocessing.get_context("spawn").Pool(a.jobs) if a.jobs > 1 else _Serial() as pool:
        for r in pool.imap_unordered(functools.partial(run_op, samples=a.samples), names):
            results.append(r)
            print(f"[{len(results)}/{len(names)}] {r.status:<7} {r.op}", file=sys.stderr, flush=True)
    print(table(results, a.verbose))
    print(f"{len(results)} ops, {time.perf_counter() - start:.0f} s")
    if a.json:
        info = webgpu_torch.device_info()
        record = {"torch": torch.__version__.split("+")[0], "engine": info["engine"], "adapter": info["adapter"],
                  "samples": a.samples, "results": [asdict(r) for r in sorted(results, key=lambda r: r.op)]}
        with open(a.json, "w") as f:
            json.dump(record, f, indent=1)
            f.write("\n")


class _Serial:
    """A pool of one: this process."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False

    def imap_unordered(self, fn, items):
        return map(fn, items)


def table(results: list[Result], verbose: bool) -> str:
    counts = Counter(r.status for r in results)
    tried = len(results) - counts["export"]
    lines = [f"{'class':<8} {'ops':>5} {'share':>7}"]
    for c in CLASSES:
        share = f"{100 * counts[c] / tried:6.1f}%" if c != "export" and tried else ""
        lines.append(f"{c:<8} {counts[c]:>5} {share:>7}")
    lines.append(f"PASS {counts['PASS']} of {tried} ops with an exportable float32 sample "
                 f"({100 * counts['PASS'] / max(tried, 1):.1f}%), {counts['wrong']} wrong")
    shown = ("wrong", "error", "refused") if verbose else ("wrong", "error")
    for r in sorted(results, key=lambda r: (CLASSES.index(r.status), r.op)):
        if r.status in shown:
            lines.append(f"  {r.status:<7} {r.op}: {r.detail}")
    return "\n".join(lines)


def _op_names() -> list[str]:
    return [_name(op) for op in _db() if torch.float32 in op.supported_dtypes("cpu")]


def _name(op) -> str:
    return f"{op.name}.{op.variant_test_name}" if op.variant_test_name else op.name


_DB: dict = {}


def _db() -> list:
    if not _DB:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            from torch.testing._internal.common_methods_invocations import op_db
        _DB.update((_name(op), op) for op in op_db)
    return list(_DB.values())


def run_op(name: str, samples: int) -> Result:
    _db()
    op = _DB[name]
    results = []
    try:
        for sample in itertools.islice(op.sample_inputs("cpu", torch.float32), samples):
            results.append(run_sample(op, sample))
    except Exception as e:  # a sample generator that fails on this platform
        results.append(("export", f"sample_inputs: {_short(e)}"))
    tried = [r for r in results if r[0] != "export"]
    if not tried:
        return Result(name, "export", results[0][1] if results else "no float32 samples", 0)
    status, detail = min(tried, key=lambda r: WORST_FIRST.index(r[0]))
    return Result(name, status, detail, len(tried))


class Sample:
    """A sample as (tensors, rebuild): the call `op(*args, **kwargs)` with its tensors taken out."""

    def __init__(self, op, sample):
        call = (sample.input, tuple(sample.args), dict(sample.kwargs))
        leaves, self.spec = pytree.tree_flatten(call)
        self.where = [i for i, x in enumerate(leaves) if isinstance(x, torch.Tensor)]
        self.leaves, self.op = leaves, op.op
        self.tensors = tuple(leaves[i].detach() for i in self.where)

    def __call__(self, *tensors):
        leaves = list(self.leaves)
        for i, t in zip(self.where, tensors, strict=True):
            leaves[i] = t
        x, args, kwargs = pytree.tree_unflatten(leaves, self.spec)
        return self.op(x, *args, **kwargs)


def run_sample(op, sample) -> tuple[str, str]:
    call = Sample(op, sample)
    module = _Module(call)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            want = call(*call.tensors)
            exported = torch.export.export(module, call.tensors)
    except Exception as e:
        return "export", _short(e)
    try:
        session = webgpu_torch.compile(exported)
    except UnsupportedError as e:
        return "refused", _refusals(e)
    except Exception as e:
        return "error", f"compile: {_short(e)}"
    try:
        got = session(*call.tensors)
    except Exception as e:
        return "error", f"run: {_short(e)}"
    return compare(got, want, _float64(op, call), values=not UNINITIALISED.match(op.name))


class _Module(torch.nn.Module):
    def __init__(self, call: Sample):
        super().__init__()
        self.call = call

    def forward(self, *tensors):
        return self.call(*tensors)


def _float64(op, call: Sample):
    """The sample computed in float64, or None where the op's CPU kernel does not take it."""
    if torch.float64 not in op.supported_dtypes("cpu"):
        return None
    tensors = [t.double() if t.dtype == torch.float32 else t for t in call.tensors]
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            return call(*tensors)
    except Exception:
        return None


def compare(got, want, exact, values: bool = True) -> tuple[str, str]:
    """("PASS", "") or ("wrong", what differs): got against eager float32 `want` and float64 `exact` (their
    structure, shapes and dtypes only, without `values`)."""
    g, gspec = pytree.tree_flatten(got)
    w, wspec = pytree.tree_flatten(want)
    e = pytree.tree_flatten(exact)[0] if exact is not None else [None] * len(w)
    if gspec != wspec or len(e) != len(w):
        return "wrong", f"output structure {gspec} != eager's {wspec}"
    for i, (gi, wi, ei) in enumerate(zip(g, w, e, strict=True)):
        if not isinstance(wi, torch.Tensor):
            if gi != wi:
                return "wrong", f"output {i}: {gi!r} != eager's {wi!r}"
            continue
        problem = _differs(gi, wi, ei if isinstance(ei, torch.Tensor) else None, values)
        if problem:
            return "wrong", f"output {i}: {problem}"
    return "PASS", ""


def _differs(got, want, exact, values: bool) -> str | None:
    if not isinstance(got, torch.Tensor):
        return f"a {type(got).__name__}, eager gives a tensor"
    if got.shape != want.shape or got.dtype != want.dtype:
        return f"{got.dtype}{list(got.shape)}, eager gives {want.dtype}{list(want.shape)}"
    if not values:
        return None
    if not want.is_floating_point():
        bad = int((got != want).sum())
        return f"{bad} of {want.numel()} elements differ from eager" if bad else None
    got, want = got.double(), want.double()
    special = ~torch.isfinite(want)
    if not torch.equal(got[special].nan_to_num(7.0), want[special].nan_to_num(7.0)):
        return "NaN or ±inf where eager has other values"
    if not torch.isfinite(got[~special]).all():
        return "NaN or ±inf where eager has a number"
    ref = want if exact is None else exact.double()
    finite = ~special & torch.isfinite(ref)
    if not finite.any():
        return None
    scale = float(ref[finite].abs().max())
    err = float((got - ref)[finite].abs().max())
    eager_err = float((want - ref)[finite].abs().max())
    if err <= max(TOLERANCE * scale, 4 * eager_err):
        return None
    return f"max error {err:.3g} against float64 (eager float32's {eager_err:.3g}, scale {scale:.3g})"


def _refusals(e: UnsupportedError) -> str:
    """Each refused node's op and reason, in one line."""
    found = []
    for p in e.problems:
        op, reason = re.search(r"\((\S+)\)", p), re.search(r"reason: (.*)", p)
        found.append(f"{op[1] if op else '?'}: {reason[1] if reason else p.strip().splitlines()[0]}")
    return "; ".join(dict.fromkeys(found))


def _short(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0][:200] if text else ''}"


if __name__ == "__main__":
    sys.exit(main())
