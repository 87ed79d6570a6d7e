"""Unit tests of the ingestion pipeline (store + hashing embedder); the tests taking ``store``
run on both store backends."""

from __future__ import annotations

import functools
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.embed import HashingEmbedder
from planner_svc.ingest import RELATION_WEIGHTS, DocumentIn, late_mentions, pipeline
from planner_svc.ingest import ingest_documents as _ingest_documents
from planner_svc.ingest.mentions import KnownTitles
from planner_svc.store import Store
from planner_svc.store.open import AnyStore
from tests.pgserver import Backend

# These tests check the pipeline's mechanics block by block: one passage per structural block
# (no merging of short passages, which test_passage_granularity covers).
ingest_documents = functools.partial(_ingest_documents, min_passage_bytes=0)

NOW = 1_800_000_000_000_000
T1 = 1_785_542_400_000_000


@pytest.fixture()
def store(backend: Backend) -> Iterator[AnyStore]:
    """An empty store of each backend: the pipeline's tests run on SQLite and PostgreSQL."""
    with backend.open() as s:
        yield s


def _doc(source_id: str, text: str, **kw: object) -> DocumentIn:
    fields: dict[str, object] = {
        "title": "",
        "media_type": "text/markdown",
        "version_tx_us": T1,
        "valid_from_us": T1,
    }
    fields.update(kw)
    return DocumentIn(source_id=source_id, text=text, **fields)  # type: ignore[arg-type]


GOAT = "# Capra (genus)\n\nGoat genus.\n\nGoats were first domesticated in Iran.\n"
CASH = (
    "# Johnny Cash\n\nAmerican singer.\n\n## Band\n\nHe toured with the Tennessee Three "
    "and kept Capra goats.\n\nHe also admired Frank Capra films.\n"
)


def _edges(store: AnyStore, node_id: str, tx: int = NOW) -> list[tuple[str, str, float]]:
    return [(e.dst, e.relation, e.weight) for e in store.edges_as_of([node_id], T1, tx)]


def test_nodes_spans_edges_and_vectors(store: AnyStore) -> None:
    emb = HashingEmbedder(dim=32)
    report = ingest_documents(
        store,
        emb,
        [
            _doc("wiki/Capra", GOAT, title="Capra (genus)", properties={"topic": "Biology"}),
            _doc("wiki/Cash", CASH, title="Johnny Cash"),
        ],
        now_us=NOW,
    )
    assert (report.received, report.ingested, report.unchanged, report.failed) == (2, 2, 0, 0)
    assert report.spans == 3 + 5 and report.vectors == 8 and report.nodes == 10
    assert store.latest_version("wiki/Capra") == T1

    doc = store.get_as_of("doc:wiki/Capra", T1, T1)
    assert doc is not None
    assert doc.labels == ("document",)
    assert doc.properties == {
        "topic": "Biology",
        "title": "Capra (genus)",
        "source_id": "wiki/Capra",
    }
    assert doc.text == "Capra (genus)\nGoat genus."
    # the document's evidence is its lead passage (here the heading, blocks are not merged)
    assert len(doc.provenance) == 1 and doc.tx_from_us == T1 and doc.valid_from_us == T1

    psg = store.get_as_of("psg:wiki/Capra:2", T1, T1)
    assert psg is not None and psg.labels == ("paragraph", "passage")
    (ref,) = psg.provenance
    assert store.canonical_slice(ref.source_id, ref.source_version_tx, ref.start, ref.end) == (
        "Goats were first domesticated in Iran."
    )
    assert store.span_kind(*ref.key) == "paragraph"
    head = store.get_as_of("psg:wiki/Capra:0", T1, T1)
    assert head is not None and store.span_kind(*head.provenance[0].key) == "heading"

    assert _edges(store, "doc:wiki/Capra") == [
        ("psg:wiki/Capra:0", "contains", 0.9),
        ("psg:wiki/Capra:1", "contains", 0.9),
        ("psg:wiki/Capra:2", "contains", 0.9),
    ]
    assert _edges(store, "psg:wiki/Capra:0") == [
        ("doc:wiki/Capra", "part_of", 0.9),
        ("psg:wiki/Capra:1", "heads", 0.7),
        ("psg:wiki/Capra:1", "next", 0.5),
        ("psg:wiki/Capra:2", "heads", 0.7),
    ]
    # the h2 heads only its own section; the h1 heads everything after it
    assert [d for d, r, _w in _edges(store, "psg:wiki/Cash:2") if r == "heads"] == [
        "psg:wiki/Cash:3",
        "psg:wiki/Cash:4",
    ]
    assert [d for d, r, _w in _edges(store, "psg:wiki/Cash:0") if r == "heads"] == [
        f"psg:wiki/Cash:{i}" for i in range(1, 5)
    ]
    # bare form "Capra" of "Capra (genus)" is mentioned (twice-named passage -> one edge)
    assert ("doc:wiki/Capra", "mentions", RELATION_WEIGHTS["mentions"]) in _edges(
        store, "psg:wiki/Cash:3"
    )
    # no self mention
    assert all(r != "mentions" for _d, r, _w in _edges(store, "psg:wiki/Capra:0"))

    vectors = {vid: vec for vid, _n, _v, vec in store.iter_vectors()}
    assert psg.version_id in vectors
    expected = emb.embed(["Capra (genus)\nGoats were first domesticated in Iran."])[0]
    np.testing.assert_allclose(vectors[psg.version_id], expected, rtol=1e-6)
    assert head.version_id in vectors and doc.version_id not in vectors
    assert store.get_meta("embedder") == emb.name


def test_unchanged_reingest_writes_nothing(store: AnyStore) -> None:
    docs = [_doc("a", GOAT, title="Capra (genus)")]
    ingest_documents(store, HashingEmbedder(dim=8), docs, now_us=NOW)
    generation = store.generation()
    report = ingest_documents(store, HashingEmbedder(dim=8), docs, now_us=NOW + 1)
    assert (report.ingested, report.unchanged, report.nodes, report.edges) == (0, 1, 0, 0)
    assert store.generation() == generation
    # CRLF and NFD spellings canonicalise to the same text
    crlf = [_doc("a", GOAT.replace("\n", "\r\n"), title="Capra (genus)", version_tx_us=T1 + 9)]
    assert ingest_documents(store, None, crlf, now_us=NOW).unchanged == 1


def test_new_version_supersedes_and_retires(store: AnyStore) -> None:
    emb = HashingEmbedder(dim=8)
    ingest_documents(store, emb, [_doc("wiki/Cash", CASH, title="Johnny Cash")], now_us=NOW)
    old_head = store.get_as_of("psg:wiki/Cash:0", T1, T1)
    assert old_head is not None
    short = "# Johnny Cash\n\nAmerican singer-songwriter.\n"
    t2 = T1 + 1000
    report = ingest_documents(
        store, emb, [_doc("wiki/Cash", short, title="Johnny Cash", version_tx_us=t2)], now_us=NOW
    )
    assert report.ingested == 1
    assert store.latest_version("wiki/Cash") == t2
    assert store.current_node_ids("psg:wiki/Cash:") == ["psg:wiki/Cash:0", "psg:wiki/Cash:1"]
    # the old version is still readable as of the old tx
    old = store.get_as_of("psg:wiki/Cash:4", T1, t2 - 1)
    assert old is not None and old.provenance[0].source_version_tx == T1
    assert store.get_as_of("psg:wiki/Cash:4", T1, t2) is None
    assert _edges(store, "psg:wiki/Cash:4", t2) == []
    assert _edges(store, "psg:wiki/Cash:1", t2) == [("doc:wiki/Cash", "part_of", 0.9)]
    assert len(_edges(store, "psg:wiki/Cash:1", t2 - 1)) > 1
    new_head = store.get_as_of("psg:wiki/Cash:0", T1, t2)
    assert new_head is not None and new_head.version_id != old_head.version_id
    assert new_head.provenance[0].source_version_tx == t2
    # the unchanged heading passage reused its vector
    vecs = store.get_vectors([old_head.version_id, new_head.version_id])
    np.testing.assert_array_equal(vecs[old_head.version_id], vecs[new_head.version_id])
    assert store.canonical_slice("wiki/Cash", T1, *old.provenance[0].key[2:]) is not None


def test_bad_documents_are_reported_and_skipped(store: AnyStore) -> None:
    docs = [
        _doc("ok/1", "# One\n\nfine"),
        _doc("", "text"),
        _doc("empty", "  \n\n "),
        DocumentIn(source_id="bytes", text=b"bad \xff utf8", version_tx_us=T1),
        _doc("pdf", "x", media_type="application/pdf"),
        _doc("props", "x", properties={"k": 3}),
        _doc("ok/1", "# One\n\nchanged", version_tx_us=T1),  # not later than T1
        _doc("ok/2", "# Two\n\nalso fine"),
    ]
    report = ingest_documents(store, HashingEmbedder(dim=8), docs, now_us=NOW)
    assert report.received == 8 and report.ingested == 2
    assert [sid for sid, _r in report.errors] == ["", "empty", "bytes", "pdf", "props", "ok/1"]
    reasons = dict(report.errors)
    assert reasons["bytes"].startswith("text: not valid UTF-8")
    assert reasons["ok/1"].startswith("version_tx:")
    assert reasons["pdf"].startswith("media_type:")
    assert reasons["props"].startswith("properties.k:")
    assert store.count_sources() == 2


def test_defaults_for_title_media_type_and_times(store: AnyStore) -> None:
    docs = [
        DocumentIn(source_id="notes/readme.md", text="# Read me\n\nbody"),
        DocumentIn(source_id="notes/plain.txt", text="# not a heading\n\nbody"),
    ]
    report = ingest_documents(store, None, docs, now_us=NOW)
    assert report.ingested == 2 and report.vectors == 0
    assert store.source_title("notes/readme.md") == "Read me"
    assert store.source_title("notes/plain.txt") == "notes/plain.txt"
    assert store.latest_version("notes/readme.md") == NOW
    node = store.get_as_of("psg:notes/readme.md:0", NOW, NOW)
    assert node is not None and "heading" in node.labels and node.valid_from_us == NOW
    # the store's clock is strictly increasing: the second document is stamped NOW + 1
    assert store.latest_version("notes/plain.txt") == NOW + 1
    plain = store.get_as_of("psg:notes/plain.txt:0", NOW, NOW + 1)
    assert plain is not None and "paragraph" in plain.labels


def test_same_source_twice_in_one_call(store: AnyStore) -> None:
    docs = [_doc("a", "# A\n\nv1"), _doc("a", "# A\n\nv2", version_tx_us=T1 + 5)]
    report = ingest_documents(store, None, docs, now_us=NOW)
    assert report.ingested == 2
    assert store.latest_version("a") == T1 + 5
    assert store.version_as_of("a", T1 + 4) == T1


@pytest.mark.parametrize("fts_limit", [64, 0])
def test_late_mentions_across_calls(
    store: AnyStore, fts_limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(late_mentions, "FTS_RESOLVE_MAX_TITLES", fts_limit)
    ingest_documents(store, None, [_doc("wiki/Cash", CASH, title="Johnny Cash")], now_us=NOW)
    assert all(r != "mentions" for _d, r, _w in _edges(store, "psg:wiki/Cash:3"))
    t2 = T1 + 500
    report = ingest_documents(
        store,
        None,
        [_doc("wiki/Capra", GOAT, title="Capra (genus)", version_tx_us=t2)],
        now_us=NOW,
    )
    assert report.late_mentions == 2  # passages 3 ("Capra goats") and 4 ("Frank Capra")
    mentions = [
        e for e in store.edges_as_of(["psg:wiki/Cash:3"], T1, NOW) if e.relation == "mentions"
    ]
    assert [(e.dst, e.tx_from_us) for e in mentions] == [("doc:wiki/Capra", t2)]
    # recorded when the mentioned document became known, not earlier
    assert store.edges_as_of(["psg:wiki/Cash:3"], T1, t2 - 1) == [
        e for e in store.edges_as_of(["psg:wiki/Cash:3"], T1, t2 - 1) if e.relation != "mentions"
    ]
    # "Frank Capra" is not a title yet, so its passage mentions the genus ...
    assert "doc:wiki/Capra" in [
        d for d, r, _w in _edges(store, "psg:wiki/Cash:4") if r == "mentions"
    ]
    # ... until a document titled "Frank Capra" arrives and hides the bare form
    t3 = T1 + 900
    report = ingest_documents(
        store,
        None,
        [_doc("wiki/Frank", "# Frank Capra\n\nDirector.", title="Frank Capra", version_tx_us=t3)],
        now_us=NOW,
    )
    assert report.mentions_closed == 1
    assert [d for d, r, _w in _edges(store, "psg:wiki/Cash:4") if r == "mentions"] == [
        "doc:wiki/Frank"
    ]
    assert "doc:wiki/Capra" in [
        d for d, r, _w in _edges(store, "psg:wiki/Cash:4", t3 - 1) if r == "mentions"
    ]


def test_mentions_independent_of_batching(tmp_path: Path) -> None:
    docs = [
        _doc("wiki/Cash", CASH, title="Johnny Cash"),
        _doc("wiki/Capra", GOAT, title="Capra (genus)"),
        _doc(
            "wiki/Frank",
            "# Frank Capra\n\nDirector of films with Johnny Cash.",
            title="Frank Capra",
        ),
    ]
    graphs = []
    for i, batch in enumerate((1, 2, 100)):
        with Store.open(tmp_path / f"s{i}") as s:
            ingest_documents(s, None, docs, now_us=NOW, batch_size=batch)
            nodes = [f"psg:{d.source_id}:{k}" for d in docs for k in range(6)]
            graphs.append(
                sorted(
                    (e.src, e.dst, e.relation, e.tx_from_us) for e in s.edges_as_of(nodes, T1, NOW)
                )
            )
    assert graphs[0] == graphs[1] == graphs[2]
    assert ("psg:wiki/Frank:1", "doc:wiki/Cash", "mentions", T1) in graphs[0]


def test_embedder_mismatch_is_a_config_error(store: AnyStore) -> None:
    ingest_documents(store, HashingEmbedder(dim=8), [_doc("a", "# A\n\nx")], now_us=NOW)
    with pytest.raises(ConfigError) as err:
        ingest_documents(store, HashingEmbedder(dim=16), [_doc("b", "# B\n\ny")], now_us=NOW)
    assert err.value.field == "embedder"
    with pytest.raises(ConfigError):
        ingest_documents(store, None, [], now_us=NOW, batch_size=0)


def test_passage_granularity_merges_a_heading_with_its_short_lead(store: AnyStore) -> None:
    report = _ingest_documents(
        store, HashingEmbedder(dim=8), [_doc("wiki/Cash", CASH, title="Johnny Cash")], now_us=NOW
    )
    # "# Johnny Cash" + "American singer." merge into one passage (under 320 bytes, so the
    # section's next heading starts a new one); "## Band" + its two paragraphs merge too.
    assert report.vectors == 2
    first = store.get_as_of("psg:wiki/Cash:0", T1, NOW)
    second = store.get_as_of("psg:wiki/Cash:1", T1, NOW)
    assert first is not None and second is not None
    assert first.text == "Johnny Cash\n\nAmerican singer."
    assert second.text.startswith("Band\n\nHe toured") and second.text.endswith("films.")
    (ref,) = first.provenance
    assert store.span_kind(ref.source_id, ref.source_version_tx, ref.start, ref.end) == "paragraph"
    # the structural spans stay in the ledger beside the merged passage spans
    kinds = [k for _, _, k in store.spans_of_version("wiki/Cash", T1)]
    assert kinds.count("heading") == 2
    # the level-1 passage heads the level-2 section inside it
    heads = [(e.dst, e.relation) for e in store.edges_as_of(["psg:wiki/Cash:0"], T1, NOW)]
    assert ("psg:wiki/Cash:1", "heads") in heads


def test_a_version_time_in_the_future_is_rejected(store: AnyStore) -> None:
    future = _doc("wiki/Later", "# Later\n\nNot yet.", version_tx_us=NOW + 3_600_000_000)
    fine = _doc("wiki/Now", "# Now\n\nAlready.", version_tx_us=NOW)
    report = _ingest_documents(store, None, [future, fine], now_us=NOW)
    assert report.ingested == 1
    assert [sid for sid, _ in report.errors] == ["wiki/Later"]
    assert "version_tx" in report.errors[0][1] and "future" in report.errors[0][1]
    assert store.latest_version("wiki/Later") is None


def _mention_graph(store: AnyStore, sources: list[str]) -> list[tuple[str, str, str, int]]:
    nodes = [f"psg:{s}:{k}" for s in sources for k in range(6)]
    return sorted((e.src, e.dst, e.relation, e.tx_from_us)
                  for e in store.edges_as_of(nodes, T1, NOW) if e.relation == "mentions")


@pytest.mark.parametrize("mode", ["fresh matcher, scan", "known titles", "phrase lookups"])
def test_mentions_independent_of_title_cache_and_lookup(
    backend: Backend, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs = [
        _doc("wiki/Cash", CASH, title="Johnny Cash"),
        _doc("wiki/Capra", GOAT, title="Capra (genus)", version_tx_us=T1 + 10),
        _doc("wiki/Frank", "# Frank Capra\n\nDirector of films with Johnny Cash.",
             title="Frank Capra", version_tx_us=T1 + 20),
    ]
    expected = [
        ("psg:wiki/Cash:3", "doc:wiki/Capra", "mentions", T1 + 10),
        ("psg:wiki/Cash:4", "doc:wiki/Frank", "mentions", T1 + 20),
        ("psg:wiki/Frank:1", "doc:wiki/Cash", "mentions", T1 + 20),
    ]
    calls: list[str] = []
    if mode == "phrase lookups":  # a store "large" for its titles: lookups, never a scan
        monkeypatch.setattr(late_mentions, "FTS_RESOLVE_MAX_TITLES", 0)
        monkeypatch.setattr(late_mentions, "SCAN_NODES_PER_TITLE", 1)
    titles = KnownTitles() if mode == "known titles" else None
    with backend.open() as s:
        spy_phrase = s.current_nodes_matching_phrases
        spy_scan = s.iter_current_nodes

        def phrase(*a: object, **kw: object) -> object:
            calls.append("phrase")
            return spy_phrase(*a, **kw)  # type: ignore[arg-type]

        def scan(*a: object, **kw: object) -> object:
            calls.append("scan")
            return spy_scan(*a, **kw)  # type: ignore[arg-type]

        monkeypatch.setattr(s, "current_nodes_matching_phrases", phrase)
        monkeypatch.setattr(s, "iter_current_nodes", scan)
        for doc in docs:  # one call per document, as a stream's batches
            ingest_documents(s, None, [doc], now_us=NOW, titles=titles)
        got = _mention_graph(s, [d.source_id for d in docs])
    assert got == [e for e in got if e in expected]
    # "Frank Capra" hides the bare "Capra" on passage 4 from T1+20 on: closed, not current
    assert ("psg:wiki/Cash:4", "doc:wiki/Frank", "mentions", T1 + 20) in got
    assert ("psg:wiki/Frank:1", "doc:wiki/Cash", "mentions", T1 + 20) in got
    if mode == "phrase lookups":
        assert "scan" not in calls and "phrase" in calls


def test_known_titles_follow_other_writers_and_forget_refused_documents(
    store: AnyStore
) -> None:
    titles = KnownTitles()
    ingest_documents(store, None, [_doc("wiki/Cash", CASH, title="Johnny Cash")], now_us=NOW,
                     titles=titles)
    # another writer (no shared cache) registers "Frank Capra"
    ingest_documents(store, None, [_doc("wiki/Frank", "# Frank Capra\n\nDirector.",
                                        title="Frank Capra", version_tx_us=T1 + 5)], now_us=NOW)
    # refused at write time (a version time before the latest one), after its title was seen
    report = ingest_documents(store, None, [_doc("wiki/Ghost", "# Ghost Town\n\nEmpty.",
                                                 title="Ghost Town", version_tx_us=T1 + 1)],
                              now_us=NOW, titles=titles)
    assert report.ingested == 0 and len(report.errors) == 1
    ingest_documents(store, None, [_doc(
        "wiki/Tour", "# Tour\n\nA film by Frank Capra about a Ghost Town.", title="Tour",
        version_tx_us=T1 + 9)], now_us=NOW, titles=titles)
    assert [d for d, r, _w in _edges(store, "psg:wiki/Tour:1") if r == "mentions"] == [
        "doc:wiki/Frank"
    ]


def test_a_group_of_inputs_stops_at_its_byte_cap_and_an_oversized_input_is_alone() -> None:
    sizes = [60, 30, 10, 1, 250, 40, 40, 40, 0]
    read: list[int] = []

    def inputs() -> Iterator[DocumentIn]:
        for i, n in enumerate(sizes):
            read.append(i)
            yield DocumentIn(source_id=f"d{i}", text="x" * n if i % 2 else b"x" * n)

    seen: list[tuple[list[int], int]] = []
    for group in pipeline._groups(inputs(), 4, 100):
        ids = [int(d.source_id[1:]) for d in group if isinstance(d, DocumentIn)]
        seen.append((ids, len(read)))
    # 60+30+10 = 100 fills the cap; 1 + 250 would pass it; 250 alone; 40+40, +40 would pass it
    assert [ids for ids, _read in seen] == [[0, 1, 2], [3], [4], [5, 6], [7, 8]]
    # lazily: a group is handed on once the input after it shows it full (one input ahead)
    assert [n for _ids, n in seen] == [4, 5, 6, 8, 9]
    assert [[d.source_id for d in g] for g in pipeline._groups(
        [DocumentIn(source_id=f"c{i}", content=b"x" * 10) for i in range(5)], 2, 1000)] == [
        ["c0", "c1"], ["c2", "c3"], ["c4"]]  # under the cap: groups of size


def test_ingest_looks_sources_up_by_groups_within_the_byte_cap(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(pipeline, "GROUP_MAX_INPUT_BYTES", 300)
    texts = {f"wiki/D{i}": f"# D{i}\n\n" + "word " * n
             for i, n in enumerate((20, 20, 20, 200, 5, 5))}  # D3 alone passes the cap
    lookups: list[list[str]] = []
    with Store.open(tmp_path / "s") as s:
        latest_texts = s.latest_texts

        def spy(ids: set[str]) -> dict[str, tuple[int, str]]:
            lookups.append(sorted(ids))
            return latest_texts(ids)

        monkeypatch.setattr(s, "latest_texts", spy)
        report = ingest_documents(s, None, [_doc(k, v) for k, v in texts.items()], now_us=NOW)
        assert report.received == report.ingested == 6 and not report.errors
        assert lookups == [["wiki/D0", "wiki/D1"], ["wiki/D2"], ["wiki/D3"],
                           ["wiki/D4", "wiki/D5"]]
        assert sorted(s.latest_texts(set(texts))) == sorted(texts)  # every one written
