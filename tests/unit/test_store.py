"""The store contract: every test here that takes a store runs against both backends, the
embedded SQLite store and the shared PostgreSQL store (a real server, :mod:`tests.pgserver`),
and asserts the same results: sources, ledger, bitemporal nodes and edges on half-open
intervals, vectors, the transaction clock across writers, snapshots, unchanged re-ingest,
provenance validation and the durability of acknowledged writes. Two tests open an older store
of one backend and check its schema migration (span locations added to the ledger)."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from planner_svc.core.errors import InvalidRequest, ShuttingDown
from planner_svc.core.model import NOWHERE, Location, SpanRef
from planner_svc.embed import HashingEmbedder
from planner_svc.ingest import ingest_documents
from planner_svc.ingest.pipeline import DocumentIn
from planner_svc.store import STORE_FILE, EdgeWrite, NodeWrite, Store, canonicalize
from planner_svc.store.open import AnyStore
from planner_svc.store.records import LedgerRow, decode_location, encode_location
from planner_svc.store.schema import DDL, SCHEMA_VERSION
from tests.pgserver import Backend, SchemaPerTest

T0 = 1_700_000_000_000_000  # microseconds


@pytest.fixture()
def store(backend: Backend) -> Iterator[AnyStore]:
    with backend.open() as s:
        yield s


def _node(node_id: str, text: str = "", **kw: object) -> NodeWrite:
    fields: dict[str, object] = {"valid_from_us": T0, "labels": ("thing",)}
    fields.update(kw)
    return NodeWrite(node_id=node_id, text=text, **fields)  # type: ignore[arg-type]


# ---------------------------------------------------------------- sources


def test_source_versions_and_unchanged_reingest(store: AnyStore) -> None:
    assert store.put_source_version(
        "a", "one\r\ntwo", title="A", media_type="text/plain", tx_us=T0
    ) == (T0, True)
    # same canonical text (CRLF -> LF) makes no new version, whatever the tx
    assert store.put_source_version(
        "a", "one\ntwo", title="A2", media_type="text/plain", tx_us=T0 + 5
    ) == (T0, False)
    assert store.latest_version("a") == T0
    assert store.source_title("a") == "A"
    assert store.put_source_version(
        "a", "one\nthree", title="A3", media_type="text/plain", tx_us=T0 + 10
    ) == (T0 + 10, True)
    assert store.latest_version("a") == T0 + 10
    assert store.source_title("a") == "A3"
    assert store.source_text("a", T0) == "one\ntwo"
    assert store.source_text("a", T0 + 10) == "one\nthree"
    assert store.count_sources() == 1
    assert store.latest_versions(["a", "zz"]) == {"a": T0 + 10}


def test_new_version_must_be_later(store: AnyStore) -> None:
    store.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=T0)
    for tx in (T0, T0 - 1):
        with pytest.raises(InvalidRequest) as err:
            store.put_source_version("a", "y", title="A", media_type="text/plain", tx_us=tx)
        assert err.value.field == "version_tx"
    assert store.latest_version("a") == T0


@pytest.mark.parametrize(
    ("source_id", "text", "field"),
    [
        ("", "x", "source_id"),
        (" padded", "x", "source_id"),
        ("ctl\x07", "x", "source_id"),
        ("ok", "   \n", "text"),
        ("ok", "bad \ud800 surrogate", "text"),
    ],
)
def test_bad_source_rejected(store: AnyStore, source_id: str, text: str, field: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        store.put_source_version(source_id, text, title="t", media_type="text/plain", tx_us=T0)
    assert err.value.field == field
    assert store.count_sources() == 0


def test_version_as_of_boundaries(store: AnyStore) -> None:
    store.put_source_version("a", "v1", title="A", media_type="text/plain", tx_us=100)
    store.put_source_version("a", "v2", title="A", media_type="text/plain", tx_us=200)
    assert store.version_as_of("a", 99) is None
    assert store.version_as_of("a", 100) == 100
    assert store.version_as_of("a", 199) == 100
    assert store.version_as_of("a", 200) == 200
    assert store.version_as_of("missing", 500) is None


def test_titles(store: AnyStore) -> None:
    store.put_source_version("b", "x", title="Same", media_type="text/plain", tx_us=1)
    store.put_source_version("a", "y", title="Same", media_type="text/plain", tx_us=1)
    store.put_source_version("c", "z", title="Other", media_type="text/plain", tx_us=1)
    assert store.source_ids_by_title("Same") == ["a", "b"]
    assert store.source_ids_by_title("same") == []
    assert list(store.iter_titles()) == [("a", "Same"), ("b", "Same"), ("c", "Other")]


def test_canonicalize_nfc_and_newlines() -> None:
    assert canonicalize("\ufeffe\u0301\r\nx\ry") == "\u00e9\nx\ny"
    assert canonicalize(canonicalize("a\r\n")) == "a\n"


def test_slices_on_multibyte_text(store: AnyStore) -> None:
    text = "h\u00e9llo \u4e16\u754c \U0001f600!"  # é 2 bytes, 世界 3 bytes each, emoji 4 bytes
    store.put_source_version("m", text, title="M", media_type="text/plain", tx_us=T0)
    data = text.encode("utf-8")
    assert len(data) == 19
    assert store.canonical_slice("m", T0, 0, 3) == "h\u00e9"
    assert store.canonical_slice("m", T0, 7, 13) == "\u4e16\u754c"
    assert store.canonical_slice("m", T0, 14, 19) == "\U0001f600!"
    assert store.canonical_slice("m", T0, 0, 19) == text
    assert store.canonical_slice("m", T0, 19, 19) == ""
    assert store.canonical_slice("m", T0, 2, 3) is None  # starts inside é
    assert store.canonical_slice("m", T0, 0, 2) is None  # ends inside é
    assert store.canonical_slice("m", T0, 8, 10) is None  # starts inside 世
    assert store.canonical_slice("m", T0, 15, 15) is None  # empty but inside the emoji
    assert store.canonical_slice("m", T0, 0, 20) is None  # past the end
    assert store.canonical_slice("m", T0, 5, 4) is None
    assert store.canonical_slice("m", T0, -1, 3) is None
    assert store.canonical_slice("m", T0 + 1, 0, 3) is None  # no such version
    assert store.canonical_slice("zz", T0, 0, 3) is None
    got = store.canonical_slices(
        [("m", T0, 0, 3), ("m", T0, 2, 3), ("zz", T0, 0, 1), ("m", T0, 7, 13)]
    )
    assert got == {("m", T0, 0, 3): "h\u00e9", ("m", T0, 7, 13): "\u4e16\u754c"}


# ---------------------------------------------------------------- ledger


def test_span_ledger(store: AnyStore) -> None:
    store.put_source_version(
        "s", "# T\n\n\u00e9t\u00e9 body", title="T", media_type="text/markdown", tx_us=T0
    )
    assert store.add_spans("s", T0, [(2, 3, "heading"), (5, 15, "paragraph")]) == 2
    assert store.span_kind("s", T0, 2, 3) == "heading"
    assert store.span_kind("s", T0, 2, 4) is None
    assert store.span_kinds(
        [("s", T0, 2, 3), ("s", T0, 5, 15), ("s", T0, 0, 1), ("x", T0, 2, 3)]
    ) == {
        ("s", T0, 2, 3): "heading",
        ("s", T0, 5, 15): "paragraph",
    }
    assert store.spans_of_version("s", T0) == [(2, 3, "heading"), (5, 15, "paragraph")]
    with pytest.raises(InvalidRequest) as err:
        store.add_spans("s", T0, [(0, 1, "body"), (0, 1, "sentence")])
    assert err.value.field == "spans[1].kind"
    with pytest.raises(InvalidRequest):
        store.add_spans("s", T0, [(0, 99, "body")])
    with pytest.raises(InvalidRequest):
        store.add_spans("s", T0, [(6, 8, "body")])  # inside é
    with pytest.raises(InvalidRequest) as err:
        store.add_spans("s", T0 + 1, [(0, 1, "body")])
    assert err.value.field == "source_version_tx"
    assert store.span_kind("s", T0, 0, 1) is None  # the failed batches wrote nothing


def _stored_locations(backend: Backend, store: AnyStore) -> dict[int, str | None]:
    """The span ledger's raw location column, by span start, read past the store."""
    if backend.url is None:
        assert isinstance(store, Store)
        conn = sqlite3.connect(store.path)
        try:
            return dict(conn.execute("SELECT byte_start, location FROM spans").fetchall())
        finally:
            conn.close()
    import psycopg

    with psycopg.connect(backend.url) as pg:
        return {int(r[0]): r[1]
                for r in pg.execute("SELECT byte_start, location FROM spans").fetchall()}


def test_span_ledger_keeps_each_span_location(backend: Backend, store: AnyStore) -> None:
    text = "Intro\n\nbody one\n\nbody two"
    store.put_source_version("doc.pdf", text, title="T", media_type="application/pdf",
                             tx_us=T0)
    page2 = Location(page=2, heading_path=("Intro", "Caf\u00e9 \u203a menu"))
    cell = Location(cell_index=0)
    assert store.add_spans("doc.pdf", T0, [
        (0, 5, "heading", Location(page=1, heading_path=("Intro",))),
        (7, 15, "paragraph", page2),
        (17, 25, "paragraph", cell),
        (0, 25, "body"),  # a 3-tuple records no location
    ]) == 4
    assert store.locations_of_version("doc.pdf", T0) == [
        (0, 5, "heading", Location(page=1, heading_path=("Intro",))),
        (0, 25, "body", NOWHERE),
        (7, 15, "paragraph", page2),
        (17, 25, "paragraph", cell),
    ]
    rows = store.ledger_rows([("doc.pdf", T0, 7, 15), ("doc.pdf", T0, 0, 25),
                              ("doc.pdf", T0, 1, 2)])
    assert rows == {("doc.pdf", T0, 7, 15): LedgerRow("paragraph", page2),
                    ("doc.pdf", T0, 0, 25): LedgerRow("body", NOWHERE)}
    # the stored value is a plain JSON object with the keys that are set, NULL for none
    stored = _stored_locations(backend, store)
    assert stored == {0: None, 7: '{"page":2,"headingPath":["Intro","Café › menu"]}',
                      17: '{"cellIndex":0}'}
    assert encode_location(page2) == stored[7]
    assert decode_location(stored[7]) == page2
    assert decode_location(None) == decode_location("[1]") == decode_location("{") == NOWHERE
    assert decode_location('{"page": 0}') == NOWHERE  # never written: a page is >= 1
    with pytest.raises(InvalidRequest) as err:
        store.add_spans("doc.pdf", T0, [(0, 5, "heading", "p. 1")])  # type: ignore[list-item]
    assert err.value.field == "spans[0].location"


def test_a_schema_3_store_gains_span_locations_when_opened(tmp_path: Path) -> None:
    """A store written before span locations (schema 3) opens, keeps its rows (no location)
    and records locations from then on."""
    data = tmp_path / "old"
    data.mkdir()
    conn = sqlite3.connect(data / STORE_FILE)
    conn.executescript(DDL.replace("    location TEXT,\n", ""))
    conn.execute("INSERT INTO source_versions (source_id, tx, title, media_type, text) "
                 "VALUES ('s', ?, 'S', 'text/markdown', CAST('# S\n\nbody' AS BLOB))", (T0,))
    conn.execute("INSERT INTO sources VALUES ('s', 'S', 'text/markdown', ?)", (T0,))
    conn.execute("INSERT INTO spans VALUES ('s', ?, 2, 3, 'heading')", (T0,))
    conn.execute("PRAGMA user_version=3")
    conn.commit()
    assert "location" not in {r[1] for r in conn.execute("PRAGMA table_info(spans)")}
    conn.close()
    with Store.open(data) as store:
        assert store.ledger_rows([("s", T0, 2, 3)]) == {("s", T0, 2, 3): LedgerRow("heading")}
        assert store.last_tx() == T0  # the older migrations ran as well
        store.add_spans("s", T0, [(5, 9, "paragraph", Location(heading_path=("S",)))])
        assert store.locations_of_version("s", T0) == [
            (2, 3, "heading", NOWHERE), (5, 9, "paragraph", Location(heading_path=("S",)))]
    conn = sqlite3.connect(data / STORE_FILE)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION == 4
    conn.close()
    with Store.open(data) as store:  # opening again changes nothing
        assert len(store.locations_of_version("s", T0)) == 2


# ---------------------------------------------------------------- nodes


def test_node_as_of_on_both_axes(store: AnyStore) -> None:
    w = _node("n", "first", valid_from_us=100, valid_to_us=200)
    assert store.put_node(w, tx_us=1000) == 1000
    assert store.get_as_of("n", 100, 1000) is not None
    assert store.get_as_of("n", 199, 5000) is not None
    assert store.get_as_of("n", 99, 1000) is None  # before valid_from
    assert store.get_as_of("n", 200, 1000) is None  # valid_to is exclusive
    assert store.get_as_of("n", 150, 999) is None  # before it was recorded
    got = store.get_as_of("n", 150, 1000)
    assert got is not None
    assert (got.text, got.valid_from_us, got.valid_to_us, got.tx_from_us, got.tx_to_us) == (
        "first",
        100,
        200,
        1000,
        None,
    )


def test_supersession_and_noop(store: AnyStore) -> None:
    span = SpanRef("s", 5, 0, 4)
    first = _node("n", "old", provenance=(span,), properties={"k": "v"}, confidence=0.5)
    assert store.put_node(first, tx_us=1000) == 1000
    # identical write: no new version, existing tx returned
    assert store.put_node(first, tx_us=3000) == 1000
    assert len(store.node_history("n")) == 1
    second = _node("n", "new")
    assert store.put_node(second, tx_us=2000) == 2000
    history = store.node_history("n")
    assert [(v.text, v.tx_from_us, v.tx_to_us) for v in history] == [
        ("old", 1000, 2000),
        ("new", 2000, None),
    ]
    old = store.get_as_of("n", T0, 1999)
    assert old is not None and old.text == "old"
    assert old.provenance == (span,) and old.properties == {"k": "v"} and old.confidence == 0.5
    new = store.get_as_of("n", T0, 2000)
    assert new is not None and new.text == "new"
    assert new.version_id > old.version_id
    with pytest.raises(InvalidRequest) as err:
        store.put_node(_node("n", "older"), tx_us=1500)
    assert err.value.field == "tx"
    assert store.retire_nodes(["n", "absent"], tx_us=2500) == 1
    assert store.get_as_of("n", T0, 2499) is not None
    assert store.get_as_of("n", T0, 2500) is None
    assert store.current_node_ids("n") == []
    with pytest.raises(InvalidRequest):
        store.put_node(_node("n", "again"), tx_us=2400)  # earlier than the retirement


def test_get_many_as_of_and_prefix(store: AnyStore) -> None:
    results = store.write_nodes([_node(f"p:{i}", f"text {i}") for i in range(5)], tx_us=10)
    assert [r.created for r in results] == [True] * 5
    assert len({r.version_id for r in results}) == 5
    got = store.get_many_as_of([f"p:{i}" for i in range(7)], T0, 10)
    assert sorted(got) == [f"p:{i}" for i in range(5)]
    assert store.get_many_as_of(["p:1"], T0, 9) == {}
    assert store.current_node_ids("p:") == [f"p:{i}" for i in range(5)]
    assert store.current_node_ids("p:3") == ["p:3"]
    with pytest.raises(InvalidRequest):
        store.write_nodes([_node("d"), _node("d")], tx_us=10)


@pytest.mark.parametrize(
    ("kw", "field"),
    [
        ({"node_id": ""}, "node_id"),
        ({"confidence": 0.0}, "confidence"),
        ({"confidence": 1.5}, "confidence"),
        ({"confidence": float("nan")}, "confidence"),
        ({"valid_from_us": 10, "valid_to_us": 10}, "valid_to"),
        ({"labels": ("",)}, "labels[0]"),
        ({"properties": {"k": 1}}, "properties.k"),
        ({"provenance": (SpanRef("s", 1, 5, 5),)}, "provenance[0].end"),
    ],
)
def test_node_write_validation(kw: dict[str, object], field: str) -> None:
    fields: dict[str, object] = {"node_id": "n", "valid_from_us": 0}
    fields.update(kw)
    with pytest.raises(InvalidRequest) as err:
        NodeWrite(**fields)  # type: ignore[arg-type]
    assert err.value.field == field


# ---------------------------------------------------------------- edges


def test_edges_supersession_and_directions(store: AnyStore) -> None:
    assert store.put_edge("a", "b", "next", 0.5, valid_from_us=0, tx_us=100) == 100
    assert store.put_edge("a", "b", "next", 0.5, valid_from_us=0, tx_us=150) == 100  # no-op
    assert store.put_edge("a", "c", "mentions", 0.8, valid_from_us=0, tx_us=100) == 100
    assert store.put_edge("c", "a", "mentions", 0.8, valid_from_us=0, tx_us=100) == 100
    assert store.put_edge("a", "b", "next", 0.25, valid_from_us=0, tx_us=200) == 200
    out = store.edges_as_of(["a"], 5, 150)
    assert [(e.src, e.dst, e.relation, e.weight) for e in out] == [
        ("a", "b", "next", 0.5),
        ("a", "c", "mentions", 0.8),
    ]
    out = store.edges_as_of(["a"], 5, 200)
    assert [(e.dst, e.weight, e.tx_from_us) for e in out] == [("b", 0.25, 200), ("c", 0.8, 100)]
    into = store.edges_as_of(["a"], 5, 200, direction="in")
    assert [(e.src, e.dst) for e in into] == [("c", "a")]
    both = store.edges_as_of(["a", "c"], 5, 200, direction="both")
    assert [(e.src, e.dst) for e in both] == [("a", "b"), ("a", "c"), ("c", "a")]
    assert store.edges_as_of(["a"], 5, 99) == []
    with pytest.raises(InvalidRequest) as err:
        store.put_edge("a", "b", "next", 0.9, valid_from_us=0, tx_us=150)
    assert err.value.field == "tx"
    with pytest.raises(InvalidRequest) as err:
        store.put_edge("a", "b", "next", 1.5, valid_from_us=0, tx_us=300)
    assert err.value.field == "weight"
    with pytest.raises(InvalidRequest):
        store.edges_as_of(["a"], 5, 200, direction="sideways")  # type: ignore[arg-type]


def test_edge_valid_interval_and_replace(store: AnyStore) -> None:
    store.put_edges(
        [
            EdgeWrite(src="a", dst="b", relation="r", weight=1.0, valid_from_us=10, valid_to_us=20),
            EdgeWrite(src="a", dst="c", relation="r", weight=1.0, valid_from_us=0),
        ],
        tx_us=100,
    )
    assert [e.dst for e in store.edges_as_of(["a"], 9, 100)] == ["c"]
    assert [e.dst for e in store.edges_as_of(["a"], 10, 100)] == ["b", "c"]
    assert [e.dst for e in store.edges_as_of(["a"], 20, 100)] == ["c"]
    created = store.put_edges(
        [
            EdgeWrite(src="a", dst="c", relation="r", weight=1.0, valid_from_us=0),
            EdgeWrite(src="a", dst="d", relation="r", weight=0.5, valid_from_us=0),
        ],
        tx_us=200,
        replace_out_of=["a"],
    )
    assert created == 1
    assert [e.dst for e in store.edges_as_of(["a"], 15, 200)] == ["c", "d"]
    assert [e.dst for e in store.edges_as_of(["a"], 15, 199)] == ["b", "c"]
    assert store.count_edges() == 2
    assert store.count_edges(current_only=False) == 3


# ---------------------------------------------------------------- vectors and generation


def test_vectors_and_liveness(store: AnyStore) -> None:
    r1, r2 = store.write_nodes([_node("a", "x"), _node("b", "y", valid_from_us=T0 + 50)], tx_us=100)
    r3 = store.write_nodes([_node("a", "x2")], tx_us=200)[0]
    gen = store.generation()
    store.put_vector(r1.version_id, np.array([1, 0, 0], dtype=np.float32))
    store.put_vectors(
        [
            (r2.version_id, np.array([0, 1, 0], dtype=np.float32)),
            (r3.version_id, np.array([0, 0, 1], dtype=np.float32)),
        ]
    )
    assert store.generation() > gen
    assert store.vector_dim() == 3
    got = list(store.iter_vectors())
    assert [(v, n, f) for v, n, f, _x in got] == [
        (r1.version_id, "a", T0),
        (r2.version_id, "b", T0 + 50),
        (r3.version_id, "a", T0),
    ]
    assert got[2][3].tolist() == [0.0, 0.0, 1.0]
    assert [v for v, *_ in store.iter_vectors(after_version_id=r1.version_id)] == [
        r2.version_id,
        r3.version_id,
    ]
    assert store.max_vector_version_id() == r3.version_id
    ids = [r1.version_id, r2.version_id, r3.version_id]
    assert store.live_version_ids(ids, T0, 150) == {r1.version_id}
    assert store.live_version_ids(ids, T0 + 50, 150) == {r1.version_id, r2.version_id}
    assert store.live_version_ids(ids, T0 + 50, 200) == {r2.version_id, r3.version_id}
    with pytest.raises(InvalidRequest):
        store.put_vector(r1.version_id, np.zeros(4, dtype=np.float32))  # wrong dimension
    with pytest.raises(InvalidRequest):
        store.put_vector(r1.version_id, np.zeros(3, dtype=np.float64))
    with pytest.raises(InvalidRequest):
        store.put_vector(r1.version_id, np.array([np.nan, 0, 0], dtype=np.float32))
    with pytest.raises(InvalidRequest) as err:
        store.put_vector(9999, np.zeros(3, dtype=np.float32))
    assert err.value.field == "version_id"


def test_generation_counts_only_real_writes(store: AnyStore) -> None:
    g0 = store.generation()
    store.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=1)
    g1 = store.generation()
    assert g1 > g0
    store.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=2)
    assert store.generation() == g1


def test_transaction_rolls_back_everything(store: AnyStore) -> None:
    with pytest.raises(RuntimeError), store.transaction():
        store.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=1)
        store.put_node(_node("n", "x"), tx_us=1)
        raise RuntimeError("boom")
    assert store.count_sources() == 0
    assert store.get_as_of("n", T0, 1) is None


def test_reopen_keeps_data(backend: Backend) -> None:
    with backend.open() as s:
        s.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=1)
    with backend.open() as s:
        assert s.latest_version("a") == 1
    s.close()  # idempotent
    with pytest.raises(ShuttingDown, match="the store is closed"):  # UNAVAILABLE to a client
        s.latest_version("a")


def test_acknowledged_write_survives_kill_9(backend: Backend) -> None:
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from planner_svc.store.open import open_store\n"
        "s = open_store(Path(sys.argv[1]), sys.argv[2] or None)\n"
        "s.put_source_version('k', 'durable', title='K', media_type='text/plain', tx_us=7)\n"
        "print('acked', flush=True)\n"
        "os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(backend.data_dir), backend.url or ""],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ},
    )
    assert proc.returncode == -signal.SIGKILL
    assert proc.stdout.strip() == "acked"
    with backend.open() as s:
        assert s.source_text("k", 7) == "durable"


def test_threads_read_while_one_writes(store: AnyStore) -> None:
    store.write_nodes([_node(f"n:{i}", f"alpha word{i}") for i in range(50)], tx_us=1)
    errors: list[BaseException] = []
    stop = threading.Event()

    def reader() -> None:
        try:
            while not stop.is_set():
                got = store.get_many_as_of([f"n:{i}" for i in range(50)], T0, 1)
                assert len(got) == 50
                assert len(store.current_node_ids("n:")) == 50
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def writer() -> None:
        try:
            for i in range(40):
                store.put_node(_node(f"w:{i}", "beta"), tx_us=10 + i)
                store.put_edge(f"w:{i}", "n:0", "r", 0.5, valid_from_us=0, tx_us=10 + i)
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    readers = [threading.Thread(target=reader) for _ in range(3)]
    writers = [threading.Thread(target=writer)]
    for t in readers + writers:
        t.start()
    for t in writers:
        t.join(timeout=60)
    stop.set()
    for t in readers:
        t.join(timeout=60)
    assert errors == []
    assert len(store.edges_as_of(["n:0"], 0, 100, direction="in")) == 40
    assert store.count_nodes() == 90


def test_snapshot_is_per_thread_reentrant_and_does_not_block_writers(store: AnyStore) -> None:
    store.write_nodes([_node("a", "alpha one"), _node("b", "alpha two")], tx_us=1)
    seen_by_other_thread: list[int] = []

    def write() -> None:
        store.retire_nodes(["a"], tx_us=5)
        store.put_node(_node("c", "alpha three"), tx_us=5)
        # Another thread's reads are outside this thread's snapshot: the write is visible.
        seen_by_other_thread.append(len(store.get_many_as_of(["a", "b", "c"], T0, 10)))

    with store.snapshot():
        assert sorted(store.current_nodes(["a", "b", "c"])) == ["a", "b"]
        writer = threading.Thread(target=write)
        writer.start()
        writer.join(timeout=10)
        assert not writer.is_alive(), "the writer waited for a reader's snapshot"
        assert seen_by_other_thread == [2]  # b and c
        # This thread still reads the state of its first read, through every method.
        assert sorted(store.get_many_as_of(["a", "b", "c"], T0, 10)) == ["a", "b"]
        with store.snapshot():  # nested: joins, and leaving it keeps the outer snapshot
            assert sorted(store.current_nodes(["a", "b", "c"])) == ["a", "b"]
        assert sorted(store.current_nodes(["a", "b", "c"])) == ["a", "b"]
        assert store.count_nodes() == 2
        with pytest.raises(RuntimeError):
            store.put_node(_node("d", "x"), tx_us=6)
    assert sorted(store.get_many_as_of(["a", "b", "c"], T0, 10)) == ["b", "c"]
    assert store.count_nodes() == 2  # current versions: b and c
    store.put_node(_node("d", "x"), tx_us=6)  # writes work again after the block


def test_one_slice_and_batched_slices_agree_on_every_range(store: AnyStore) -> None:
    text = "h\u00e9 \u4e16\u754c \U0001f600!"
    store.put_source_version("m", text, title="M", media_type="text/plain", tx_us=T0)
    size = len(text.encode("utf-8"))
    keys = [("m", T0, a, b) for a in range(-1, size + 2) for b in range(-1, size + 2)]
    batched = store.canonical_slices(keys)
    for key in keys:
        assert store.canonical_slice(*key) == batched.get(key), key
    assert batched[("m", T0, 0, size)] == text


# ---------------------------------------------------------------- clock, feed and durability


def test_stamped_proposals_and_the_clock(store: AnyStore) -> None:
    with store.stamped(None, now_us=T0) as tx:
        assert tx == T0
        store.put_source_version("a", "x", title="A", media_type="text/plain", tx_us=tx)
    assert store.last_tx() == T0
    for proposed, field in ((T0 - 1, "version_tx"), (T0 + 100, "doc.version_tx")):
        with pytest.raises(InvalidRequest) as err, store.stamped(proposed, now_us=T0 + 50,
                                                                 field=field):
            pass
        assert err.value.field == field  # backdated, then in the future
    with store.stamped(T0, now_us=T0 + 50) as tx:  # equal to the latest: allowed
        assert tx == T0
    with store.stamped(T0 - 1, now_us=T0, or_clock=True) as tx:  # the clock instead
        assert tx == T0 + 1
    with pytest.raises(InvalidRequest) as err:
        store.put_node(_node("n", "x"), tx_us=T0 - 1)  # a write refuses a backdated time
    assert err.value.field == "tx"
    assert store.last_tx() == T0


def test_provenance_must_be_citable(store: AnyStore) -> None:
    store.put_source_version("s", "h\u00e9llo world", title="S", media_type="text/plain",
                             tx_us=T0)
    store.check_provenance([SpanRef("s", T0, 0, 6), SpanRef("s", T0, 7, 12)], field="p")
    for span, field in (
        (SpanRef("s", T0 + 1, 0, 1), "p[0].source_version_tx"),
        (SpanRef("nope", T0, 0, 1), "p[0].source_version_tx"),
        (SpanRef("s", T0, 0, 13), "p[0].end"),
        (SpanRef("s", T0, 0, 2), "p[0].end"),
        (SpanRef("s", T0, 2, 4), "p[0].start"),
    ):
        with pytest.raises(InvalidRequest) as err:
            store.check_provenance([span], field="p")
        assert err.value.field == field, span


def test_transaction_time_grows_in_commit_order_across_writers(backend: Backend) -> None:
    """Writers on separate connections (replicas) stamp concurrently with a stopped wall
    clock, so every time comes from the store's clock; a reader follows the change feed by
    its watermark meanwhile and must meet every row exactly once, in id order."""
    writers = [backend.open() for _ in range(3)]
    reader = backend.open()
    committed: list[tuple[int, int]] = []
    seen: list[int] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def write(store: AnyStore, w: int) -> None:
        try:
            for j in range(25):
                with store.stamped(None, now_us=T0) as tx:
                    result = store.write_nodes([_node(f"w{w}:{j}", "x")], tx_us=tx)[0]
                committed.append((result.version_id, result.tx_us))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    def follow() -> None:
        try:
            after = 0
            while True:
                finished = done.is_set()
                with reader.snapshot():
                    target = reader.feed_position().node_version_id
                    rows = reader.node_versions_after(after, 10_000)
                assert [r.version_id for r in rows] == sorted(r.version_id for r in rows)
                assert all(after < r.version_id <= target for r in rows)
                seen.extend(r.version_id for r in rows)
                after = target
                if finished:
                    return
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(s, i)) for i, s in enumerate(writers)]
    follower = threading.Thread(target=follow)
    for t in [follower, *threads]:
        t.start()
    for t in threads:
        t.join(timeout=120)
    done.set()
    follower.join(timeout=60)
    for s in [*writers, reader]:
        s.close()
    assert errors == []
    assert len(committed) == 75
    assert sorted(seen) == sorted(vid for vid, _tx in committed) == seen  # none skipped
    by_id = sorted(committed)
    times = [tx for _vid, tx in by_id]
    assert times == sorted(times) and len(set(times)) == len(times)  # strictly increasing
    assert times[0] == T0 and times[-1] == T0 + 74
    with backend.open() as s:
        assert s.last_tx() == T0 + 74


def test_unchanged_reingest_writes_nothing(store: AnyStore) -> None:
    docs = [DocumentIn(source_id=f"doc{i}", title=f"Title {i}", media_type="text/markdown",
                       text=f"# Title {i}\n\nParagraph {i} names Title {(i + 1) % 6}.\n",
                       valid_from_us=T0, version_tx_us=T0) for i in range(6)]
    first = ingest_documents(store, HashingEmbedder(dim=16), docs, now_us=T0 + 1)
    assert first.ingested == 6 and first.failed == 0
    counts = (store.last_tx(), store.generation(), store.count_nodes(current_only=False),
              store.count_edges(current_only=False), store.count_vectors(),
              store.feed_position())
    again = ingest_documents(store, HashingEmbedder(dim=16), docs, now_us=T0 + 2)
    assert (again.unchanged, again.ingested, again.nodes, again.edges) == (6, 0, 0, 0)
    assert (store.last_tx(), store.generation(), store.count_nodes(current_only=False),
            store.count_edges(current_only=False), store.count_vectors(),
            store.feed_position()) == counts


def test_acknowledged_batches_survive_kill_9_and_a_torn_one_vanishes(backend: Backend) -> None:
    script = (
        "import os, signal, sys\n"
        "from pathlib import Path\n"
        "from planner_svc.store.open import open_store\n"
        "s = open_store(Path(sys.argv[1]), sys.argv[2] or None)\n"
        "for batch in range(4):\n"
        "    with s.transaction():\n"
        "        for i in range(20):\n"
        "            s.put_source_version(f'b{batch}:{i}', f'text {batch} {i}', title='T',\n"
        "                                 media_type='text/plain', tx_us=100 + batch)\n"
        "            if batch == 3 and i == 10:\n"
        "                os.kill(os.getpid(), signal.SIGKILL)\n"
        "    print('acked', batch, flush=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", script, str(backend.data_dir), backend.url or ""],
        capture_output=True, text=True, timeout=60, env={**os.environ},
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["acked 0", "acked 1", "acked 2"]
    with backend.open() as s:
        assert s.count_sources() == 60  # three whole batches, nothing of the fourth
        assert s.latest_versions([f"b{b}:{i}" for b in range(4) for i in range(20)]) == {
            f"b{b}:{i}": 100 + b for b in range(3) for i in range(20)}
        assert s.last_tx() == 102


def test_a_schema_1_postgresql_store_gains_span_locations_when_opened(
    postgres_schemas: SchemaPerTest,
) -> None:
    """A shared store written before span locations (its schema 1) opens, keeps its ledger
    rows (no location) and records locations from then on."""
    import psycopg

    from planner_svc.store.postgres import PostgresStore
    from planner_svc.store.postgres.schema import MIGRATIONS
    from planner_svc.store.postgres.schema import SCHEMA_VERSION as PG_SCHEMA_VERSION

    url = postgres_schemas.url()
    with psycopg.connect(url, autocommit=True) as pg:
        for statement in MIGRATIONS[1].split(";"):
            if statement.strip():
                pg.execute(statement)  # type: ignore[call-overload]
        pg.execute("INSERT INTO meta (key, value) VALUES ('schema_version', '1')")
        pg.execute("INSERT INTO sources VALUES ('s', 'S', 'text/markdown', %s)", (T0,))
        pg.execute("INSERT INTO source_versions VALUES (1, 's', %s, 'S', 'text/markdown', %s)",
                   (T0, b"# S\n\nbody"))
        pg.execute("INSERT INTO spans VALUES ('s', %s, 2, 3, 'heading')", (T0,))
    with PostgresStore.open(url) as store:
        assert store.ledger_rows([("s", T0, 2, 3)]) == {("s", T0, 2, 3): LedgerRow("heading")}
        store.add_spans("s", T0, [(5, 9, "paragraph", Location(heading_path=("S",)))])
        assert store.locations_of_version("s", T0) == [
            (2, 3, "heading", NOWHERE), (5, 9, "paragraph", Location(heading_path=("S",)))]
    with psycopg.connect(url) as pg:
        row = pg.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
    assert row is not None and int(row[0]) == PG_SCHEMA_VERSION == 2
    with PostgresStore.open(url) as store:  # opening again changes nothing
        assert len(store.locations_of_version("s", T0)) == 2
