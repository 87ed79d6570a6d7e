"""The compiled pooling gives the bits of the numpy running sums it replaces."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from planner_svc.embed.base import normalize_rows, ordered_sum
from planner_svc.embed.pooling import pool_tokens


def reference(table: npt.NDArray[np.float32], rows: npt.NDArray[np.int64],
              weights: npt.NDArray[np.float64] | None,
              lengths: list[int]) -> npt.NDArray[np.float32]:
    """Each text's rows widened, weighted, added in token order by numpy, then normalised."""
    sums = np.zeros((len(lengths), table.shape[1]), dtype=np.float64)
    start = 0
    for i, length in enumerate(lengths):
        part = table[rows[start:start + length]].astype(np.float64)
        if weights is not None:
            part *= weights[start:start + length][:, None]
        if length:
            sums[i] = ordered_sum(part, axis=0)
        start += length
    return normalize_rows(sums)


def same_bits(a: npt.NDArray[np.float32], b: npt.NDArray[np.float32]) -> bool:
    return a.shape == b.shape and bool(np.array_equal(a.view(np.int32), b.view(np.int32)))


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("lengths", [[], [0], [1], [3, 0, 5], [40, 1, 2, 0, 7]])
def test_equal_to_the_numpy_running_sums_bit_for_bit(weighted: bool, lengths: list[int]) -> None:
    rng = np.random.default_rng(sum(lengths) + weighted)
    table = rng.standard_normal((30, 256)).astype(np.float16).astype(np.float32)
    rows = rng.integers(0, 30, sum(lengths)).astype(np.int64)
    weights = rng.random(sum(lengths)).astype(np.float32).astype(np.float64) if weighted else None
    got = pool_tokens(table, rows, weights, lengths)
    assert same_bits(got, reference(table, rows, weights, lengths))
    assert got.shape == (len(lengths), 256)
    for i, length in enumerate(lengths):
        assert (np.linalg.norm(got[i]) > 0.99) == (length > 0)


def test_the_sum_starts_from_the_first_row_itself() -> None:
    # a running sum keeps a first value of -0.0; 0.0 + -0.0 would not, nor its sign after
    # normalising
    table = np.asarray([[-0.0, 1.0], [0.0, 2.0]], dtype=np.float32)
    got = pool_tokens(table, np.asarray([0], dtype=np.int64), None, [1])
    assert np.signbit(got[0, 0]) and got[0, 1] == 1.0
    assert same_bits(got, reference(table, np.asarray([0]), None, [1]))


def test_a_text_whose_rows_cancel_has_no_direction() -> None:
    table = np.asarray([[1.0, -2.0], [-1.0, 2.0]], dtype=np.float32)
    got = pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [2])
    assert not got.any()


def test_read_only_tables_are_read_in_place() -> None:
    table = np.eye(3, dtype=np.float32)
    table.setflags(write=False)
    got = pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [2])
    assert np.allclose(got, [[2 ** -0.5, 2 ** -0.5, 0.0]])


def test_bad_shapes_and_rows_are_refused() -> None:
    table = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(ValueError, match="add up to 3"):
        pool_tokens(table, np.asarray([0, 1], dtype=np.int64), None, [3])
    with pytest.raises(ValueError, match="weights"):
        pool_tokens(table, np.asarray([0, 1], dtype=np.int64), np.ones(1), [2])
    with pytest.raises(ValueError, match="at least one column"):
        pool_tokens(np.ones((4, 0), dtype=np.float32), np.asarray([0]), None, [1])
    with pytest.raises(IndexError):
        pool_tokens(table, np.asarray([4], dtype=np.int64), None, [1])


finite16 = st.floats(-60000, 60000, allow_nan=False, width=16)


@settings(max_examples=150, deadline=None)
@given(data=st.data(), dim=st.integers(1, 24), vocabulary=st.integers(1, 9),
       lengths=st.lists(st.integers(0, 12), max_size=5), weighted=st.booleans())
def test_any_half_precision_table(data: st.DataObject, dim: int, vocabulary: int,
                                  lengths: list[int], weighted: bool) -> None:
    table = data.draw(hnp.arrays(np.float16, (vocabulary, dim), elements=finite16)
                      ).astype(np.float32)
    rows = data.draw(hnp.arrays(np.int64, sum(lengths),
                                elements=st.integers(0, vocabulary - 1)))
    weights = (data.draw(hnp.arrays(np.float32, sum(lengths),
                                    elements=st.floats(0, 4, width=32))).astype(np.float64)
               if weighted else None)
    with np.errstate(over="ignore", invalid="ignore"):
        expected = reference(table, rows, weights, lengths)
    assert same_bits(pool_tokens(table, rows, weights, lengths), expected)
