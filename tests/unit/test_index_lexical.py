"""The lexical index: BM25 equal to a brute-force computation, statistics as of the query; a
batch of rows laid out as counting each row with a dict does."""

from __future__ import annotations

import math
import random
from collections import Counter

import numpy as np
import pytest

from planner_svc.core.exactmath import ln
from planner_svc.index import lexical
from planner_svc.index.analysis import analyze, query_terms
from planner_svc.index.lexical import LexicalIndex, LexicalRow, _build

WORDS = ["river", "sea", "capital", "city", "mountain", "lake", "desert", "island", "empire",
         "king", "war", "bridge"]


def _row(row_id: int, text: str, *, valid: tuple[int, int | None] = (0, None),
         tx: tuple[int, int | None] = (0, None)) -> LexicalRow:
    return LexicalRow(row_id=row_id, terms=analyze(text), valid_from_us=valid[0],
                      valid_to_us=valid[1], tx_from_us=tx[0], tx_to_us=tx[1])


def _brute(rows: list[LexicalRow], query: list[str], v: int, t: int,
           k1: float = 1.2, b: float = 0.75) -> dict[int, float]:
    live = [r for r in rows
            if r.valid_from_us <= v and (r.valid_to_us is None or r.valid_to_us > v)
            and r.tx_from_us <= t and (r.tx_to_us is None or r.tx_to_us > t)]
    if not live:
        return {}
    mean = sum(len(r.terms) for r in live) / len(live)
    out: dict[int, float] = {}
    for r in live:
        counts = Counter(r.terms)
        score, hit = 0.0, False
        for term in sorted(set(query)):
            if term not in counts:
                continue
            df = sum(1 for x in live if term in x.terms)
            idf = ln(1.0 + (len(live) - df + 0.5) / (df + 0.5))
            tf = counts[term]
            score += idf * (tf * (k1 + 1.0) / (tf + k1 * (1.0 - b + b * (len(r.terms) / mean))))
            hit = True
        if hit:
            out[r.row_id] = score
    return out


@pytest.mark.parametrize("dense_ratio", [0, 10**9], ids=["sorted-postings", "dense-scores"])
def test_scores_equal_brute_force_at_random_as_of_points(
        dense_ratio: int, monkeypatch: pytest.MonkeyPatch) -> None:
    # both ways of adding up a search's postings give the brute force's bits
    monkeypatch.setattr(lexical, "DENSE_POSTINGS_RATIO", dense_ratio)
    rng = random.Random(5)
    rows = []
    for i in range(300):
        words = rng.choices(WORDS, k=rng.randint(1, 12))
        vf = rng.randint(0, 50)
        tf = rng.randint(0, 50)
        rows.append(_row(i, " ".join(words),
                         valid=(vf, rng.choice([None, vf + rng.randint(1, 30)])),
                         tx=(tf, rng.choice([None, tf + rng.randint(1, 30)]))))
    index = LexicalIndex()
    for start in range(0, 300, 17):  # many small batches: segments merge in tiers
        index.add(rows[start : start + 17])
    assert len(index) == 300
    for _ in range(40):
        v, t = rng.randint(0, 90), rng.randint(0, 90)
        query = query_terms(" ".join(rng.sample(WORDS, 3)))
        expected = _brute(rows, query, v, t)
        got = index.search(query, valid_us=v, tx_us=t, limit=1000)
        assert dict(got) == pytest.approx(expected, rel=0, abs=0)  # bit for bit
        assert [s for _, s in got] == sorted((s for _, s in got), reverse=True)
        some = rng.sample(range(300), 20)
        assert index.score_rows(query, some, valid_us=v, tx_us=t) == {
            i: s for i, s in expected.items() if i in some
        }


def test_limit_keeps_the_best_and_breaks_ties_by_row_id() -> None:
    index = LexicalIndex()
    index.add([_row(i, "river sea") for i in (5, 3, 9, 1)] + [_row(7, "river")])
    got = index.search(["river", "sea"], valid_us=0, tx_us=0, limit=3)
    assert [i for i, _ in got] == [1, 3, 5]
    assert got[0][1] == got[1][1] == got[2][1]


def test_a_later_write_never_changes_an_earlier_as_of_score() -> None:
    index = LexicalIndex()
    index.add([_row(1, "river delta", tx=(10, None)), _row(2, "mountain", tx=(10, None))])
    before = index.search(["river"], valid_us=0, tx_us=15, limit=10)
    index.add([_row(3, "river river sea", tx=(20, None))])
    assert index.close(2, 20)
    assert index.search(["river"], valid_us=0, tx_us=15, limit=10) == before
    after = index.search(["river"], valid_us=0, tx_us=25, limit=10)
    assert [i for i, _ in after] == [3, 1]
    assert dict(after)[1] != dict(before)[1]  # two live rows hold "river" now, one mountain gone


def test_idf_of_an_unknown_term_is_the_largest() -> None:
    index = LexicalIndex()
    index.add([_row(1, "river"), _row(2, "sea"), _row(3, "river sea")])
    unknown = index.idf("zebra", valid_us=0, tx_us=0)
    assert unknown == ln(1.0 + 3.5 / 0.5)
    assert unknown > index.idf("river", valid_us=0, tx_us=0)
    assert math.isclose(index.idf("river", valid_us=0, tx_us=0), math.log(1 + 1.5 / 2.5))


def test_row_terms_and_duplicates() -> None:
    index = LexicalIndex()
    assert index.add([_row(1, "Rivers and seas"), _row(1, "ignored")]) == 1
    assert index.add([_row(1, "again")]) == 0
    assert index.row_terms(1) == frozenset({"river", "sea"})
    assert index.row_terms(99) == frozenset()
    assert index.search(["again"], valid_us=0, tx_us=0, limit=5) == []


def test_a_view_reads_one_snapshot() -> None:
    index = LexicalIndex()
    index.add([_row(1, "river delta"), _row(2, "sea")])
    view = index.view(valid_us=0, tx_us=0)
    before = view.search(["river"], limit=10)
    index.add([_row(3, "river river")])  # after the view: neither seen nor counted
    assert view.search(["river"], limit=10) == before
    assert view.score_rows(["river"], [3, 1]) == dict(before)
    assert view.frequencies(["river", "zebra"]) == (2, {"river": 1, "zebra": 0})
    assert view.held_terms([1, 2, 3]) == {"river", "delta", "sea"}
    assert view.held_terms([1, 3], ["sea", "river", "zebra"]) == {"river"}
    fresh = index.view(valid_us=0, tx_us=0)
    assert fresh.live_rows == 3
    # each view reads the terms of the rows its own snapshot holds
    assert fresh.held_terms([1, 2, 3]) == {"river", "delta", "sea"}
    assert fresh.held_terms((3, 2)) == {"river", "sea"}
    assert view.held_terms((3, 2)) == {"sea"}
    assert view.held_terms([1, 2, 3]) == {"river", "delta", "sea"}
    assert fresh.held_terms([1, 3], iter(["sea", "river", "zebra"])) == {"river"}
    assert fresh.held_terms([]) == set()
    assert [i for i, _ in fresh.search(["river"], limit=10)] == [3, 1]


def test_rows_at_tx_count_the_rows_current_then_whatever_their_valid_time() -> None:
    index = LexicalIndex()
    index.add([_row(1, "river", valid=(100, None), tx=(10, None)),
               _row(2, "sea", valid=(0, 50), tx=(10, None)),
               _row(3, "lake", valid=(0, None), tx=(10, 30)),
               _row(4, "city", valid=(0, None), tx=(40, None))])
    view = index.view(valid_us=60, tx_us=20)  # before row 1 is valid, after row 2 was
    assert (view.live_rows, view.rows_at_tx()) == (1, 3)  # row 3 live; 4 written later
    later = index.view(valid_us=60, tx_us=35)  # row 3 closed at 30
    assert (later.live_rows, later.rows_at_tx()) == (0, 2)
    index.add([_row(5, "bay", valid=(0, None), tx=(12, None))])  # after the view: not seen
    assert later.rows_at_tx() == 2
    assert index.view(valid_us=60, tx_us=5).rows_at_tx() == 0


def test_a_close_during_a_plans_statistics_is_not_cached_as_the_new_state(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan 'now' computes the live rows while the catalog closes a superseded version:
    its mask predates the close and must not become the statistics every later plan reuses."""
    import threading

    import numpy as np

    import planner_svc.index.lexical as lexical

    index = LexicalIndex()
    index.add([_row(1, "apple orchard", tx=(10, None)), _row(2, "pear orchard", tx=(10, None))])
    index.add([_row(3, "banana orchard", tx=(20, None))])
    computing, resume = threading.Event(), threading.Event()
    real_count = np.count_nonzero

    class _PausingNumpy:
        def __getattr__(self, name: str) -> object:
            return getattr(np, name)

        @staticmethod
        def count_nonzero(mask: object) -> int:
            if threading.current_thread().name == "plan":
                computing.set()
                resume.wait(10)
            return int(real_count(mask))

    monkeypatch.setattr(lexical, "np", _PausingNumpy())
    plan = threading.Thread(target=lambda: index.view(valid_us=100, tx_us=100), name="plan")
    plan.start()
    assert computing.wait(10)
    assert index.close(1, 20)  # the newer version of row 1's document superseded it
    resume.set()
    plan.join(10)
    monkeypatch.undo()
    later = index.view(valid_us=100, tx_us=100)
    assert later.search(query_terms("apple"), limit=5) == []
    assert sorted(row for row, _ in later.search(query_terms("orchard"), limit=5)) == [2, 3]


def test_positions_of_any_row_id_sparse_negative_or_far_past_the_rows() -> None:
    index = LexicalIndex()
    index.add([_row(5, "river"), _row(-3, "sea"), _row(10**12, "lake"), _row(2, "city")])
    index.add([_row(7000, "river sea")])  # past the dense map's first size: it grows
    view = index.view(valid_us=0, tx_us=0)
    assert view.positions([10**12, 2, 5, -3, 4, 7000, 10**13]).tolist() == [2, 3, 0, 1, -1, 4,
                                                                           -1]
    assert view.score_rows(["sea"], [10**12, -3, 7000, 5]) == {
        row: score for row, score in view.search(["sea"], limit=5)
        if row in (-3, 7000)}
    assert set(view.score_rows(["sea", "lake"], [10**12, -3, 7000])) == {10**12, -3, 7000}


def _reference_segment(first: int, rows: list[list[int]]) -> dict[str, object]:
    """What a segment of ``rows`` (term ids in text order) holds, counted row by row with a dict:
    each row's distinct term ids ascending with their counts, each term's rows ascending with
    the term's count in them."""
    row_ptr, row_terms, row_tf = [0], [], []
    postings: dict[int, list[tuple[int, int]]] = {}
    for i, ids in enumerate(rows):
        counts: dict[int, int] = {}
        for tid in ids:
            counts[tid] = counts.get(tid, 0) + 1
        for tid in sorted(counts):
            row_terms.append(tid)
            row_tf.append(counts[tid])
            postings.setdefault(tid, []).append((first + i, counts[tid]))
        row_ptr.append(len(row_terms))
    term_ids = sorted(postings)
    term_ptr, term_rows, term_tf, lookup = [0], [], [], {}
    for tid in term_ids:
        lookup[tid] = (len(term_rows), len(term_rows) + len(postings[tid]))
        term_rows += [r for r, _tf in postings[tid]]
        term_tf += [tf for _r, tf in postings[tid]]
        term_ptr.append(len(term_rows))
    return {"first": first, "rows": len(rows), "term_ids": term_ids, "term_ptr": term_ptr,
            "term_rows": term_rows, "term_tf": term_tf, "row_ptr": row_ptr,
            "row_terms": row_terms, "row_tf": row_tf, "lookup": lookup}


def _built_segment(first: int, rows: list[list[int]]) -> dict[str, object]:
    term_ids = np.array([t for ids in rows for t in ids], dtype=np.int64)
    lengths = np.array([len(ids) for ids in rows], dtype=np.int64)
    seg = _build(first, term_ids, lengths)
    arrays = ("term_ids", "term_ptr", "term_rows", "term_tf", "row_ptr", "row_terms", "row_tf")
    for name in arrays:
        assert getattr(seg, name).dtype == np.int64, name
    return {"first": seg.first, "rows": seg.rows, "lookup": seg.lookup,
            **{name: getattr(seg, name).tolist() for name in arrays}}


@pytest.mark.parametrize("seed", range(6))
def test_build_lays_out_a_batch_as_counting_row_by_row_does(seed: int) -> None:
    rng = random.Random(seed)
    vocabulary = rng.choice([3, 40, 5_000])
    rows = [[rng.randrange(vocabulary) for _ in range(rng.choice([0, 0, 1, 2, 7, 30]))]
            for _ in range(rng.randrange(1, 60))]
    rows[0] = []  # empty rows first, last and inside
    rows.append([])
    rows.insert(len(rows) // 2, [])
    first = rng.choice([0, 1, 12_345])
    assert _built_segment(first, rows) == _reference_segment(first, rows)
    seg = _build(first, np.array([t for r in rows for t in r], dtype=np.int64),
                 np.array([len(r) for r in rows], dtype=np.int64))
    for i, ids in enumerate(rows):  # the accessors read the same layout
        terms, tfs = seg.terms_of(first + i)
        assert dict(zip(terms.tolist(), tfs.tolist(), strict=True)) == Counter(ids)
    for tid in set(t for r in rows for t in r):
        found = seg.postings(tid)
        assert found is not None
        assert found[0].tolist() == [first + i for i, r in enumerate(rows) if tid in r]
    assert seg.postings(vocabulary) is None


@pytest.mark.parametrize("rows", [[[]], [[], [], []], [[7, 7, 2]], [[0], [], [0, 0]]])
def test_build_of_empty_rows_and_an_all_empty_batch(rows: list[list[int]]) -> None:
    assert _built_segment(5, rows) == _reference_segment(5, rows)


@pytest.mark.parametrize("per_term", [None, 0])
def test_contributions_and_holds_of_many_terms_read_each_term_alone(
        per_term: int | None, monkeypatch: pytest.MonkeyPatch) -> None:
    # the postings searched laid end to end (short lists), and one list at a time
    if per_term is not None:
        monkeypatch.setattr(lexical, "JOINED_POSTINGS_PER_TERM", per_term)
    rng = random.Random(11)
    rows = [_row(i, " ".join(rng.choices(WORDS, k=rng.randint(1, 8))),
                 valid=(0, rng.choice([None, 20]))) for i in range(200)]
    index = LexicalIndex()
    for start in range(0, 200, 23):
        index.add(rows[start : start + 23])
    view = index.view(valid_us=30, tx_us=30)
    asked = [rng.choice([-5, 999, *range(200)]) for _ in range(60)]
    positions = view.positions(asked)
    for _ in range(20):
        terms = query_terms(" ".join(rng.sample([*WORDS, "unknown"], rng.randint(1, 6))))
        got = dict(view.contributions(terms, positions))
        # the reference: one term's search (its own postings walk), a row's score is the
        # term's contribution there
        ranked = {t: dict(view.search([t], limit=len(rows))) for t in sorted(set(terms))}
        alone = {t: {r: scores[r] for r in asked if r in scores}
                 for t, scores in ranked.items()}
        assert sorted(got) == sorted(t for t, scores in ranked.items() if scores)
        for term, values in got.items():
            assert values.tolist() == [alone[term].get(r, 0.0) for r in asked]
        held = view.holds_many(terms, positions)
        for term, row in zip(terms, held.tolist(), strict=True):
            assert row == [p >= 0 and term in index.row_terms(r)
                           for r, p in zip(asked, positions.tolist(), strict=True)]
            assert view.holds(term, positions).tolist() == row


def test_cached_ln_gives_ln_bits_and_stays_bounded() -> None:
    rng = random.Random(5)
    values = [1.0 + (n - df + 0.5) / (df + 0.5) for n in (10, 1000, 10**6)
              for df in (0, 1, 7, 10)] + [rng.uniform(1e-300, 1e300) for _ in range(20)]
    for x in values + values:  # computed, then remembered
        assert lexical.cached_ln(x) == ln(x)
    assert lexical.cached_ln.cache_info().maxsize == 1 << 16
    with pytest.raises(ValueError):
        lexical.cached_ln(0.0)
