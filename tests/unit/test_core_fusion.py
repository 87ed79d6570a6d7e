"""Recall fusion helpers (DESIGN section 5; seed "Phase A")."""

from __future__ import annotations

import math

import pytest

from planner_svc.core.fusion import clamp_unit, fuse, max_fuse


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
