"""Integer expressions over dynamic dimensions (no GPU, no torch)."""

from __future__ import annotations

import pytest

from webgpu_torch.format import symbolic
from webgpu_torch.format.symbolic import Expr, Symbol

pytestmark = pytest.mark.host

P = Expr.symbol(Symbol("past", 2, 1024, 17))
S = Expr.symbol(Symbol("seq", 1, 64, 5))


def test_arithmetic_simplifies_and_evaluates():
    e = (P + 1) * 2 - P
    assert e == P + 2
    assert symbolic.evaluate(e, {"past": 10}) == 12
    assert (P * 0) == 0 and (P - P) == 0 and isinstance(P - P, int)
    assert symbolic.evaluate((P * S + 7) // 4 % 5, {"past": 9, "seq": 3}) == ((9 * 3 + 7) // 4) % 5
    assert symbolic.hint(P * S) == 17 * 5
    assert (64 * P + 16) // 16 == 4 * P + 1 and (64 * P + 16) % 16 == 0
    assert (P + 1) // (P + 1) == 1 and isinstance((P + 3) % 2, Expr)
    assert (4 * P + 4) // (P + 1) == 4 and (4 * P + 4) % (P + 1) == 0 and isinstance((4 * P + 5) // (P + 1), Expr)


def test_bounds_cover_every_value():
    e = (P + 1) * S - 3
    lo, hi = symbolic.bounds(e)
    values = [symbolic.evaluate(e, {"past": p, "seq": s}) for p in (2, 100, 1024) for s in (1, 9, 64)]
    assert lo <= min(values) and max(values) <= hi == 1025 * 64 - 3
    assert symbolic.bound(symbolic.maximum(P, 4 * S)) == 1024


def test_json_round_trip():
    symbols = {"past": P.args[0], "seq": S.args[0]}
    for e in [P + 1, 3 * P * S, (P + S) // 2, P % 7, symbolic.minimum(P, S)]:
        assert symbolic.from_json(symbolic.to_json(e), symbols) == e
    with pytest.raises(ValueError, match="undeclared symbol"):
        symbolic.from_json(["+", "nope", 1], symbols)


def test_dynamic_values_cannot_be_branched_on_by_accident():
    with pytest.raises(TypeError, match="no fixed order"):
        bool(P > 3)
    with pytest.raises(TypeError):
        int(P)
    with pytest.raises(TypeError):
        range(P)


def test_json_expressions_are_checked_as_written_over_the_symbols_whole_ranges():
    s = Symbol("s", 1, 64, 7)
    symbols = {"s": s}
    assert symbolic.interval(["+", "s", ["*", "s", -1]], symbols) == (-63, 63)  # as written, not simplified
    assert symbolic.interval(["//", ["*", "s", 3], 2], symbols) == (1, 96)
    assert symbolic.interval(["%", "s", -5], symbols) == (-4, 0)
    for divisor in (0, ["+", "s", -1], ["+", "s", -64], ["max", ["+", "s", -2], -1]):
        with pytest.raises(ValueError, match="includes 0"):
            symbolic.from_json(["//", 1, divisor], symbols)
    symbolic.from_json(["//", 1, ["+", "s", -65]], symbols)  # [-64, -1]: never 0
    with pytest.raises(ValueError, match="beyond 53 bits"):
        symbolic.from_json(["*", 2**30, 2**30, 2**30], symbols)  # each factor fits, a step of the fold does not
    with pytest.raises(ValueError, match="beyond 53 bits"):
        symbolic.from_json(["+", 2**53 - 1, "s"], symbols)
    deep = 1
    for _ in range(33):
        deep = ["+", deep, 1]
    with pytest.raises(ValueError, match="nested deeper than 32"):
        symbolic.from_json(deep, symbols)
    for bad, phrase in ((["+"], "0 arguments"), (["//", 1, 2, 3], "3 arguments"), ([True], "unknown expression"),
                        (1.5, "not an integer"), ("t", "undeclared symbol")):
        with pytest.raises(ValueError, match=phrase):
            symbolic.from_json(bad, symbols)
