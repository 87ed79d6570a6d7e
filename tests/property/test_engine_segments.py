"""The recall engine's array operations give the bits of the scalar rules they replace."""

from __future__ import annotations

import math
import struct

import numpy as np
import numpy.typing as npt
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.fusion import clamp_unit, unit_power
from planner_svc.index.catalog import SourceEntry, group_columns
from planner_svc.recall.engine import (
    Float64s,
    _best_first,
    _best_positive,
    _laid_end_to_end,
    _PassageTable,
    _relative_rows,
    _segment_max,
    _unit_powers,
)

SCORES = st.one_of(st.floats(min_value=-2.0, max_value=50.0, allow_nan=False),
                   st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1.0]))
SHARPNESS = st.one_of(st.integers(min_value=1, max_value=16).map(float),
                      st.floats(min_value=0.1, max_value=16.0))


def _relative_segments(values: Float64s, best: Float64s, sharpness: float) -> Float64s:
    """The one-row reference for ``_relative_rows``: every value against its segment's ``best``
    (repeated per value), with the same operations per value, ``clamp((max(0, value) / best)
    ** sharpness)``; +0.0 where the best is not positive. float64 ``(len(values),)``."""
    positive = best > 0.0
    # max(0.0, -0.0) is +0.0 in Python; numpy may keep -0.0, and adding +0.0 makes it +0.0
    ratio = np.divide(np.maximum(0.0, values) + 0.0, best,
                      out=np.zeros(values.shape[0], dtype=np.float64), where=positive)
    # clamp_unit's bounds (the ratio is already in [0, 1] where the best is the segment's
    # largest value); +0.0 where the best is not positive, as _relative gives
    powered = _unit_powers(np.minimum(1.0, ratio), sharpness)
    powered = np.minimum(1.0, np.maximum(0.0, powered) + 0.0)
    return np.where(positive, powered, 0.0)


def _relative_reference(values: list[float], sharpness: float) -> list[float]:
    """A segment's relative scores, value by value, as the scalar rule states them."""
    best = max(values, default=0.0)
    if not best > 0.0:
        return [0.0] * len(values)
    return [clamp_unit(unit_power(clamp_unit(max(0.0, s) / best), sharpness)) for s in values]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(SCORES, max_size=6), min_size=1, max_size=8), SHARPNESS)
def test_relative_segments_equal_the_scalar_rule_bit_for_bit(
        segments: list[list[float]], sharpness: float) -> None:
    lengths = np.asarray([len(s) for s in segments], dtype=np.int64)
    flat = np.asarray([v for s in segments for v in s], dtype=np.float64)
    best = np.repeat(_segment_max(flat, lengths), lengths)
    got = _relative_segments(flat, best, sharpness).tolist()
    want = [v for s in segments for v in _relative_reference(s, sharpness)]
    assert [math.copysign(1.0, v) for v in got] == [math.copysign(1.0, v) for v in want]
    assert [v.hex() for v in got] == [v.hex() for v in want]
    assert _segment_max(flat, lengths).tolist() == [max(s, default=0.0) for s in segments]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(st.tuples(SCORES, SCORES), max_size=6), max_size=8), SHARPNESS,
       SHARPNESS)
def test_rows_of_segments_equal_each_row_alone_bit_for_bit(
        segments: list[list[tuple[float, float]]], first: float, second: float) -> None:
    """Two rows at once (hops' BM25 and cosine): each row's segment maxima and relative
    scores are those of the row alone."""
    lengths = np.asarray([len(s) for s in segments], dtype=np.int64)
    rows = np.asarray([[pair[i] for s in segments for pair in s] for i in (0, 1)],
                      dtype=np.float64).reshape(2, -1)
    best = _segment_max(rows, lengths)
    assert best.shape == (2, len(segments))
    for i in (0, 1):
        assert [v.hex() for v in best[i].tolist()] == [
            v.hex() for v in _segment_max(rows[i], lengths).tolist()]
    repeated = best.repeat(lengths, axis=1)
    got = _relative_rows(rows, repeated, (first, second))
    for i, sharpness in enumerate((first, second)):
        want = _relative_segments(rows[i], repeated[i], sharpness).tolist()
        assert [v.hex() for v in got[i].tolist()] == [v.hex() for v in want]
        assert [math.copysign(1.0, v) for v in got[i].tolist()] == [
            math.copysign(1.0, v) for v in want]
    got = _relative_rows(rows, repeated, (1.0, second))
    assert [v.hex() for v in got[0].tolist()] == [
        v.hex() for v in _relative_segments(rows[0], repeated[0], 1.0).tolist()]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(min_value=0.0, max_value=1.0), max_size=20), SHARPNESS)
def test_unit_powers_equal_unit_power(bases: list[float], exponent: float) -> None:
    got = _unit_powers(np.asarray(bases, dtype=np.float64), exponent).tolist()
    assert [v.hex() for v in got] == [unit_power(b, exponent).hex() for b in bases]


def _entry(group_of: list[int]) -> SourceEntry:
    """An entry whose member ``i`` sits in group ``group_of[i]`` (ids 100, 101, ..)."""
    ids = tuple(range(100, 100 + len(group_of)))
    groups: dict[int, list[int]] = {}
    for member, group in enumerate(group_of):
        groups.setdefault(group, []).append(member)
    grouped = list(groups.values())
    table = [*(m for g in grouped for m in g), *(len(g) for g in grouped),
             *(ids[g[0]] for g in grouped)]
    return SourceEntry(members=(), ids=ids, id_array=np.asarray(ids, dtype=np.int64),
                       group_table=np.asarray(table, dtype=np.int64))


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=0, max_value=4), max_size=9), min_size=1,
                max_size=7))
def test_group_columns_split_the_group_tables_like_the_entry_properties(
        layouts: list[list[int]]) -> None:
    entries = [_entry(layout) for layout in layouts]
    members, sizes, firsts, groups = group_columns(entries)
    assert members.tolist() == [m for e in entries for m in e.group_members.tolist()]
    assert sizes.tolist() == [n for e in entries for n in e.group_sizes.tolist()]
    assert firsts.tolist() == [f for e in entries for f in e.group_firsts.tolist()]
    assert groups.tolist() == [e.group_sizes.shape[0] for e in entries]
    assert groups.tolist() == [len(set(layout)) for layout in layouts]


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.text(alphabet="abcé", max_size=3),
                       st.one_of(st.sampled_from([0.0, -0.0, 0.5, 1.0]),
                                 st.floats(min_value=-1.0, max_value=1.0, allow_nan=False)),
                       max_size=12))
def test_best_first_orders_by_score_descending_then_key(scores: dict[str, float]) -> None:
    want = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))
    assert _best_first(scores) == want


@given(st.data(), st.lists(st.floats(min_value=0.0, max_value=20.0, allow_nan=False),
                            min_size=1, max_size=90))
def test_shares_add_the_held_weights_in_term_order(data: st.DataObject,
                                                   weights: list[float]) -> None:
    # any number of terms (a long CJK question has more than 64 character pairs)
    from planner_svc.recall.engine import _shares

    total = 0.0
    for w in weights:
        total += w
    if not total > 0.0:
        return
    groups = data.draw(st.lists(st.lists(st.booleans(), min_size=len(weights),
                                         max_size=len(weights)), max_size=12))
    expected = []
    for held in groups:
        got = 0.0
        for holds, w in zip(held, weights, strict=True):
            if holds:
                got += w
        expected.append(got / total)
    matrix = np.asarray(groups, dtype=np.bool_).reshape(len(groups), len(weights)).T
    shares = _shares(matrix, weights, total)
    assert [struct.pack("<d", v) for v in shares.tolist()] == [
        struct.pack("<d", v) for v in expected]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from("abcde"),
                          st.one_of(st.sampled_from([0.0, -0.0, 0.5, 1.0, 1e-300]),
                                    st.floats(min_value=-1.0, max_value=2.0))),
                max_size=30))
def test_best_positive_is_the_loop_over_the_positive_values(
        pairs: list[tuple[str, float]]) -> None:
    keys = [k for k, _v in pairs]
    values = [v for _k, v in pairs]
    positive = [v > 0.0 for v in values]
    expected: dict[str, int] = {}
    for i, (key, value) in enumerate(pairs):
        if positive[i] and (key not in expected or value > values[expected[key]]):
            expected[key] = i
    got = _best_positive(keys, values, positive)
    assert list(got.items()) == list(expected.items())


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(st.integers(min_value=-(2 ** 63), max_value=2 ** 63 - 1),
                         max_size=6), min_size=1, max_size=12),
       st.booleans(), st.booleans())
def test_laid_end_to_end_is_numpys_concatenation(values: list[list[int]], strided: bool,
                                                  writable: bool) -> None:
    arrays = [np.asarray(v, dtype=np.int64) for v in values]
    if strided:  # every other value: not C-contiguous (numpy joins them)
        arrays = [np.repeat(a, 2)[::2] for a in arrays]
    for a in arrays:  # the catalog's arrays are read-only
        a.setflags(write=False)
    got = _laid_end_to_end(arrays, writable=writable)
    want = np.concatenate(arrays)
    assert got.dtype == np.int64 and got.tolist() == want.tolist()
    if writable:  # a kernel may write into it: a new array, never one of the parts
        assert got.flags.writeable and got.flags.c_contiguous
        assert not any(np.shares_memory(got, a) for a in arrays)


class _IdentityView:
    """A passage view whose position of a row id is the id itself."""

    def positions(self, row_ids: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
        return np.asarray(row_ids, dtype=np.int64)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.lists(st.integers(min_value=0, max_value=7), max_size=8),
                          st.booleans()), max_size=5))
def test_table_rows_are_each_keys_first_load_in_order(
        batches: list[tuple[list[int], bool]]) -> None:
    """Every key keeps the rows of its first load (keys loaded in the order first named in
    a batch), with or without its lengths given: the straightforward bookkeeping."""
    groups = {k: np.arange(100 * k, 100 * k + k % 4, dtype=np.int64) for k in range(8)}
    table = _PassageTable(_IdentityView(), None)  # type: ignore[arg-type]
    first: dict[int, int] = {}
    size = 0
    for named, give_lengths in batches:
        keys = [f"doc{k}" for k in named]
        arrays = [groups[k] for k in named]
        lengths = [len(a) for a in arrays] if give_lengths else None
        got = table.rows(keys, arrays, lengths)
        for k in named:
            if k not in first:
                first[k] = size
                size += len(groups[k])
        want = [first[k] + j for k in named for j in range(len(groups[k]))]
        assert got.tolist() == want
        # each loaded row holds its id's position
        assert table._positions[got].tolist() == [int(i) for k in named for i in groups[k]]

