"""The reproducible logarithm: within two ulps of libm, the same bits from a fixed recipe."""

from __future__ import annotations

import math
import random

import pytest

from planner_svc.core.exactmath import LN2, ln


def test_ln_is_within_two_ulps_of_libm() -> None:
    rng = random.Random(3)
    for _ in range(20000):
        x = math.exp(rng.uniform(-700, 700))
        assert abs(ln(x) - math.log(x)) <= 2 * math.ulp(math.log(x)) + 1e-300


@pytest.mark.parametrize(("x", "expected"), [
    (1.0, 0.0), (2.0, LN2), (0.5, -LN2), (1024.0, 10 * LN2),
    # bit patterns this recipe gives (any IEEE-754 machine gives the same)
    (3.0, float.fromhex("0x1.193ea7aad030ap+0")),
    (10.0, float.fromhex("0x1.26bb1bbb55515p+1")),
])
def test_ln_known_values(x: float, expected: float) -> None:
    assert ln(x) == expected


@pytest.mark.parametrize("bad", [0.0, -1.0, math.inf, math.nan])
def test_ln_rejects_what_it_cannot_take(bad: float) -> None:
    with pytest.raises(ValueError):
        ln(bad)
