"""The compiled hop values are the bits of the numpy formulation they replace."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.recall.engine import _hop_values
from planner_svc.recall.relevance import hop_values

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
        expected = _numpy_hop_values(lexical, cosine, targets, per_step, probed, scores,
                                     weights, decay, float(exponent))
        engine = _hop_values(lexical, cosine, targets, per_step, probed, scores, weights,
                             decay, float(exponent))
    got = hop_values(lexical, cosine, targets, per_step, probed, scores, weights, decay,
                     exponent)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))
    assert np.array_equal(engine.view(np.int64), expected.view(np.int64))


def test_counts_that_do_not_match_the_arrays_are_refused() -> None:
    one = np.ones(1)
    with pytest.raises(ValueError, match="nodes"):
        hop_values(one, one, np.asarray([2]), np.asarray([1]), np.ones(1, dtype=np.bool_),
                   one, one, 0.8, 4)
    with pytest.raises(ValueError, match="targets"):
        hop_values(one, one, np.asarray([1]), np.asarray([2]), np.ones(1, dtype=np.bool_),
                   one, one, 0.8, 4)


def _numpy_segment_max(values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """engine._segment_max's numpy formulation: -inf padded, reduceat, 0.0 for an empty run."""
    pad = np.full((*values.shape[:-1], 1), -np.inf)
    padded = np.concatenate((values, pad), axis=-1)
    starts = lengths.cumsum() - lengths
    return np.where(lengths > 0, np.maximum.reduceat(padded, starts, axis=-1), 0.0)


def _numpy_relative_rows(values: np.ndarray, best: np.ndarray,
                         sharpness: list[float]) -> np.ndarray:
    """engine._relative_rows' numpy formulation."""
    from planner_svc.recall.engine import _unit_powers

    positive = best > 0.0
    ratio = np.divide(np.maximum(0.0, values) + 0.0, best,
                      out=np.zeros(values.shape, dtype=np.float64), where=positive)
    ratio = np.minimum(1.0, ratio)
    for row, exponent in enumerate(sharpness):
        if exponent != 1.0:
            ratio[row] = _unit_powers(ratio[row], exponent)
    powered = np.minimum(1.0, np.maximum(0.0, ratio) + 0.0)
    return np.where(positive, powered, 0.0)


def _numpy_hop_values(lexical: np.ndarray, cosine: np.ndarray, targets: np.ndarray,
                      per_step: np.ndarray, probed: np.ndarray, scores: np.ndarray,
                      weights: np.ndarray, decay: float, sharpness: float) -> np.ndarray:
    """engine._hop_values' formulation in numpy alone (no compiled step): each target's best
    node, each step's best target, every target relative to it (the cosine sharpened and
    counted only for a probed step), then step score x weight x decay x relevance."""
    nodes = np.concatenate((lexical, cosine)).reshape(2, -1)
    best_node = _numpy_segment_max(nodes, targets)
    best_target = _numpy_segment_max(best_node, per_step).repeat(per_step, axis=1)
    relative = _numpy_relative_rows(best_node, best_target, [1.0, sharpness])
    cosine_relevance = np.where(probed.repeat(per_step), relative[1], 0.0)
    relevance = np.maximum(relative[0], cosine_relevance)
    values: np.ndarray = scores.repeat(per_step) * weights * decay * relevance
    return values


@settings(max_examples=300, deadline=None)
@given(data=st.data(), lengths=st.lists(st.integers(0, 4), min_size=1, max_size=8),
       rows=st.integers(1, 2), flat=st.booleans())
def test_segment_max_is_the_reduceat(data: st.DataObject, lengths: list[int], rows: int,
                                     flat: bool) -> None:
    from planner_svc.recall.engine import _segment_max

    runs = np.asarray(lengths, dtype=np.int64)
    n = int(runs.sum())
    shape = (n,) if flat else (rows, n)
    values = np.asarray(data.draw(st.lists(_VALUES, min_size=int(np.prod(shape)),
                                           max_size=int(np.prod(shape)))),
                        dtype=np.float64).reshape(shape)
    expected = _numpy_segment_max(values, runs)
    got = _segment_max(values, runs)
    assert got.shape == expected.shape
    # the sign of a zero maximum is numpy's choice (its loops differ); callers never read it
    assert np.array_equal(got + 0.0, expected + 0.0, equal_nan=True)


@settings(max_examples=300, deadline=None)
@given(data=st.data(), n=st.integers(0, 12),
       sharpness=st.lists(st.sampled_from([0.0, 1.0, 2.0, 3.0, 4.0, 8.0, 13.0]), min_size=1,
                          max_size=3))
def test_relative_rows_are_the_numpy_rows(data: st.DataObject, n: int,
                                          sharpness: list[float]) -> None:
    from planner_svc.recall.engine import _relative_rows

    shape = (len(sharpness), n)
    size = len(sharpness) * n
    values = np.asarray(data.draw(st.lists(_VALUES, min_size=size, max_size=size)),
                        dtype=np.float64).reshape(shape)
    best = np.asarray(data.draw(st.lists(_VALUES, min_size=size, max_size=size)),
                      dtype=np.float64).reshape(shape)
    with np.errstate(invalid="ignore", over="ignore", under="ignore"):
        expected = _numpy_relative_rows(values, best, sharpness)
    got = _relative_rows(values, best, sharpness)
    assert np.array_equal(got.view(np.int64), expected.view(np.int64))
