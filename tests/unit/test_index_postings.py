"""The compiled postings lookups give what their numpy formulations give, bit for bit."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index.lexical import LexicalIndex, LexicalRow
from planner_svc.index.postings import (
    held_by_groups,
    map_positions,
    postings_sums,
    postings_sums_many,
    postings_table,
)

Int64s = npt.NDArray[np.int64]


def _reference_table(lists: list[Int64s], values: list[npt.NDArray[np.float64]],
                     positions: Int64s) -> tuple[npt.NDArray[np.float64], npt.NDArray[np.bool_]]:
    """The numpy formulation: searchsorted per list, a gather, a comparison, a selection."""
    table = np.zeros((len(lists), positions.shape[0]), dtype=np.float64)
    hit = np.zeros((len(lists), positions.shape[0]), dtype=np.bool_)
    for t, (keys, vals) in enumerate(zip(lists, values, strict=True)):
        if not keys.shape[0]:
            continue
        at = np.minimum(keys.searchsorted(positions), keys.shape[0] - 1)
        hit[t] = keys[at] == positions
        table[t] = np.where(hit[t], vals[at], 0.0)
    return table, hit


_LISTS = st.lists(st.lists(st.integers(0, 60), unique=True, max_size=30), min_size=1,
                  max_size=6)


@settings(max_examples=200, deadline=None)
@given(dense=st.lists(st.integers(-1, 40), max_size=50),
       live=st.lists(st.booleans(), max_size=40),
       ids=st.lists(st.integers(-5, 60), max_size=30), live_only=st.booleans())
def test_map_positions_is_the_masked_lookup(dense: list[int], live: list[bool],
                                            ids: list[int], live_only: bool) -> None:
    table = np.asarray(dense, dtype=np.int64)
    mask = np.asarray([*live, False], dtype=np.bool_)
    size = len(live)
    wanted = np.asarray(ids, dtype=np.int64)
    out = np.empty(wanted.shape[0], dtype=np.int64)
    unknown = map_positions(wanted, table, mask, live_only, out)
    expected, missing = [], 0
    for row in ids:
        position = dense[row] if 0 <= row < len(dense) else -1
        missing += position < 0
        keep = 0 <= position < size and (live[position] or not live_only)
        expected.append(position if keep else -1)
    assert unknown == missing
    assert out.tolist() == expected


def _index(rows: list[list[str]]) -> LexicalIndex:
    index = LexicalIndex()
    for i, terms in enumerate(rows):  # one batch per row: several segments
        index.add([LexicalRow(row_id=10 + 3 * i, terms=terms, valid_from_us=0,
                              valid_to_us=None, tx_from_us=0, tx_to_us=None)])
    return index


_WORDS = st.sampled_from(["a", "b", "c", "d", "e", "f"])


@settings(max_examples=150, deadline=None)
@given(rows=st.lists(st.lists(_WORDS, max_size=5), min_size=1, max_size=12),
       groups=st.lists(st.lists(st.integers(0, 40), max_size=5), max_size=5),
       among=st.sets(st.sampled_from(["a", "b", "c", "x", "f"])))
def test_held_terms_many_is_held_terms_of_each_group(rows: list[list[str]],
                                                     groups: list[list[int]],
                                                     among: set[str]) -> None:
    index = _index(rows)
    view = index.view(valid_us=1, tx_us=1)
    asked = [np.asarray([10 + 3 * (g % (len(rows) + 2)) for g in group], dtype=np.int64)
             for group in groups]
    got = view.held_terms_many(asked, among)
    assert got == [view.held_terms(group.tolist(), among) for group in asked]


def test_held_by_groups_marks_each_groups_terms() -> None:
    row_ptr = np.asarray([0, 2, 3, 5], dtype=np.int64)  # positions 4, 5, 6 of a segment at 4
    row_terms = np.asarray([1, 7, 3, 1, 9], dtype=np.int64)
    positions = np.asarray([4, -1, 6, 5, 99], dtype=np.int64)
    offsets = np.asarray([0, 2, 4, 5], dtype=np.int64)
    wanted = np.asarray([1, 3, 9], dtype=np.int64)
    out = np.zeros((3, 3), dtype=np.bool_)
    held_by_groups(4, row_ptr, row_terms, positions, offsets, wanted, out)
    assert out.tolist() == [[True, False, False], [True, True, True], [False, False, False]]


def test_held_by_groups_refuses_what_would_read_outside_its_arrays() -> None:
    row_ptr = np.asarray([0, 2, 3, 5], dtype=np.int64)
    row_terms = np.asarray([1, 7, 3, 1, 9], dtype=np.int64)
    positions = np.asarray([4, 5, 6], dtype=np.int64)
    wanted = np.asarray([1, 3, 9], dtype=np.int64)
    out = np.zeros((2, 3), dtype=np.bool_)

    def held(offsets: list[int], ptr: npt.NDArray[np.int64] = row_ptr,
             answer: npt.NDArray[np.bool_] = out) -> None:
        held_by_groups(4, ptr, row_terms, positions, np.asarray(offsets, dtype=np.int64),
                       wanted, answer)

    for offsets in ([0, 2, 4], [0, 3, 1], [-1, 1, 3], []):  # past the end, descending, ...
        with pytest.raises(ValueError, match="offsets"):
            held(offsets)
    with pytest.raises(ValueError, match="out is not"):
        held([0, 1, 2, 3])  # three groups, two rows of out
    assert not out.any()  # the offsets are all checked before any position is read
    with pytest.raises(ValueError, match="row_ptr"):
        held([0, 1, 3], np.asarray([0, 2, 3, 6], dtype=np.int64))  # a row past row_terms


def test_map_positions_refuses_a_short_answer_or_an_empty_mask() -> None:
    ids = np.asarray([0, 1], dtype=np.int64)
    dense = np.asarray([0, 1], dtype=np.int64)
    with pytest.raises(ValueError, match="out"):
        map_positions(ids, dense, np.asarray([True, True, False]), True,
                      np.empty(1, dtype=np.int64))
    with pytest.raises(ValueError, match="live_or_past"):
        map_positions(ids, dense, np.zeros(0, dtype=np.bool_), True,
                      np.empty(2, dtype=np.int64))


@settings(max_examples=200, deadline=None)
@given(lists=_LISTS, positions=st.lists(st.integers(-1, 62), min_size=1, max_size=30),
       picks=st.lists(st.integers(0, 5), max_size=6), rows=st.lists(st.integers(0, 29),
                                                                    max_size=20),
       split=st.integers(0, 6), seed=st.integers(0, 2**32 - 1))
def test_postings_sums_add_the_table_rows_in_term_order(
        lists: list[list[int]], positions: list[int], picks: list[int], rows: list[int],
        split: int, seed: int) -> None:
    """The sums against the numpy formulation they replace: each term's row of the table
    gathered at the rows, added term by term from the first (0.0 for no term); the same sums
    from two calls, the second adding to the first."""
    rng = np.random.default_rng(seed)
    keys = [np.asarray(sorted(r), dtype=np.int64) for r in lists]
    values = [rng.standard_normal(k.shape[0]) * 10.0 ** rng.integers(-8, 8) for k in keys]
    terms = np.asarray([p % len(keys) for p in picks], dtype=np.int64)
    table_positions = np.asarray(positions, dtype=np.int64)
    asked = np.asarray([r % len(positions) for r in rows], dtype=np.int64)
    starts = np.asarray([0, *np.cumsum([k.shape[0] for k in keys])], dtype=np.int64)
    joined, contributions = np.concatenate(keys), np.concatenate(values)
    table, _hit = _reference_table(keys, values, table_positions)
    if terms.shape[0]:
        expected = table[terms[0]][asked]
        for t in terms[1:].tolist():
            expected = expected + table[t][asked]
    else:
        expected = np.zeros(asked.shape[0])
    out = np.full(asked.shape[0], 3.0)  # fresh sums overwrite it, with no term too (0.0)
    postings_sums(joined, starts, contributions, terms, table_positions, asked, True, out)
    assert np.array_equal(out.view(np.int64), expected.view(np.int64))
    cut = min(split, terms.shape[0])
    if cut:
        parts = np.full(asked.shape[0], 5.0)
        postings_sums(joined, starts, contributions, terms[:cut].copy(), table_positions,
                      asked, True, parts)
        postings_sums(joined, starts, contributions, terms[cut:].copy(), table_positions,
                      asked, False, parts)
        assert np.array_equal(parts.view(np.int64), expected.view(np.int64))


@settings(max_examples=300, deadline=None)
@given(lists=st.lists(st.lists(st.integers(0, 200), unique=True, max_size=120), min_size=1,
                      max_size=6),
       positions=st.lists(st.integers(-1, 202), min_size=1, max_size=60),
       asks=st.lists(st.tuples(st.lists(st.integers(0, 5), max_size=5),
                               st.lists(st.integers(0, 59), max_size=30), st.booleans()),
                     max_size=4),
       seed=st.integers(0, 2**32 - 1))
def test_postings_sums_many_is_postings_sums_ask_by_ask(
        lists: list[list[int]], positions: list[int],
        asks: list[tuple[list[int], list[int], bool]], seed: int) -> None:
    """The bits postings_sums gives each ask alone, for rows in any order: ascending runs
    (where the galloping search applies), descents, repeats and positions of -1."""
    rng = np.random.default_rng(seed)
    keys = [np.asarray(sorted(r), dtype=np.int64) for r in lists]
    values = [rng.standard_normal(k.shape[0]) for k in keys]
    starts = np.asarray([0, *np.cumsum([k.shape[0] for k in keys])], dtype=np.int64)
    joined, contributions = np.concatenate(keys), np.concatenate(values)
    table_positions = np.asarray(positions, dtype=np.int64)
    terms = [np.asarray([t % len(keys) for t in ts], dtype=np.int64) for ts, _r, _s in asks]
    rows = []
    for _t, rs, ascending in asks:
        picked = [r % len(positions) for r in rs]
        if ascending:  # rows by position: the galloping search on every row but the first
            picked.sort(key=positions.__getitem__)
        rows.append(np.asarray(picked, dtype=np.int64))
    flat_rows = np.concatenate([np.zeros(0, dtype=np.int64), *rows])
    out = np.full(flat_rows.shape[0], 9.0)
    postings_sums_many(joined, starts, contributions,
                       np.concatenate([np.zeros(0, dtype=np.int64), *terms]),
                       np.asarray([0, *np.cumsum([t.shape[0] for t in terms])], dtype=np.int64),
                       table_positions, flat_rows,
                       np.asarray([0, *np.cumsum([r.shape[0] for r in rows])], dtype=np.int64),
                       out)
    expected = []
    for ask_terms, ask_rows in zip(terms, rows, strict=True):
        alone = np.zeros(ask_rows.shape[0])
        postings_sums(joined, starts, contributions, ask_terms, table_positions, ask_rows,
                      True, alone)
        expected.append(alone)
    want = np.concatenate([np.zeros(0), *expected])
    assert np.array_equal(out.view(np.int64), want.view(np.int64))


@settings(max_examples=300, deadline=None)
@given(lists=st.lists(st.lists(st.integers(0, 200), unique=True, max_size=120), min_size=1,
                      max_size=6),
       positions=st.lists(st.integers(-1, 202), max_size=60), ascending=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_postings_table_is_the_search_gather_and_select(
        lists: list[list[int]], positions: list[int], ascending: bool, seed: int) -> None:
    """The values and flags of the numpy formulation, for positions in any order: ascending
    (the galloping search on every position but the first), descents, repeats and -1."""
    rng = np.random.default_rng(seed)
    keys = [np.asarray(sorted(rows), dtype=np.int64) for rows in lists]
    values = [rng.standard_normal(k.shape[0]) for k in keys]
    wanted = np.asarray(sorted(positions) if ascending else positions, dtype=np.int64)
    starts = np.asarray([0, *np.cumsum([k.shape[0] for k in keys])], dtype=np.int64)
    table = np.full((len(keys), wanted.shape[0]), 9.0)
    hit = np.zeros((len(keys), wanted.shape[0]), dtype=np.bool_)
    postings_table(np.concatenate(keys), starts, np.concatenate(values), wanted, table, hit)
    expected, expected_hit = _reference_table(keys, values, wanted)
    assert np.array_equal(hit, expected_hit)
    assert np.array_equal(table.view(np.int64), expected.view(np.int64))


def test_runs_outside_the_keys_are_refused_not_read() -> None:
    keys = np.asarray([1, 3, 5], dtype=np.int64)
    values = np.asarray([0.5, 1.5, 2.5])
    positions = np.asarray([3, 5], dtype=np.int64)
    rows = np.asarray([0, 1], dtype=np.int64)
    terms = np.asarray([0], dtype=np.int64)
    for starts in ([0, 9], [0, 3, 1], [-1, 3], []):
        bad = np.asarray(starts, dtype=np.int64)
        with pytest.raises(ValueError):
            postings_table(keys, bad, values, positions, np.zeros((max(len(starts) - 1, 0), 2)),
                           np.zeros((max(len(starts) - 1, 0), 2), dtype=np.bool_))
        with pytest.raises((ValueError, IndexError)):
            postings_sums(keys, bad, values, terms, positions, rows, True, np.zeros(2))
    good = np.asarray([0, 3], dtype=np.int64)
    with pytest.raises(ValueError):  # one sum short
        postings_sums(keys, good, values, terms, positions, rows, True, np.zeros(1))
    with pytest.raises(ValueError):  # a table row short
        postings_table(keys, good, values, positions, np.zeros((1, 1)),
                       np.zeros((1, 1), dtype=np.bool_))
    with pytest.raises(ValueError):  # term runs that do not ascend
        postings_sums_many(keys, good, values, np.asarray([0, 0], dtype=np.int64),
                           np.asarray([0, 2, 1], dtype=np.int64), positions, rows,
                           np.asarray([0, 1, 2], dtype=np.int64), np.zeros(2))
    out = np.zeros(2)
    postings_sums(keys, good, values, terms, positions, rows, True, out)
    assert out.tolist() == [1.5, 2.5]
