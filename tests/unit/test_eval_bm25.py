"""The BM25 whole-document baseline over a tiny store written through the ingest path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner_svc.core.tokens import estimate_tokens
from planner_svc.evaluation.bm25_baseline import Bm25Baseline, documents_as_of
from planner_svc.evaluation.packing import PackedPlan, pack_skipping
from planner_svc.ingest import DocumentIn, ingest_documents
from planner_svc.store import Store

T1 = 1_785_542_400_000_000
T2 = T1 + 1_000_000
NOW = 1_800_000_000_000_000

ZEBRA = "Zebras graze on the savanna. A zebra has black and white stripes."
CROSSING = "A zebra crossing is a road marking with stripes."
AFRICA = ("Africa is a continent. "
          + "Its wildlife includes elephants, lions, giraffes and many birds. " * 6
          + "One zebra was seen.")
LION_1 = "Lions hunt on the savanna."
LION_2 = "Lions hunt zebra and stripes on the savanna."


def doc(source_id: str, text: str, tx: int) -> DocumentIn:
    return DocumentIn(source_id=source_id, title=source_id.title(), media_type="text/plain",
                      text=text, version_tx_us=tx)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    data = tmp_path_factory.mktemp("bm25-store")
    with Store.open(Path(data)) as s:
        first = [doc("zebra", ZEBRA, T1), doc("crossing", CROSSING, T1),
                 doc("africa", AFRICA, T1), doc("lion", LION_1, T1)]
        assert not ingest_documents(s, None, first, now_us=NOW).errors
        assert not ingest_documents(s, None, [doc("lion", LION_2, T2)], now_us=NOW).errors
        yield s


def test_documents_are_the_latest_version_as_of_the_time(store: Store) -> None:
    before = documents_as_of(store, T1 - 1)
    at_t1 = documents_as_of(store, T1)
    at_t2 = documents_as_of(store, T2)
    assert before == []
    assert [(d.source_id, d.text) for d in at_t1] == [
        ("africa", AFRICA), ("crossing", CROSSING), ("lion", LION_1), ("zebra", ZEBRA)]
    assert [(d.source_id, d.text) for d in at_t2][2] == ("lion", LION_2)
    assert [d.tokens for d in at_t2] == [120, 14, 13, 19]
    assert all(d.tokens == estimate_tokens(d.text) for d in at_t2)


def test_ranking_best_first_without_unmatched_documents(store: Store) -> None:
    bm25 = Bm25Baseline.from_store(store, tx_us=T1)
    assert bm25.size == 4
    # "stripes" and "zebra" in a short document beat the same terms in a longer one; the
    # long "africa" names the zebra once; "lion" (as of T1) shares no term and is no hit.
    assert [d.source_id for d in bm25.ranked("zebra stripes")] == ["crossing", "zebra", "africa"]
    assert [d.source_id for d in bm25.ranked("zebra stripes", top=2)] == ["crossing", "zebra"]
    # stop words and unknown words alone match nothing
    assert bm25.ranked("what is the unknownword") == []


def test_equal_scores_rank_by_source_id(store: Store) -> None:
    bm25 = Bm25Baseline.from_store(store, tx_us=T2)
    scores = bm25.scores("zebra stripes")
    assert scores[1] == scores[2] > 0  # crossing and lion (as of T2): same terms, same length
    assert [d.source_id for d in bm25.ranked("zebra stripes")] == [
        "crossing", "lion", "zebra", "africa"]


def test_packing_skips_a_document_that_does_not_fit_and_tries_the_next(store: Store) -> None:
    bm25 = Bm25Baseline.from_store(store, tx_us=T1)
    question = "African wildlife: the zebra of Africa"
    assert [d.source_id for d in bm25.ranked(question)] == ["africa", "crossing", "zebra"]
    candidates = bm25.candidates(question)
    assert pack_skipping(candidates, 40) == PackedPlan(
        source_ids=("crossing", "zebra"), texts=(CROSSING, ZEBRA), used=33)
    assert pack_skipping(candidates, 133) == PackedPlan(
        source_ids=("africa",), texts=(AFRICA,), used=120)
    assert pack_skipping(candidates, 134) == PackedPlan(
        source_ids=("africa", "crossing"), texts=(AFRICA, CROSSING), used=134)
    for budget in range(0, 160, 7):
        assert pack_skipping(candidates, budget).used <= budget


def test_an_empty_store_ranks_nothing(tmp_path: Path) -> None:
    with Store.open(tmp_path) as empty:
        bm25 = Bm25Baseline.from_store(empty, tx_us=NOW)
    assert (bm25.size, bm25.ranked("zebra"), bm25.candidates("zebra")) == (0, [], [])
