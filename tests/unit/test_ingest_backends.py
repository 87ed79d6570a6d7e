"""The two store backends hold the same rows after the same writes: a transaction that
writes, reads back its own writes and rolls nested blocks back, then a sequence of ingests
(several chunks, a refused document inside a chunk, new versions that shrink, change and keep
passages, an unchanged document, late mentions, a source twice in one call), run on a SQLite
and a PostgreSQL store, then every row compared: source versions, ledger rows, node and edge
versions with their ids and both time axes, vectors, and the feed position (generation, ids,
clock)."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

from planner_svc.core.model import SpanRef
from planner_svc.embed import HashingEmbedder
from planner_svc.ingest import DocumentIn
from planner_svc.ingest import ingest_documents as _ingest_documents
from planner_svc.store import EdgeWrite, NodeWrite
from planner_svc.store.open import AnyStore
from tests.pgserver import Backend, SchemaPerTest, StatementCounter

ingest_documents = functools.partial(_ingest_documents, min_passage_bytes=0)

NOW = 1_800_000_000_000_000
T1 = 1_785_542_400_000_000
T2 = T1 + 1_000
T3 = T1 + 2_000
S1, S2, S3 = T1 - 300, T1 - 200, T1 - 100  # the transaction's times, before the ingests'
ALL = 1 << 30

CASH = (
    "# Johnny Cash\n\nAmerican singer.\n\n## Band\n\nHe toured with the Tennessee Three "
    "and kept Capra goats.\n\nHe also admired Frank Capra films and Rosanne.\n"
)
GOAT = "# Capra (genus)\n\nGoat genus.\n\nGoats were first domesticated in Iran.\n"


def _doc(source_id: str, text: str, title: str, tx: int | None = T1) -> DocumentIn:
    return DocumentIn(source_id=source_id, text=text, title=title, media_type="text/markdown",
                      version_tx_us=tx, valid_from_us=T1)


def _ingests(store: AnyStore) -> list[tuple[int, int, int, int, list[tuple[str, str]]]]:
    emb = HashingEmbedder(dim=16)
    calls = [
        ([_doc("wiki/Cash", CASH, "Johnny Cash"),
          _doc("wiki/Capra", GOAT, "Capra (genus)"),
          _doc("wiki/Late", "# Late\n\nWritten early.", "Late", tx=T1 - 5),  # refused
          _doc("wiki/Iran", "# Iran\n\nA country; goats were domesticated here.", "Iran"),
          _doc("wiki/Three", "# Tennessee Three\n\nCash's band.", "Tennessee Three")], 2),
        ([_doc("wiki/Cash", "# Johnny Cash\n\nAmerican singer.\n\nHe liked Iran.\n",
               "Johnny Cash", tx=T2),  # shrinks: passages retired, edges closed
          _doc("wiki/Capra", GOAT, "Capra (genus)", tx=T2),  # unchanged
          _doc("wiki/Iran", "# Iran\n\nA country in Asia, home of goats.", "Iran", tx=T2),
          _doc("wiki/Rosanne", "# Rosanne\n\nA singer, daughter of Johnny Cash.", "Rosanne",
               tx=T2)], 3),
        ([_doc("wiki/Frank", "# Frank Capra\n\nDirector.", "Frank Capra", tx=T3),
          _doc("wiki/Frank", "# Frank Capra\n\nFilm director.", "Frank Capra", tx=T3 + 1)], 8),
    ]
    out = []
    for docs, batch_size in calls:
        r = ingest_documents(store, emb, docs, now_us=NOW, batch_size=batch_size)
        out.append((r.ingested, r.nodes, r.edges, r.late_mentions, r.errors))
    return out


def _transaction(store: AnyStore) -> list[object]:
    """Writes and reads of one transaction: its later statements see its earlier writes, a
    failed nested block leaves nothing, whether or not it read in between."""
    seen: list[object] = []
    node = functools.partial(NodeWrite, labels=("thing",), valid_from_us=T1)
    with store.transaction():
        store.put_source_version("s", "some text", title="S", media_type="text/plain", tx_us=S1)
        store.add_spans("s", S1, [(0, 4, "paragraph")])
        first = store.write_nodes([node(node_id="n", text="one",
                                        provenance=(SpanRef("s", S1, 0, 4),))], tx_us=S1)
        second = store.write_nodes([node(node_id="n", text="two")], tx_us=S2)
        seen.append([(r.version_id, r.created) for r in first + second])
        seen.append(sorted(v.text for v in store.current_nodes(["n", "m"]).values()))
        store.put_edges([EdgeWrite(src="n", dst="x", relation="r", weight=0.5,
                                   valid_from_us=T1)], tx_us=S2)
        store.put_edges([EdgeWrite(src="n", dst="x", relation="r", weight=0.7,
                                   valid_from_us=T1)], tx_us=S2)
        for reads in (False, True):
            with pytest.raises(RuntimeError), store.transaction():
                store.write_nodes([node(node_id="n", text="three")], tx_us=S3)
                store.retire_edges([("n", "x", "r")], tx_us=S3)
                if reads:  # a read sends the pending rows, the savepoint with them
                    seen.append(len(store.node_history("n")))
                raise RuntimeError("rolled back")
        seen.append([(e.dst, e.weight) for e in store.current_out_edges(["n"])])
        seen.append(store.current_node_ids("n"))
        seen.append(store.retire_nodes(["n"], tx_us=S3))
        store.write_nodes([node(node_id="n", text="four")], tx_us=S3)
    return seen


def _rows(store: AnyStore) -> dict[str, object]:
    sources = store.source_versions_after(0, ALL)
    return {
        "feed": store.feed_position(),
        "sources": sources,
        "titles": list(store.iter_sources()),
        "ledger": [list(store.locations_of_version(s.source_id, s.tx_us)) for s in sources],
        "nodes": store.node_versions_after(0, ALL),
        "edges": store.edge_versions_after(0, ALL),
        "vectors": [(v, n, f, vec.tobytes()) for v, n, f, vec in store.iter_vectors()],
    }


def test_both_backends_write_the_same_rows(
    postgres_schemas: SchemaPerTest, tmp_path: Path
) -> None:
    found = {}
    for backend in (Backend("sqlite", tmp_path / "data", None),
                    Backend("postgresql", tmp_path / "replica", postgres_schemas.url())):
        with backend.open() as store:
            seen = _transaction(store)
            found[backend.name] = (_ingests(store), seen, _rows(store))
    lite, pg = found["sqlite"], found["postgresql"]
    assert pg[0] == lite[0]
    assert pg[1] == lite[1]
    for table in lite[2]:
        assert pg[2][table] == lite[2][table], table
    reports, seen, rows = lite
    # the scenario did what it claims
    assert [r[0] for r in reports] == [4, 3, 2] and reports[0][4][0][0] == "wiki/Late"
    assert sum(r[3] for r in reports) > 0  # late mentions
    assert seen[0] == [(first := seen[0][0][0], True), (first + 1, True)]
    assert seen[1:] == [["two"], 3, [("x", 0.7)], ["n"], 1]
    nodes = rows["nodes"]
    assert isinstance(nodes, list)
    assert [(v.text, v.tx_from_us, v.tx_to_us) for v in nodes if v.node_id == "n"] == [
        ("one", S1, S2), ("two", S2, S3), ("four", S3, None)]


def test_the_round_trips_of_an_ingest_do_not_grow_with_its_documents(
    postgres_schemas: SchemaPerTest,
) -> None:
    """A PostgreSQL store reads and writes a chunk of documents in a fixed number of round
    trips (a statement each, or a pipelined group), so a database on another host costs the
    ingest a few round-trip times a chunk, not a dozen a document."""
    from planner_svc.store.postgres import PostgresStore

    trips = []
    for n in (70, 140):  # one chunk; more new titles than late mentions look up one by one
        docs = [_doc(f"gen/{i}", f"# Topic {i}\n\nAbout topic {i} and Topic {i // 2}.\n\n"
                                 f"More on topic {i}.", f"Topic {i}") for i in range(n)]
        with PostgresStore.open(postgres_schemas.url()) as store, \
                StatementCounter() as counter:
            first = ingest_documents(store, HashingEmbedder(dim=8), docs, now_us=NOW)
            again = ingest_documents(store, HashingEmbedder(dim=8), docs, now_us=NOW)
        assert (first.ingested, again.unchanged) == (n, n)
        trips.append(counter.round_trips)
    assert trips[0] == trips[1] < 30  # both ingests together, schema and metadata included
