"""The compiled hop values are the bits of the numpy formulation they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.recall.engine import _hop_values
from planner_svc.recall.hopscore import hop_values

_VALUES = st.one_of(st.floats(-2.0, 30.0), st.sampled_from([0.0, -0.0, 1.0, float("nan")]))


@settings(max_examples=300, deadline=None)
@given(data=st.data(), steps=st.lists(st.lists(st.integers(0, 4), max_size=5), min_size=1,
                                      max_size=4),
       exponent=st.sampled_from([0, 1, 2, 3, 4, 5, 8, 13]),
       decay=st.floats(0.01, 1.0))
def test_hop_values_are_the_numpy_values(data: st.DataObject, steps: list[list[int]],
                                         exponent: int, decay: float) -> None:
    targets = np.asarray([n for step in steps for n in step], dtype=np.int64)
    per_step = np.asarray([len(step) for step in steps], dtype=np.int64)
    nodes = int(targets.sum())
    lexical = np.asarray(data.draw(st.lists(_VALUES, min_size=nodes, max_size=nodes)),
                         dtype=np.float64)
    cosine = np.asarray(data.draw(st.lists(_VALUES, min_size=nodes, max_size=nodes)),
                        dtype=np.float64)
    probed = np.asarray(data.draw(st.lists(st.booleans(), min_size=len(steps),
                                           max_size=len(steps))), dtype=np.bool_)
    scores = np.asarray(data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(steps),
                                           max_size=len(steps))), dtype=np.float64)
    weights = np.asarray(data.draw(st.lists(st.floats(0.0, 1.0), min_size=len(targets),
                                            max_size=len(targets))), dtype=np.float64)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        expected = _hop_values(lexical, cosine, targets, per_step, probed, scores, weights,
                               decay, float(exponent))
    got = hop_values(lexical, cosine, targets, per_step, probed, scores, weights, decay,
                     exponent)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))


def test_counts_that_do_not_match_the_arrays_are_refused() -> None:
    one = np.ones(1)
    with pytest.raises(ValueError, match="nodes"):
        hop_values(one, one, np.asarray([2]), np.asarray([1]), np.ones(1, dtype=np.bool_),
                   one, one, 0.8, 4)
    with pytest.raises(ValueError, match="targets"):
        hop_values(one, one, np.asarray([1]), np.asarray([2]), np.ones(1, dtype=np.bool_),
                   one, one, 0.8, 4)
