"""The committed corpus fixture: format, size, and a full ingest of it."""

from __future__ import annotations

import json
from pathlib import Path

from planner_svc.demo.corpus import CORPUS_TIME_US, wiki_source_id
from planner_svc.embed import HashingEmbedder
from planner_svc.index.catalog_sync import FreshCatalog
from planner_svc.ingest import ingest_documents
from planner_svc.ingest.jsonl import read_jsonl
from planner_svc.ingest.pipeline import DocumentIn
from planner_svc.recall.engine import filtered_nodes
from planner_svc.store import Store

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "wiki_fixture.jsonl"


def _documents() -> list[DocumentIn]:
    with FIXTURE.open("rb") as handle:
        items = list(read_jsonl(handle))
    assert all(isinstance(item, DocumentIn) for item in items)
    return [item for item in items if isinstance(item, DocumentIn)]


def test_fixture_format_and_size() -> None:
    assert FIXTURE.stat().st_size <= 300_000
    docs = _documents()
    assert 300 <= len(docs) <= 400
    ids = [d.source_id for d in docs]
    assert ids == sorted(set(ids))
    for doc in docs:
        assert doc.source_id == wiki_source_id(doc.title)
        assert doc.version_tx_us == doc.valid_from_us == CORPUS_TIME_US
        assert doc.media_type == "text/markdown"
        assert isinstance(doc.text, str) and doc.text.startswith(f"# {doc.title}\n\n")
    records = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines()]
    assert set(records[0]) == {
        "sourceId",
        "title",
        "text",
        "mediaType",
        "validFrom",
        "versionTx",
        "properties",
    }


def test_fixture_holds_known_gold_evidence() -> None:
    by_title = {d.title: d.text for d in _documents()}
    assert "his backing band, the Tennessee Three" in str(by_title["Johnny Cash"])
    assert "its earliest domestication occurred in Iran" in str(by_title["Capra (genus)"])


def test_fixture_ingests_completely(tmp_path: Path) -> None:
    docs = _documents()
    with Store.open(tmp_path) as store:
        report = ingest_documents(store, HashingEmbedder(dim=32), docs, now_us=CORPUS_TIME_US)
        assert report.failed == 0 and report.ingested == len(docs)
        assert store.count_sources() == len(docs)
        # one vector per passage; a heading merges with the short description after it, so
        # there are fewer passages than ledger spans but at least one per article
        assert len(docs) <= report.vectors < report.spans
        catalog = FreshCatalog(store)
        catalog.catch_up()
        hits = filtered_nodes(catalog.current(), "Tennessee Three backing band",
                              labels=["passage"], properties={}, valid_us=CORPUS_TIME_US,
                              tx_us=CORPUS_TIME_US, limit=3)
        assert next(iter(hits)).startswith("psg:wiki/Johnny_Cash:")
        again = ingest_documents(store, HashingEmbedder(dim=32), docs, now_us=CORPUS_TIME_US + 1)
        assert again.unchanged == len(docs) and again.ingested == 0
