"""Recall fusion helpers (docs/architecture.md, "Recall and selection"; seed "Phase A")."""

from __future__ import annotations

import math
import random
import struct

import pytest

from planner_svc.core.fusion import (
    clamp_unit,
    fuse,
    max_fuse,
    relative_scores,
    sharpen,
    unit_power,
)


def test_fuse_blend() -> None:
    assert fuse(0.64, 0.25, 0.5) == 0.4  # sqrt(0.64) x sqrt(0.25)
    assert fuse(0.5, 0.5, 0.3) == pytest.approx(0.5)
    assert fuse(0.9, 0.1, 0.75) == math.pow(0.9, 0.75) * math.pow(0.1, 0.25)


def test_fuse_fast_paths_are_exact() -> None:
    assert fuse(0.123, 0.987, 1.0) == 0.123
    assert fuse(0.123, 0.987, 0.0) == 0.987
    # No 0 ** 0 at the extremes.
    assert fuse(0.0, 0.7, 0.0) == 0.7
    assert fuse(0.7, 0.0, 1.0) == 0.7


def test_fuse_zero_inputs_inside_the_range() -> None:
    assert fuse(0.0, 0.7, 0.5) == 0.0
    assert fuse(0.7, 0.0, 0.5) == 0.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [(-0.5, 0.0), (0.0, 0.0), (0.25, 0.25), (1.0, 1.0), (3.0, 1.0), (math.inf, 1.0),
     (-math.inf, 0.0), (math.nan, 0.0)],
)
def test_clamp_unit(value: float, expected: float) -> None:
    assert clamp_unit(value) == expected


def test_max_fuse_keeps_the_max_and_orders_by_id() -> None:
    structured = {"n2": 0.4, "n1": 0.9}
    semantic = {"n2": 0.7, "n3": 0.1}
    expanded = {"n1": 0.5}
    merged = max_fuse([structured, semantic, expanded])
    assert merged == {"n1": 0.9, "n2": 0.7, "n3": 0.1}
    assert list(merged) == ["n1", "n2", "n3"]
    assert list(max_fuse([expanded, semantic, structured])) == ["n1", "n2", "n3"]
    assert max_fuse([]) == {}


def test_relative_scores_divide_by_the_best_then_sharpen() -> None:
    got = relative_scores({"b": 0.5, "a": 2.0, "c": -1.0}, 2.0)
    assert got == {"a": 1.0, "b": 0.0625, "c": 0.0}
    assert list(got) == ["a", "b", "c"]
    assert relative_scores({}, 4.0) == {}


@pytest.mark.parametrize("scores", [{"a": 0.0, "b": 0.0}, {"a": -0.5}, {"a": math.nan}])
def test_relative_scores_without_a_positive_best_carry_no_signal(
    scores: dict[str, float],
) -> None:
    # A leg whose every score is 0 (e.g. a decay that underflowed) must not score 1.0.
    assert relative_scores(scores, 8.0) == {}


def test_sharpen_clamps_then_raises() -> None:
    assert sharpen({"b": 0.5, "a": 1.0, "c": 1.5, "d": -0.2}, 2.0) == {
        "a": 1.0, "b": 0.25, "c": 1.0, "d": 0.0,
    }
    assert sharpen({"x": 0.3}, 1.0) == {"x": 0.3}


def _bits(x: float) -> int:
    return int.from_bytes(struct.pack(">d", x), "big")


def _reference_chain(x: float, n: int) -> float:
    """The documented multiplication chain, written out for n = 1, 2, 3, 4, 8."""
    x2 = x * x
    x4 = x2 * x2
    return {1: x, 2: x2, 3: x * x2, 4: x4, 8: x4 * x4}[n]


@pytest.mark.parametrize("n", [1, 2, 3, 4, 8])
def test_integral_power_is_the_multiplication_chain_bit_for_bit(n: int) -> None:
    # libm pow is not correctly rounded on every platform and differs from this chain in the
    # last bit for about half of these inputs; weights feed the plan hash bit for bit.
    rng = random.Random(20260401)
    xs = [rng.random() for _ in range(2000)] + [0.0, 1.0, 5e-324, 0.5, 1 / 3]
    for x in xs:
        assert _bits(unit_power(x, float(n))) == _bits(_reference_chain(x, n)), x
    scores = {f"n{i}": x for i, x in enumerate(xs)}
    sharpened = sharpen(scores, float(n))
    assert all(
        _bits(sharpened[k]) == _bits(_reference_chain(v, n)) for k, v in scores.items()
    )
    best = max(xs)
    relative = relative_scores(scores, float(n))
    assert all(
        _bits(relative[k]) == _bits(_reference_chain(v / best, n)) for k, v in scores.items()
    )


def test_power_edge_cases() -> None:
    assert unit_power(0.3, 0.0) == 1.0
    assert unit_power(0.3, 4) == _reference_chain(0.3, 4)  # an int exponent works too
    assert unit_power(0.25, 0.5) == math.pow(0.25, 0.5) == 0.5  # non-integral: libm pow
    assert unit_power(0.0, 16.0) == 0.0
    assert unit_power(1e-200, 8.0) == 0.0  # underflows like pow
