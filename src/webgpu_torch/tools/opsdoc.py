"""Generates docs/ops.md from the registry: the registered overloads, then the status of every overload of
PyTorch's core ATen opset (coverage.py), then the last whole run of PyTorch's OpInfo tests through the
compiler (docs/opinfo.json, written by `benchmarks/opinfo.py --json`). `python -m webgpu_torch.tools.opsdoc [--check]`.

The test suite runs the check, so the tables can never drift from what is registered, refused and tested.
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from ..compiler import wgsl
from ..compiler.ops import OPS, all_cases

DOC = Path(__file__).resolve().parents[3] / "docs" / "ops.md"
OPINFO = DOC.with_name("opinfo.json")


def render() -> str:
    cases = {family: len(c) for family, c in all_cases().items()}
    kernels = set(wgsl.kernel_files())
    lines = [
        "# Op coverage",
        "",
        "Generated from the op registry by `python -m webgpu_torch.tools.opsdoc`; do not edit by hand.",
        "Every overload below compiles to the listed kernel, or to no dispatch at all where it is a view",
        "(a strided view of its argument). Anything else is refused at compile time with the node, op,",
        "shapes and reason. Dtype, rank and layout limits are checked per node (see each family's `check`).",
        "\"dynamic sizes\": the op also runs with torch.export dynamic dimensions (`Dim`) in its shapes or arguments.",
        "\"fuses\": what its kernel absorbs from the node that alone reads its result (fusion.py): a residual",
        "`add` and/or an activation (relu, clamp, hardtanh, sigmoid, tanh, gelu), which then cost no dispatch.",
        "",
        "| ATen overload | family | kernel | dynamic sizes | fuses | test cases in family |",
        "|---|---|---|---|---|---|",
    ]
    for target in sorted(OPS):
        op = OPS[target]
        family = op.module.rsplit(".", 1)[-1]
        kernel = "view (no dispatch)" if op.view else (f"`{family}.wgsl`" if f"{family}.wgsl" in kernels else "")
        dynamic = "yes" if op.dynamic else ""
        fuses = " + ".join(["residual add"] * op.residual + ["activation"] * op.epilogue)
        lines.append(f"| `{target}` | `ops/{family}.py` | {kernel} | {dynamic} | {fuses} | {cases.get(family, 0)} |")
    lines += ["", f"{len(OPS)} overloads in {len({o.module for o in OPS.values()})} families.", ""]
    return "\n".join(lines + _core_coverage() + _opinfo())


def _core_coverage() -> list[str]:
    """The core ATen opset, overload by overload, and the share of it that compiles (coverage.py)."""
    import torch

    from . import coverage

    rows = coverage.statuses()
    relevant = [r for r in rows if r.inference]
    compiles = [r for r in relevant if r.kind in coverage.COMPILES]
    count = {kind: sum(r.kind == kind for r in relevant) for kind in coverage.KINDS}
    lines = [
        "## Core ATen coverage",
        "",
        f"torch {torch.__version__.split('+')[0]} tags {len(rows)} overloads core (`torch.Tag.core`): the opset",
        "torch.export decomposes models into. An exported inference graph can hold "
        f"{len(relevant)} of them (the other {len(rows) - len(relevant)} are",
        "training-only or non-functional forms, refused below), and "
        f"**{len(compiles)} of those {len(relevant)} ({100 * len(compiles) / len(relevant):.0f}%) compile**:",
        f"{count[coverage.LOWERED] + count[coverage.PARTIAL]} lowered to kernels or views "
        f"({count[coverage.PARTIAL]} of them for some dtypes only), {count[coverage.DECOMPOSED]} decomposed by",
        f"torch.export into ops that lower, {count[coverage.FOLDED]} computed at compile time. "
        f"{count[coverage.REFUSED_]} are refused with a reason, {count[coverage.MISSING]} not lowered yet.",
        "",
        "Lowered: the dtypes of its operands in the test cases that reach it; \"for some dtypes\": torch's CPU",
        "kernel also takes the dtypes named where the cases have float32 operands, and the op's check refuses",
        "them (its reason follows). Decomposed: a test case compiles it through torch.export's decomposition.",
        "A refused overload's reason is what the compile-time error says.",
        "",
        "| core overload | status | details |",
        "|---|---|---|",
    ]
    lines += [f"| `{r.target}` | {r.kind} | {r.detail} |" for r in rows]
    return lines + [""]


def _opinfo() -> list[str]:
    """The figures of the recorded OpInfo run, and every op that does not pass with its reason."""
    run = json.loads(OPINFO.read_text())
    results = run["results"]
    count = Counter(r["status"] for r in results)
    tried = len(results) - count["export"]
    lines = [
        "## PyTorch's OpInfo tests",
        "",
        "`benchmarks/opinfo.py` exports the first float32 samples of every op in PyTorch's OpInfo database that",
        "takes float32, compiles them, runs them and compares them with eager PyTorch (its docstring says how);",
        f"this is its last whole run (`--json docs/opinfo.json`: torch {run['torch']}, {run['engine']} on",
        f"{run['adapter']}, {run['samples']} samples per op). Of the {tried} ops with an exportable sample "
        f"(another {count['export']} have none), **{count['PASS']} PASS ({100 * count['PASS'] / tried:.1f}%)**,",
        f"{count['refused']} are refused with a reason, {count['wrong']} give a wrong answer and {count['error']} "
        "fail otherwise.",
        "",
        "| op | class | reason (of its first sample that does not pass) |",
        "|---|---|---|",
    ]
    lines += [f"| `{r['op']}` | {r['status']} | {r['detail'].replace('|', '/')} |" for r in results
              if r["status"] != "PASS"]
    return lines + [""]


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run python -m webgpu_torch.tools.opsdoc", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
