"""Integer expressions over a program's dynamic dimensions: plain data the runtime evaluates per call.

A dynamic dimension (torch.export's `Dim`) is a symbol with a range [lo, hi]; shapes, strides, offsets,
uniform values and workgroup counts that depend on it are `Expr`s over symbols and integer constants with
+, *, floor division, modulo, max and min. Anything that simplifies to a constant is a plain `int`, so an
`Expr` is never constant.

Comparisons: `==` is structural (so views and kernel specs stay hashable and comparable); `<`, `bool()` and
`int()` raise, so an op cannot branch on a dynamic value by accident. Ops decide explicitly with `hint()`
(the value export saw, for choices that only affect speed) or `bound()` (the largest value, for sizes).

JSON form, also read by a JavaScript runtime: an int, a symbol name, or [op, arg, arg, …] with op one of
"+", "*", "//", "%", "max", "min".
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Union

from .limits import LIMITS

Value = Union[int, "Expr"]


@dataclass(frozen=True)
class Symbol:
    name: str
    lo: int
    hi: int
    hint: int  # the size in the example inputs export traced with
    about: str = ""  # where it first appears, for messages: "input 'past_k' dim 2"


@dataclass(frozen=True, eq=False)
class Expr:
    op: str  # "sym", "+", "*", "//", "%", "max", "min"
    args: tuple  # "sym": (Symbol,); otherwise Values

    # -- construction (simplifying) -------------------------------------------------------------------------
    @staticmethod
    def symbol(s: Symbol) -> Expr:
        return Expr("sym", (s,))

    def __add__(self, other: Value) -> Value:
        return _add(self, other)

    __radd__ = __add__

    def __sub__(self, other: Value) -> Value:
        return _add(self, _mul(-1, other))

    def __rsub__(self, other: Value) -> Value:
        return _add(other, _mul(-1, self))

    def __neg__(self) -> Value:
        return _mul(-1, self)

    def __mul__(self, other: Value) -> Value:
        return _mul(self, other)

    __rmul__ = __mul__

    def __floordiv__(self, other: Value) -> Value:
        return _binary("//", self, other)

    def __rfloordiv__(self, other: Value) -> Value:
        return _binary("//", other, self)

    def __mod__(self, other: Value) -> Value:
        return _binary("%", self, other)

    def __rmod__(self, other: Value) -> Value:
        return _binary("%", other, self)

    # -- comparisons ------------------------------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        return isinstance(other, Expr) and self.op == other.op and self.args == other.args

    def __hash__(self) -> int:
        return hash((self.op, self.args))

    def _refuse(self, *_):
        raise TypeError(f"the dynamic value {self} has no fixed order or truth value: decide with "
                        "symbolic.hint() (speed) or symbolic.bound() (sizes)")

    __lt__ = __le__ = __gt__ = __ge__ = __bool__ = __int__ = __index__ = _refuse

    # -- reading ---------------------------------------------------------------------------------------------
    def symbols(self) -> set[Symbol]:
        if self.op == "sym":
            return {self.args[0]}
        return set().union(*(a.symbols() for a in self.args if isinstance(a, Expr)))

    def __str__(self) -> str:
        if self.op == "sym":
            return self.args[0].name
        if self.op in ("max", "min"):
            return f"{self.op}({', '.join(map(str, self.args))})"
        return "(" + f" {self.op} ".join(map(str, self.args)) + ")"

    __repr__ = __str__


def _add(*terms: Value) -> Value:
    const, parts = 0, []
    for t in terms:
        for x in (t.args if isinstance(t, Expr) and t.op == "+" else (t,)):
            if isinstance(x, int):
                const += x
            else:
                parts.append(x)
    parts = _combine_like(parts)
    if not parts:
        return const
    args = (*parts, const) if const else tuple(parts)
    return args[0] if len(args) == 1 else Expr("+", args)


def _combine_like(parts: list[Expr]) -> list[Expr]:
    """c1*x + c2*x -> (c1+c2)*x, dropping terms that cancel."""
    coeff: dict[Expr, int] = {}
    for p in parts:
        c, base = (p.args[-1], _mul(*p.args[:-1])) if p.op == "*" and isinstance(p.args[-1], int) else (1, p)
        coeff[base] = coeff.get(base, 0) + c
    return sorted((b if c == 1 else _mul(b, c) for b, c in coeff.items() if c), key=str)  # canonical order


def _mul(*factors: Value) -> Value:
    const, parts = 1, []
    for f in factors:
        for x in (f.args if isinstance(f, Expr) and f.op == "*" else (f,)):
            if isinstance(x, int):
                const *= x
            else:
                parts.append(x)
    if const == 0 or not parts:
        return const
    parts.sort(key=str)
    if len(parts) == 1 and parts[0].op == "+":  # distribute a constant over a sum: 2*(s+1) = 2*s + 2
        return _add(*(_mul(t, const) for t in parts[0].args)) if const != 1 else parts[0]
    args = (*parts, const) if const != 1 else tuple(parts)
    return args[0] if len(args) == 1 else Expr("*", args)


def _binary(op: str, a: Value, b: Value) -> Value:
    if isinstance(a, int) and isinstance(b, int):
        return _APPLY[op](a, b)
    ratio = _ratio(a, b) if isinstance(a, Expr) and isinstance(b, Expr) else None
    if ratio is not None:  # a = ratio * b exactly: 4*s + 4 over s + 1
        return ratio if op == "//" else 0
    if isinstance(b, int) and b > 0 and _divisible(a, b):  # (64*s + 16) // 16 = 4*s + 1, and % 16 = 0
        return 0 if op == "%" else _add(*(_divide(t, b) for t in _terms(a)))
    if op == "//" and b == 1:
        return a
    if op == "%" and b == 1:
        return 0
    return Expr(op, (a, b))


def _form(v: Value) -> dict:
    """v as {term base: coefficient} (1 is the constant term's base)."""
    out: dict = {}
    for t in _terms(v):
        base = 1 if isinstance(t, int) else _mul(*t.args[:-1]) if t.op == "*" and isinstance(t.args[-1], int) else t
        out[base] = out.get(base, 0) + _coefficient(t)
    return out


def _ratio(a: Expr, b: Expr) -> int | None:
    """The integer c with a == c * b for every symbol value, when there is one."""
    fa, fb = _form(a), _form(b)
    if set(fa) != set(fb):
        return None
    ratios = {fa[k] // fb[k] for k in fb if fa[k] % fb[k] == 0}
    return next(iter(ratios)) if len(ratios) == 1 and all(fa[k] % fb[k] == 0 for k in fb) else None


def _terms(v: Value) -> tuple:
    return v.args if isinstance(v, Expr) and v.op == "+" else (v,)


def _coefficient(t: Value) -> int:
    """The constant factor of a term: 12 for 12*s*t, 1 for s, the number itself for a constant."""
    if isinstance(t, int):
        return t
    return t.args[-1] if t.op == "*" and isinstance(t.args[-1], int) else 1


def _divisible(v: Value, b: int) -> bool:
    """Whether every term of v carries a constant factor divisible by b (so v is, for all symbol values)."""
    return all(_coefficient(t) % b == 0 for t in _terms(v))


def _divide(t: Value, b: int) -> Value:
    if isinstance(t, int):
        return t // b
    return _mul(*t.args[:-1], t.args[-1] // b) if t.op == "*" else t


def maximum(a: Value, b: Value) -> Value:
    return max(a, b) if isinstance(a, int) and isinstance(b, int) else (a if a == b else Expr("max", (a, b)))


def minimum(a: Value, b: Value) -> Value:
    return min(a, b) if isinstance(a, int) and isinstance(b, int) else (a if a == b else Expr("min", (a, b)))


_APPLY = {"+": lambda *x: sum(x), "*": lambda *x: math.prod(x), "//": lambda a, b: a // b,
          "%": lambda a, b: a % b, "max": max, "min": min}


# -- evaluation ---------------------------------------------------------------------------------------------

def evaluate(v: Value, env: dict[str, int]) -> int:
    """The value for symbol values `env` (by name)."""
    if isinstance(v, int):
        return v
    if v.op == "sym":
        return env[v.args[0].name]
    return _APPLY[v.op](*(evaluate(a, env) for a in v.args))


def compiled(v: Value):
    """`v` as a function of the symbol values (by name): `evaluate` without re-walking the tree per call."""
    if isinstance(v, int):
        return lambda env: v
    if v.op == "sym":
        name = v.args[0].name
        return lambda env: env[name]
    parts, apply = [compiled(a) for a in v.args], _APPLY[v.op]
    if len(parts) == 2:
        a, b = parts
        return lambda env: apply(a(env), b(env))
    return lambda env: apply(*(p(env) for p in parts))


def hint(v: Value) -> int:
    """The value at the example inputs: for choices that affect speed only."""
    return v if isinstance(v, int) else evaluate(v, {s.name: s.hint for s in v.symbols()})


def bounds(v: Value) -> tuple[int, int]:
    """An interval that holds every value `v` takes over its symbols' ranges."""
    if isinstance(v, int):
        return v, v
    if v.op == "sym":
        return v.args[0].lo, v.args[0].hi
    ranges = [bounds(a) for a in v.args]
    if v.op == "+":
        return sum(r[0] for r in ranges), sum(r[1] for r in ranges)
    if v.op in ("*", "max", "min"):
        lo, hi = ranges[0]
        for r in ranges[1:]:
            corners = [op(x, y) for x in (lo, hi) for y in r for op in [_APPLY[v.op]]]
            lo, hi = min(corners), max(corners)
        return lo, hi
    (alo, ahi), (blo, bhi) = ranges
    if blo <= 0 <= bhi:
        raise ValueError(f"{v}: the divisor's range [{blo}, {bhi}] includes 0")
    if v.op == "%":  # the sign of the divisor's
        return (0, bhi - 1) if blo > 0 else (blo + 1, 0)
    corners = [x // y for x in (alo, ahi) for y in (blo, bhi)]
    return min(corners), max(corners)


def bound(v: Value) -> int:
    """The largest value: what a buffer sized by `v` must hold."""
    return bounds(v)[1]


def is_dynamic(v: object) -> bool:
    return isinstance(v, Expr)


def known_zero(v: Value) -> bool:
    """Whether v is 0 for every value of its symbols (an Expr never is: it would have simplified to 0)."""
    return isinstance(v, int) and v == 0


# -- serialisation ------------------------------------------------------------------------------------------

def to_json(v: Value):
    if isinstance(v, int):
        return v
    if v.op == "sym":
        return v.args[0].name
    return [v.op, *(to_json(a) for a in v.args)]


MAX_MAGNITUDE = LIMITS["max_number"]  # 2^53 - 1: every integer an expression names or computes
MAX_DEPTH = LIMITS["max_expression_depth"]  # nested operators in one expression
ARITY = {"+": None, "*": None, "//": 2, "%": 2, "max": 2, "min": 2}  # None: one or more


def from_json(j, symbols: dict[str, Symbol]) -> Value:
    """An expression as the artifact writes it (docs/artifact.md, Expressions), kept as written: no
    simplification, so its bounds are the interval arithmetic of that very tree, as every runtime computes
    them. Checked first (`interval`)."""
    interval(j, symbols)
    return _as_written(j, symbols)


def interval(j, symbols: dict[str, Symbol], depth: int = 0) -> tuple[int, int]:
    """The interval of the JSON expression `j`, by the exact interval arithmetic docs/artifact.md states
    (sums and products folded left to right, each step's interval checked); ValueError unless `j` is well
    formed, at most MAX_DEPTH operators deep, no divisor's interval holds 0 and every interval lies within
    ±MAX_MAGNITUDE. Every value the expression takes over its symbols' ranges then lies in the result, and so
    does every intermediate value of evaluating it: no division by zero is reachable and no value leaves 53
    bits (a float64 runtime evaluates it exactly)."""
    j = _integer(j)
    if isinstance(j, int):
        return j, j
    if isinstance(j, str):
        if j not in symbols:
            raise ValueError(f"expression names an undeclared symbol {json.dumps(j)[:40]}")
        return symbols[j].lo, symbols[j].hi
    if not isinstance(j, list) or not j:
        raise ValueError(f"not an expression: {json.dumps(j)[:60]}")
    op, *args = j
    if not isinstance(op, str) or op not in ARITY:
        raise ValueError(f"unknown expression operator {json.dumps(op)[:40]}")
    if len(args) != (ARITY[op] or len(args)) or not args:
        raise ValueError(f"operator {json.dumps(op)} with {len(args)} arguments")
    if depth >= MAX_DEPTH:
        raise ValueError(f"an expression nested deeper than {MAX_DEPTH}")
    ranges = [interval(a, symbols, depth + 1) for a in args]
    acc = ranges[0]
    for (blo, bhi) in ranges[1:]:
        alo, ahi = acc
        if op == "+":
            acc = (alo + blo, ahi + bhi)
        elif op in ("//", "%") and blo <= 0 <= bhi:
            raise ValueError(f"{json.dumps(j)[:80]}: the divisor's range [{blo}, {bhi}] includes 0")
        elif op == "%":  # the remainder takes the divisor's sign
            acc = (0, bhi - 1) if blo > 0 else (blo + 1, 0)
        else:
            corners = [_APPLY[op](x, y) for x in (alo, ahi) for y in (blo, bhi)]
            acc = (min(corners), max(corners))
        if not -MAX_MAGNITUDE <= acc[0] <= acc[1] <= MAX_MAGNITUDE:
            raise ValueError(f"{json.dumps(j)[:80]}: its range [{acc[0]}, {acc[1]}] is beyond 53 bits")
    return acc


def _integer(j):
    """`j`, an integer literal as an int (JSON's 16.0 is the integer 16, as JavaScript reads it); ValueError
    for a number that is not an integer within ±MAX_MAGNITUDE."""
    if isinstance(j, float) and j.is_integer() and abs(j) <= MAX_MAGNITUDE:
        return int(j)
    if isinstance(j, float) or (isinstance(j, int) and not isinstance(j, bool) and abs(j) > MAX_MAGNITUDE):
        raise ValueError(f"not an integer: {json.dumps(j)}")
    if isinstance(j, bool):
        raise ValueError(f"not an expression: {json.dumps(j)}")
    return j


def _as_written(j, symbols: dict[str, Symbol]) -> Value:
    """A checked JSON expression as an Expr of the same tree."""
    j = _integer(j)
    if isinstance(j, int):
        return j
    if isinstance(j, str):
        return Expr.symbol(symbols[j])
    op, *args = j
    return Expr(op, tuple(_as_written(a, symbols) for a in args))
