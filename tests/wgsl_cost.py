"""WGSL that costs a shader compiler as much as the format allows, or just more (webgpu_torch/compile_cost.py's
rules; docs/artifact.md, Compile cost). Each `WORST` entry grows one shape of source — a long function, a deep
chain of calls, wide ones, arrays, `else if` links, many functions, comments — to the largest size the rules
accept; `hostile` puts such WGSL into the golden `tiny` program, used by the kernel so that no compiler drops
it. tests/golden/damage.py (a damaged file per rule), tests/conformance/make.py (the decisions as vectors),
tests/fuzz.py (the `compile_cost` family) and benchmarks/compile_cost.py (the table in docs/artifact.md) use
them.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from webgpu_torch.format import compile_cost
from webgpu_torch.format.limits import LIMITS

COST = LIMITS["compile_cost"]
TINY = Path(__file__).parent / "golden" / "tiny.wgpt"
USE = "epilogue_sum(z, m, n, acc)"  # in tiny's store_c: what the kernel writes, so the call's result is used
CHAIN = COST["max_call_depth"] - 8  # functions in a chain below tiny's store_c, itself 3 calls deep


def chain(n: int, statements: int = 1) -> str:
    """h0 .. h{n-1}, each calling the one before (h0: none) and then `statements` additions."""
    body = "".join(f"\n  a = a * 0.5 + {j}.0;" for j in range(statements))
    return "".join(f"fn h{i}(x: f32) -> f32 {{\n  var a = {f'h{i - 1}(x)' if i else 'x'};{body}\n  return a;\n}}\n"
                   for i in range(n))


def doubling(n: int, name: str = "h") -> str:
    """h0 .. h{n-1} (`name` for h), each calling the one before twice: h{n-1} inlines 2^(n-1) copies of h0."""
    return f"fn {name}0(x: f32) -> f32 {{ return x * 0.5; }}\n" + "".join(
        f"fn {name}{i}(x: f32) -> f32 {{ return {name}{i - 1}(x) + {name}{i - 1}(x + 1.0); }}\n" for i in range(1, n))


def statements(n: int, terms: int = 1) -> str:
    """One function `h0` of `n` statements, each a sum of `terms` products."""
    expr = " + ".join(["a * 0.5"] * terms)
    body = "".join(f"\n  a = {expr} + {j}.0;" for j in range(n))
    return f"fn h0(x: f32) -> f32 {{\n  var a = x;{body}\n  return a;\n}}\n"


def several(n: int, count: int = 4) -> str:
    """`count` functions h0 .. h{count-1} like `statements(n)`: the source's cost, though the kernel calls h0 only."""
    return "".join(statements(n).replace("fn h0", f"fn h{i}") for i in range(count))


def lets(n: int) -> str:
    """One function `h0` of `n` let statements, each from the one before."""
    body = "".join(f"\n  let a{j} = a{j - 1} * 0.5 + 1.0;" for j in range(1, n))
    return f"fn h0(x: f32) -> f32 {{\n  let a0 = x;{body}\n  return a{n - 1};\n}}\n"


def else_ifs(n: int) -> str:
    """One function `h0` with an `if` of `n` `else if` links."""
    links = " else ".join(f"if x < {i}.0 {{ y = {i}.0; }}" for i in range(n + 1))
    return f"fn h0(x: f32) -> f32 {{\n  var y = 0.0;\n  {links}\n  return y;\n}}\n"


def functions(n: int) -> str:
    """`n` functions: h0, which calls the `n - 1` one-line others."""
    helpers = "".join(f"fn g{i}(x: f32) -> f32 {{ return x * {i}.0; }}\n" for i in range(n - 1))
    calls = "".join(f"  a = a + g{i}(x);\n" for i in range(n - 1))
    return helpers + f"fn h0(x: f32) -> f32 {{\n  var a = 0.0;\n{calls}  return a;\n}}\n"


def array(n: int) -> str:
    """One function `h0` with a function-scope array of `n` floats, indexed at run time."""
    return (f"fn h0(x: f32) -> f32 {{\n  var a: array<f32, {n}>;\n  a[u32(x) % {n}u] = x;\n"
            f"  return a[(u32(x) + 1u) % {n}u];\n}}\n")


def workgroup(n: int) -> str:
    """A workgroup array of `n` floats (the device's maxComputeWorkgroupStorageSize bounds it), used by h0."""
    return (f"var<workgroup> hw: array<f32, {n}>;\nfn h0(x: f32) -> f32 {{\n  hw[u32(x) % {n}u] = x;\n"
            f"  return hw[(u32(x) + 1u) % {n}u];\n}}\n")


def comments(n: int) -> str:
    """`n` characters of line comments, then a one-line h0."""
    line = "// " + "c" * 96 + "\n"
    return line * (n // len(line)) + "fn h0(x: f32) -> f32 { return x; }\n"


def hostile(wgsl: str, call: str = "h0(acc)") -> bytes:
    """Golden `tiny` with `wgsl` before its source and `call`'s value in what its kernel writes."""
    from .golden.damage import pack, parts

    header, data = parts(TINY.read_bytes())
    assert USE in header["sources"][0]
    header["sources"][0] = with_source(header["sources"][0], wgsl, call)
    return pack(header, data)


def with_source(source: str, wgsl: str, call: str) -> str:
    """`wgsl` before `source`; where `source` is tiny's, `call`'s value in what its kernel writes."""
    return wgsl + source.replace(USE, f"epilogue_sum(z, m, n, acc + f32({call} == -7.0))")


def largest(make: Callable[[int], str], call: Callable[[int], str], lo: int, hi: int) -> int:
    """The largest n in [lo, hi) whose `make(n)`, called as `call(n)` in tiny's kernel, compile_cost accepts
    (its cost grows with n)."""
    from .golden.damage import parts

    tiny = parts(TINY.read_bytes())[0]["sources"][0]

    def ok(n: int) -> bool:
        return compile_cost.problem(with_source(tiny, make(n), call(n))) is None

    assert ok(lo) and not ok(hi), (lo, hi)
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if ok(mid) else (lo, mid)
    return lo


def _top(n: int) -> str:
    return f"h{n - 1}(acc)"


def _h0(_: int) -> str:
    return "h0(acc)"


# name -> (what, the WGSL of size n, its call, the range of n searched)
WORST: dict[str, tuple[str, Callable[[int], str], Callable[[int], str], tuple[int, int]]] = {
    "long function": ("one function of short statements", statements, _h0, (1, 20_000)),
    "dense function": ("one function of 150-term statements", lambda n: statements(n, 150), _h0, (1, 2_000)),
    "let statements": ("one function of let statements", lets, _h0, (2, 20_000)),
    "call chain": (f"{CHAIN} functions, each calling the one before", lambda n: chain(CHAIN, n),
                   lambda _: f"h{CHAIN - 1}(acc)", (1, 2_000)),
    "doubling calls": ("functions each calling the one before twice", doubling, _top, (1, 40)),
    "several functions": ("four functions of short statements, one called", several, _h0, (1, 20_000)),
    "function array": ("a function-scope array", array, _h0, (1, 65_536)),
    "workgroup array": ("a workgroup array (past the device's workgroup memory)", workgroup, _h0, (1, 65_536)),
    "else if": ("an if of `else if` links", else_ifs, _h0, (1, 200)),
    "functions": ("one-line functions, all called", functions, _h0, (2, 2_000)),
    "comments": ("line comments to the length limit", comments, _h0, (0, 2 * LIMITS["max_source_chars"])),
}


def worst() -> dict[str, tuple[str, tuple[str, str], tuple[str, str]]]:
    """Each WORST shape: (what, (its WGSL, its call) at the largest size the rules accept in tiny, and at the
    next size, which they refuse)."""
    out = {}
    for name, (what, make, call, (lo, hi)) in WORST.items():
        n = largest(make, call, lo, hi)
        out[name] = (f"{what}: n = {n:,}", (make(n), call(n)), (make(n + 1), call(n + 1)))
    return out
