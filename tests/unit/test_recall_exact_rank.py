"""The compiled ranking of a search's hits: the bits of ordered_dots and the order of numpy's
stable argsort of the negated similarities, or no order when two are equal."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.recall.dots import ordered_dots
from planner_svc.recall.exact_rank import RANKED_MAX, ranked_dots


def same_bits(a: npt.NDArray[np.float64], b: npt.NDArray[np.float64]) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int64), b.view(np.int64)))


def check(vectors: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
          query: npt.NDArray[np.float32]) -> bool:
    """Compare with the numpy formulation; True when the kernel gave an order."""
    exact, order, ranked = ranked_dots(vectors, rows, query)
    expected = ordered_dots(vectors, rows, query)
    assert same_bits(exact, expected)
    numpy_order = (-expected).argsort(kind="stable")
    numpy_ranked = expected[numpy_order]
    tied = bool((numpy_ranked[1:] == numpy_ranked[:-1]).any())
    nan = bool(np.isnan(expected).any())
    if order is None:
        assert ranked is None
        assert tied or nan or rows.shape[0] > RANKED_MAX or rows.shape[0] == 0
        return False
    assert ranked is not None
    assert not tied and not nan
    assert np.array_equal(order, numpy_order)
    assert same_bits(ranked, numpy_ranked)
    return True


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(0, 80), dim=st.integers(1, 40),
       table=st.integers(1, 30), coarse=st.booleans(), nearly=st.booleans())
def test_matches_ordered_dots_and_argsort(seed: int, n: int, dim: int, table: int,
                                          coarse: bool, nearly: bool) -> None:
    rng = np.random.default_rng(seed)
    if coarse:  # few distinct values: equal similarities (ties) are frequent
        vectors = rng.integers(-2, 3, (table, dim)).astype(np.float32)
        query = rng.integers(-2, 3, dim).astype(np.float32)
    else:
        vectors = rng.standard_normal((table, dim)).astype(np.float32)
        query = rng.standard_normal(dim).astype(np.float32)
    rows = rng.integers(0, table, n).astype(np.int64)
    if nearly:  # nearly ranked already, as a search's candidates come
        rows = rows[np.argsort(-(vectors[rows] @ query), kind="stable")]
    check(vectors, rows, query)


def test_distinct_rows_are_ranked() -> None:
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((200, 256)).astype(np.float32)
    assert check(vectors, np.arange(200, dtype=np.int64), vectors[3])


def test_a_repeated_row_gives_no_order() -> None:
    vectors = np.eye(4, dtype=np.float32)
    assert not check(vectors, np.asarray([0, 1, 1], dtype=np.int64),
                     np.asarray([0.5, 0.25, 0.0, 0.0], dtype=np.float32))


def test_nan_gives_no_order() -> None:
    vectors = np.asarray([[np.nan, 1.0], [0.0, 1.0]], dtype=np.float32)
    assert not check(vectors, np.asarray([0, 1], dtype=np.int64),
                     np.asarray([1.0, 1.0], dtype=np.float32))


def test_read_only_inputs_and_too_many_rows() -> None:
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((RANKED_MAX + 5, 8)).astype(np.float32)
    vectors.setflags(write=False)
    rows = np.arange(RANKED_MAX + 1, dtype=np.int64)
    rows.setflags(write=False)
    assert not check(vectors, rows, vectors[0].copy())
    assert check(vectors, rows[:RANKED_MAX], vectors[0].copy())


def test_rows_out_of_range_and_bad_shapes_are_refused() -> None:
    vectors = np.zeros((3, 2), dtype=np.float32)
    query = np.ones(2, dtype=np.float32)
    with pytest.raises(IndexError):
        ranked_dots(vectors, np.asarray([3], dtype=np.int64), query)
    with pytest.raises(ValueError):
        ranked_dots(vectors, np.asarray([0], dtype=np.int64), np.ones(3, dtype=np.float32))
    with pytest.raises(ValueError):
        ranked_dots(np.asfortranarray(vectors), np.asarray([0], dtype=np.int64), query)
