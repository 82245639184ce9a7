"""Generates docs/ops.md, the op coverage table, from the registry: `python -m webgpu_torch.opsdoc [--check]`.

The test suite runs the check, so the table can never drift from what is registered.
"""

from __future__ import annotations

import sys
from importlib import resources
from pathlib import Path

from .ops import OPS, all_cases

DOC = Path(__file__).resolve().parents[2] / "docs" / "ops.md"


def render() -> str:
    cases = {family: len(c) for family, c in all_cases().items()}
    kernels = {p.name for p in resources.files("webgpu_torch.ops").iterdir() if p.name.endswith(".wgsl")}
    lines = [
        "# Op coverage",
        "",
        "Generated from the op registry by `python -m webgpu_torch.opsdoc`; do not edit by hand.",
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
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    text = render()
    if "--check" in argv:
        if not DOC.exists() or DOC.read_text() != text:
            print(f"{DOC} is out of date: run python -m webgpu_torch.opsdoc", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(text)
    print(f"wrote {DOC}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
