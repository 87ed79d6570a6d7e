"""The compiled passage ranking gives the bits and the order of numpy's path."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index.catalog import SourceEntry
from planner_svc.recall.engine import _Ranked, _Recall, _Scored
from planner_svc.recall.ranking import rank_groups

SCORES = st.one_of(st.floats(min_value=-2.0, max_value=50.0, allow_nan=False),
                   st.sampled_from([0.0, -0.0, 1e-300, 5e-324, 1.0, 0.5, 2.0]))
SHARPNESS = st.one_of(st.integers(min_value=0, max_value=16).map(float),
                      st.floats(min_value=0.1, max_value=16.0))


def _entry(first_id: int, group_of: list[int]) -> SourceEntry:
    """An entry whose member ``i`` sits in group ``group_of[i]`` (ids from ``first_id``)."""
    ids = tuple(range(first_id, first_id + len(group_of)))
    groups: dict[int, list[int]] = {}
    for member, group in enumerate(group_of):
        groups.setdefault(group, []).append(member)
    grouped = list(groups.values())
    table = [*(m for g in grouped for m in g), *(len(g) for g in grouped),
             *(ids[g[0]] for g in grouped)]
    return SourceEntry(members=(), ids=ids, id_array=np.asarray(ids, dtype=np.int64),
                       group_table=np.asarray(table, dtype=np.int64))


class _Fixed(_Recall):
    """A recall whose entries are given (no catalog)."""

    def __init__(self, entries: dict[str, SourceEntry], sharpness: float) -> None:
        self._fixed = entries
        # (a namespace: the settings' own checks reject an exponent of 0, the loop takes it)
        self.settings = SimpleNamespace(local_sharpness=sharpness)  # type: ignore[assignment]

    def entries(self, sources):  # type: ignore[no-untyped-def]
        return [self._fixed[s] for s in sources]


def _same(got: _Ranked, want: _Ranked) -> None:
    for name in ("owner", "sizes", "versions", "firsts"):
        a, b = getattr(got, name), getattr(want, name)
        assert a.dtype == b.dtype == np.int64, name
        assert a.tolist() == b.tolist(), name
    assert got.relevance.dtype == want.relevance.dtype == np.float64
    assert [v.hex() for v in got.relevance.tolist()] == [
        v.hex() for v in want.relevance.tolist()]


DOCUMENT = st.lists(st.integers(min_value=0, max_value=24), max_size=30)


@settings(max_examples=400, deadline=None)
@given(st.data(), st.lists(DOCUMENT, max_size=8), SHARPNESS,
       st.integers(min_value=1, max_value=3))
def test_compiled_ranking_equals_numpys_path(data: st.DataObject, layouts: list[list[int]],
                                            sharpness: float, ask_count: int) -> None:
    entries: dict[str, SourceEntry] = {}
    first = 100
    for d, layout in enumerate(layouts):
        entries[f"doc{d}"] = _entry(first, layout)
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
    recall = _Fixed(entries, sharpness)
    got = recall.rank(documents)
    want = recall._rank_arrays(documents, recall.entries(order))
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
                       entry.id_array.copy(), 4.0) is None
    recall = _Fixed({"d": entry}, 4.0)
    documents = [("d", _Scored(lexical, cosine, [n], ["d"]))]
    with np.errstate(invalid="ignore"):  # numpy's path divides an infinity by itself
        _same(recall.rank(documents), recall._rank_arrays(documents, [entry]))


def test_a_non_integral_sharpness_is_left_to_numpy() -> None:
    entry = _entry(10, [0, 1, 1])
    ones = np.ones(3, dtype=np.float64)
    assert rank_groups(ones, ones, np.zeros(1, dtype=np.int64), np.asarray([3]),
                       entry.group_table, np.asarray([entry.group_table.shape[0]]),
                       entry.id_array.copy(), 2.5) is None
