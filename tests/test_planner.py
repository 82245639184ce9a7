"""The memory planner is a pure function: no GPU, no torch."""

from __future__ import annotations

import random

import pytest

from webgpu_torch.compiler.planner import Lifetime, plan

pytestmark = pytest.mark.host


def overlaps(a: Lifetime, b: Lifetime) -> bool:
    return a.start <= b.end and b.start <= a.end


def test_disjoint_lifetimes_share_one_slot():
    p = plan([Lifetime(0, 100, 0, 1), Lifetime(1, 80, 2, 3), Lifetime(2, 120, 4, 4)])
    assert set(p.slot_of.values()) == {0}
    assert p.slot_sizes == (120,)


def test_a_value_read_at_i_is_not_reused_by_the_write_at_i():
    p = plan([Lifetime(0, 64, 0, 1), Lifetime(1, 64, 1, 2)])
    assert p.slot_of[0] != p.slot_of[1]


def test_best_fit_prefers_the_smallest_slot_that_fits():
    p = plan([Lifetime(0, 1000, 0, 0), Lifetime(1, 10, 0, 0), Lifetime(2, 10, 1, 1)])
    assert p.slot_of[2] == p.slot_of[1]


def test_random_programs_never_share_a_live_slot_and_stay_within_the_naive_total():
    rng = random.Random(7)
    for _ in range(200):
        lives = []
        for v in range(rng.randint(1, 40)):
            start = rng.randint(0, 30)
            lives.append(Lifetime(v, rng.choice([4, 16, 100, 4096, 65536]), start, start + rng.randint(0, 8)))
        p = plan(lives)
        for a in lives:
            assert p.slot_sizes[p.slot_of[a.value]] >= a.size
            for b in lives:
                if a.value < b.value and overlaps(a, b):
                    assert p.slot_of[a.value] != p.slot_of[b.value]
        assert sum(p.slot_sizes) <= sum(x.size for x in lives)


def test_rejects_a_lifetime_that_ends_before_it_starts():
    with pytest.raises(ValueError, match="ends before it starts"):
        plan([Lifetime(0, 4, 3, 2)])
