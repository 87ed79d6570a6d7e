"""A search's compiled pass keeps numpy's rows, order and bits."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index import lexical
from planner_svc.index.best_rows import best_rows
from planner_svc.index.lexical import LexicalIndex, LexicalRow

TERMS = st.sampled_from(["a", "b", "c", "d", "e", "f"])
NOW = 1_000


def _index(documents: list[list[str]], ids: list[int], k1: float, b: float) -> LexicalIndex:
    index = LexicalIndex(k1=k1, b=b)
    index.add([LexicalRow(row_id=row_id, terms=terms, valid_from_us=0, valid_to_us=None,
                          tx_from_us=0, tx_to_us=None)
               for row_id, terms in zip(ids, documents, strict=True)])
    return index


@settings(max_examples=300, deadline=None)
@given(st.data(), st.lists(st.lists(TERMS, max_size=8), min_size=1, max_size=60),
       st.lists(TERMS, min_size=1, max_size=6), st.integers(min_value=1, max_value=70),
       st.sampled_from([(1.2, 0.75), (0.0, 0.0), (2.0, 1.0), (0.5, 0.3)]))
def test_compiled_search_equals_numpys_paths(data: st.DataObject, documents: list[list[str]],
                                             query: list[str], limit: int,
                                             params: tuple[float, float]) -> None:
    # row ids in any order (ties are broken by id, not by position)
    ids = data.draw(st.permutations(range(1000, 1000 + len(documents))))
    index = _index(documents, list(ids), *params)
    got = index.view(valid_us=NOW, tx_us=NOW).search(query, limit=limit)
    for ratio in (0, 10**9):  # numpy's sparse merge, then its dense sum
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(lexical, "best_rows", lambda *args: None)
            patch.setattr(lexical, "DENSE_POSTINGS_RATIO", ratio)
            want = index.view(valid_us=NOW, tx_us=NOW).search(query, limit=limit)
        assert [(i, s.hex()) for i, s in got] == [(i, s.hex()) for i, s in want]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(min_value=0, max_value=9),
                          st.sampled_from([0.5, 1.0, 0.25, 3.0, 1e-300, 0.1])),
                min_size=1, max_size=40),
       st.integers(min_value=1, max_value=12))
def test_best_rows_is_the_sorted_sums(postings: list[tuple[int, float]], limit: int) -> None:
    """Ties are likely: sums of a few values; the answer is every row's sum in input order,
    score descending then id, the first ``limit``."""
    rows = np.asarray([p for p, _ in postings], dtype=np.int64)
    values = np.asarray([v for _, v in postings], dtype=np.float64)
    row_ids = np.arange(100, 90, -1, dtype=np.int64)  # ids descend with positions
    sums: dict[int, float] = {}
    for p, v in postings:
        sums[p] = sums.get(p, 0.0) + v
    want = sorted(((int(row_ids[p]), s) for p, s in sums.items()),
                  key=lambda hit: (-hit[1], hit[0]))[:limit]
    found = best_rows(rows, values, 10, row_ids, limit)
    assert found is not None
    assert list(zip(found[0].tolist(), found[1].tolist(), strict=True)) == want


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_a_contribution_not_above_zero_or_not_finite_is_left_to_numpy(bad: float) -> None:
    rows = np.asarray([0, 1, 1], dtype=np.int64)
    assert best_rows(rows, np.asarray([1.0, bad, 2.0]), 2, np.arange(2), 5) is None
    with pytest.raises(IndexError):
        best_rows(rows, np.ones(3), 1, np.arange(2), 5)


@settings(max_examples=300, deadline=None)
@given(st.data(), st.lists(st.lists(TERMS, max_size=8), min_size=1, max_size=40),
       st.lists(st.sampled_from(["a", "b", "c", "d", "e", "f", "zz"]), max_size=8))
def test_holds_many_is_membership_in_each_terms_rows(data: st.DataObject,
                                                     documents: list[list[str]],
                                                     terms: list[str]) -> None:
    index = _index(documents, list(range(500, 500 + len(documents))), 1.2, 0.75)
    view = index.view(valid_us=NOW, tx_us=NOW)
    asked = data.draw(st.lists(st.integers(min_value=499, max_value=500 + len(documents)),
                               max_size=12))
    positions = view.positions(asked)
    got = view.holds_many(terms, positions)
    want = [[p >= 0 and term in documents[p] for p in positions.tolist()] for term in terms]
    assert got.dtype == np.bool_ and got.shape == (len(terms), len(asked))
    assert got.tolist() == want
