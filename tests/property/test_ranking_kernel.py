"""The compiled passage ranking gives the bits and the order of numpy's path."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index.catalog import SourceEntry
from planner_svc.recall.engine import _Ranked, _Recall, _Scored, _shares, _unit_powers
from planner_svc.recall.ranking import best_share, rank_groups, relative_scores

SCORES = st.one_of(st.floats(min_value=-2.0, max_value=50.0, allow_nan=False),
                   st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1.0, 0.5, 2.0]))
SHARPNESS = st.one_of(st.integers(min_value=0, max_value=16).map(float),
                      st.floats(min_value=0.1, max_value=16.0))


def _entry(first_id: int, group_of: list[int], shuffle: int = 0) -> SourceEntry:
    """An entry whose member ``i`` sits in group ``group_of[i]`` (ids from ``first_id``); its
    groups listed in first-member order (as the catalog lists them), or rotated by
    ``shuffle`` and reversed when ``shuffle`` is odd (a table's order must not decide ties)."""
    ids = tuple(range(first_id, first_id + len(group_of)))
    groups: dict[int, list[int]] = {}
    for member, group in enumerate(group_of):
        groups.setdefault(group, []).append(member)
    grouped = list(groups.values())
    if shuffle and grouped:
        turn = shuffle % len(grouped)
        grouped = grouped[turn:] + grouped[:turn]
        if shuffle % 2:
            grouped.reverse()
    table = [*(m for g in grouped for m in g), *(len(g) for g in grouped),
             *(ids[g[0]] for g in grouped)]
    return SourceEntry(members=(), ids=ids, id_array=np.asarray(ids, dtype=np.int64),
                       group_table=np.asarray(table, dtype=np.int64))


class _Fixed(_Recall):
    """A recall whose entries are given (no catalog)."""

    def __init__(self, entries: dict[str, SourceEntry], sharpness: float,
                 document_sharpness: float = 2.0, floor: float = 0.3,
                 decay: float = 0.5) -> None:
        self._fixed = entries
        # (a namespace: the settings' own checks reject an exponent of 0, the loop takes it)
        self.settings = SimpleNamespace(  # type: ignore[assignment]
            local_sharpness=sharpness, document_sharpness=document_sharpness,
            passage_floor=floor, passage_decay=decay)

    def entries(self, sources):  # type: ignore[no-untyped-def]
        return [self._fixed[s] for s in sources]


def _same(got: _Ranked, want: _Ranked) -> None:
    for name in ("owner", "sizes", "versions", "firsts", "rank"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype == np.int64, name
        assert a.tolist() == b.tolist(), name
    for name in ("relevance", "score"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype == np.float64, name
        assert [v.hex() for v in a.tolist()] == [v.hex() for v in b.tolist()], name
    assert got.first_ids == want.first_ids
    assert got.first_sizes == want.first_sizes
    assert [v.hex() for v in got.first_scores] == [v.hex() for v in want.first_scores]


DOCUMENT = st.lists(st.integers(min_value=0, max_value=24), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.data(), st.lists(DOCUMENT, max_size=8), SHARPNESS, SHARPNESS,
       st.integers(min_value=1, max_value=3),
       st.one_of(st.just(0.3), st.floats(min_value=0.0, max_value=1.0)),
       st.one_of(st.just(0.5), st.floats(min_value=0.0, max_value=1.0)))
def test_compiled_ranking_equals_numpys_path(data: st.DataObject, layouts: list[list[int]],
                                            sharpness: float, document_sharpness: float,
                                            ask_count: int, floor: float,
                                            decay: float) -> None:
    entries: dict[str, SourceEntry] = {}
    first = 100
    for d, layout in enumerate(layouts):
        entries[f"doc{d}"] = _entry(first, layout, data.draw(st.integers(0, 7)))
        first += len(layout) + 7
    sources = list(entries)
    # each document scored by one of a few asks (an ask holds its sources' nodes in order)
    owner_ask = [data.draw(st.integers(min_value=0, max_value=ask_count - 1)) for _ in sources]
    asks: list[_Scored] = []
    for a in range(ask_count):
        mine = [s for s, o in zip(sources, owner_ask, strict=True) if o == a]
        lengths = [len(entries[s].ids) for s in mine]
        total = sum(lengths)
        # ties are likely: values drawn from a few
        pool = data.draw(st.lists(SCORES, min_size=1, max_size=4))
        lexical = data.draw(st.lists(st.sampled_from(pool), min_size=total, max_size=total))
        cosine = data.draw(st.lists(st.one_of(st.sampled_from(pool), SCORES),
                                    min_size=total, max_size=total))
        asks.append(_Scored(np.asarray(lexical, dtype=np.float64),
                            np.asarray(cosine, dtype=np.float64), lengths, mine))
    order = data.draw(st.permutations(sources))
    documents = [(s, asks[owner_ask[sources.index(s)]]) for s in order]
    scores = data.draw(st.lists(st.one_of(st.floats(min_value=0.0, max_value=1.0),
                                          st.sampled_from([0.0, 1.0, 5e-324])),
                                min_size=len(order), max_size=len(order)))
    recall = _Fixed(entries, sharpness, document_sharpness, floor, decay)
    got = recall.rank(documents, scores)
    want = recall._rank_arrays(documents, recall.entries(order), scores)
    _same(got, want)


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=6),
       st.sampled_from([np.nan, np.inf, -np.inf]), st.booleans())
def test_a_score_not_finite_is_left_to_numpy(layout: list[int], bad: float,
                                            in_cosine: bool) -> None:
    entry = _entry(10, layout)
    n = len(layout)
    lexical = np.ones(n, dtype=np.float64)
    cosine = np.full(n, 0.5, dtype=np.float64)
    (cosine if in_cosine else lexical)[n - 1] = bad
    assert rank_groups(lexical, cosine, np.zeros(1, dtype=np.int64),
                       np.asarray([n], dtype=np.int64), entry.group_table,
                       np.asarray([entry.group_table.shape[0]], dtype=np.int64),
                       entry.id_array.copy(), 4.0, np.ones(1), 2.0, 0.3,
                       np.ones(8)) is None
    recall = _Fixed({"d": entry}, 4.0)
    documents = [("d", _Scored(lexical, cosine, [n], ["d"]))]
    with np.errstate(invalid="ignore"):  # numpy's path divides an infinity by itself
        _same(recall.rank(documents, [0.5]), recall._rank_arrays(documents, [entry], [0.5]))


def test_more_groups_than_the_decay_run_are_left_to_numpy() -> None:
    entry = _entry(10, [0, 1, 2, 3])
    ones = np.ones(4, dtype=np.float64)
    args = (ones, ones, np.zeros(1, dtype=np.int64), np.asarray([4]), entry.group_table,
            np.asarray([entry.group_table.shape[0]]), entry.id_array.copy(), 4.0,
            np.ones(1), 2.0, 0.3)
    assert rank_groups(*args, np.ones(3)) is None
    assert rank_groups(*args, np.ones(4)) is not None


def test_a_non_integral_sharpness_is_left_to_numpy() -> None:
    entry = _entry(10, [0, 1, 1])
    ones = np.ones(3, dtype=np.float64)
    args = (ones, ones, np.zeros(1, dtype=np.int64), np.asarray([3]), entry.group_table,
            np.asarray([entry.group_table.shape[0]]), entry.id_array.copy())
    assert rank_groups(*args, 2.5, np.ones(1), 2.0, 0.3, np.ones(8)) is None
    assert rank_groups(*args, 4.0, np.ones(1), 2.5, 0.3, np.ones(8)) is None
    assert rank_groups(*args, 4.0, np.ones(1), 2.0, 0.3, np.ones(8)) is not None


def _relative_numpy(values: np.ndarray, best: float, sharpness: float) -> list[float]:
    """engine._relative's numpy path (finite values, one best above 0.0)."""
    ratio = (np.maximum(0.0, values) + 0.0) / best
    powered = _unit_powers(np.minimum(1.0, ratio), sharpness)
    return np.minimum(1.0, np.maximum(0.0, powered) + 0.0).tolist()


@settings(max_examples=400, deadline=None)
@given(st.lists(st.one_of(SCORES, st.floats(allow_nan=False, allow_infinity=False)),
                min_size=1, max_size=40),
       st.one_of(st.integers(min_value=0, max_value=20).map(float),
                 st.sampled_from([1024.0, 1025.0, 2.5, 0.5])))
def test_compiled_relative_scores_equal_numpys_path(values: list[float],
                                                    sharpness: float) -> None:
    best = max(values)
    if not best > 0.0:
        return
    array = np.asarray(values, dtype=np.float64)
    got = relative_scores(array, best, sharpness)
    if not (sharpness.is_integer() and sharpness <= 1024.0):
        assert got is None
        return
    assert got is not None
    with np.errstate(over="ignore", under="ignore"):
        want = _relative_numpy(array, best, sharpness)
    assert [v.hex() for v in got.tolist()] == [v.hex() for v in want]


@given(st.sampled_from([np.nan, np.inf, -np.inf]))
def test_relative_scores_leave_a_value_not_finite_to_numpy(bad: float) -> None:
    assert relative_scores(np.asarray([1.0, bad, 0.5]), 1.0, 4.0) is None


@settings(max_examples=300, deadline=None)
@given(st.data(), st.integers(min_value=1, max_value=8), st.integers(min_value=1, max_value=6))
def test_best_share_is_the_first_largest_of_numpys_shares(data: st.DataObject, terms: int,
                                                         columns: int) -> None:
    held = np.asarray(data.draw(st.lists(st.lists(st.booleans(), min_size=columns,
                                                  max_size=columns),
                                         min_size=terms, max_size=terms)), dtype=np.bool_)
    column = st.integers(min_value=0, max_value=columns - 1)
    pairs = data.draw(st.lists(st.tuples(column, column), max_size=8))
    chosen = data.draw(st.one_of(st.just([]), st.lists(column, min_size=2, max_size=3)))
    weights = data.draw(st.lists(st.one_of(st.floats(min_value=0.0, max_value=20.0),
                                           st.sampled_from([0.5, 1.0, 0.1])),
                                 min_size=terms, max_size=terms))
    total = sum(weights) or 1.0
    first, second = [a for a, _ in pairs], [b for _, b in pairs]
    got = best_share(held, first, second, chosen, weights, total)
    if not pairs and not chosen:
        assert got is None
        return
    together = held[:, first] | held[:, second]
    if chosen:
        union = np.logical_or.reduce(held[:, chosen], axis=1)
        together = np.concatenate([together, union[:, None]], axis=1)
    shares = _shares(together, weights, total)
    at = int(shares.argmax())
    assert got is not None
    assert got[0] == at
    assert got[1].hex() == float(shares[at]).hex()
