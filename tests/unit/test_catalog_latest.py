"""The recall catalog's latest-state caches: entries and links kept across batches equal the
ones computed afresh, for the batches the generator makes (see its comments)."""

from __future__ import annotations

import random

import pytest

from planner_svc.core.model import SpanRef
from planner_svc.index import catalog as catalog_module
from planner_svc.index.catalog import Catalog, CatalogBatch, SourceEntry
from planner_svc.store import Edge, NodeVersion, SourceVersionRow

SOURCES = [f"doc{i}" for i in range(5)]
NODES = [f"n{i}" for i in range(10)]


def _random_version(rng: random.Random, version_id: int, tx: int) -> NodeVersion:
    node_id = rng.choice(NODES)
    cited = rng.choice([0, 1, 1, 1, 2])  # 0: no provenance (no document); 2: two spans
    provenance = tuple(SpanRef(rng.choice(SOURCES), 1, j, j + 1 + version_id % 3)
                       for j in range(cited))
    valid_from = rng.randint(0, tx + 30)  # sometimes valid from the future
    valid_to = rng.choice([None, None, valid_from + rng.randint(1, 60)])
    return NodeVersion(version_id=version_id, node_id=node_id, labels=("passage",),
                       properties={}, text=f"{node_id} text {version_id}", confidence=1.0,
                       provenance=provenance, valid_from_us=valid_from, valid_to_us=valid_to,
                       tx_from_us=tx - rng.choice([0, 0, 0, 2, 7]),  # some backdated
                       tx_to_us=None)


def _random_edge(rng: random.Random, tx: int) -> Edge:
    src, dst = rng.sample(NODES, 2)
    valid_from = rng.randint(0, tx + 30)
    return Edge(src=src, dst=dst, relation=rng.choice(["mentions", "cites"]),
                weight=rng.choice([0.2, 0.5, 0.9]), valid_from_us=valid_from,
                valid_to_us=rng.choice([None, None, valid_from + rng.randint(1, 60)]),
                tx_from_us=tx - rng.choice([0, 0, 4]), tx_to_us=None)


def _check_every_document(catalog: Catalog, rng: random.Random) -> None:
    """Entries and links read at and past the latest state (cached, maybe carried over) equal
    the ones computed afresh from the rows."""
    since = catalog._latest.since
    for valid_us, tx_us in ((since, since),
                            (since + rng.randint(1, 100), since + rng.randint(1, 100))):
        for source in [*SOURCES, "nowhere"]:
            entry = catalog.entry(source, valid_us, tx_us)
            fresh = catalog._entry(source, valid_us, tx_us)
            assert entry == fresh, (source, valid_us, tx_us)
            assert dict(catalog.links(source, entry, valid_us, tx_us)) == dict(
                catalog._links(fresh.members, valid_us, tx_us)), (source, valid_us, tx_us)
    _check_bulk_reads(catalog, rng)


def _check_bulk_reads(catalog: Catalog, rng: random.Random) -> None:
    """The bulk reads give what the per-document reads give, in the order asked, for cached
    and uncached documents, repeats and unknown ones, at and before the latest state."""
    since = catalog._latest.since
    asked = [*rng.sample(SOURCES, 3), "nowhere", *rng.sample(SOURCES, 2)]  # repeats likely
    for valid_us, tx_us in ((since, since), (max(0, since - 3), max(0, since - 3))):
        got = catalog.entries(asked, valid_us, tx_us)
        assert got == [catalog._entry(s, valid_us, tx_us) for s in asked]
        first: dict[str, SourceEntry] = {}
        for source, entry in zip(asked, got, strict=True):
            assert first.setdefault(source, entry) is entry  # a repeat: the same object
        assert catalog.document_rows(asked, tx_us) == [
            catalog._document_row(s, tx_us) for s in asked]
    # past, at and before the latest time a source version starts (read by the last rows)
    last = catalog._last_rows_since
    for tx_us in (last, last + rng.randint(1, 100), max(0, last - 1), 0):
        assert catalog.document_rows(asked, tx_us) == [
            catalog._document_row(s, tx_us) for s in asked]
        assert catalog.document_rows(iter(asked), tx_us) == [
            catalog._document_row(s, tx_us) for s in asked]
    rows = [*catalog._source_of_row, -1, 10**9]
    assert catalog.sources_of_documents(rows) == [catalog.source_of_document(r) for r in rows]
    latest = catalog._latest.entries
    assert latest.find_many(asked) == [latest.find(s) for s in asked]
    assert latest.find_many(iter(asked)) == [latest.find(s) for s in asked]
    ids = [*catalog._versions, 10**9]
    for valid_us, tx_us in ((since, since), (since + rng.randint(1, 100), since + 7),
                            (max(0, since - 3), since), (since, max(0, since - 3))):
        live = {v for v in ids if (found := catalog.version(v)) is not None
                and found.live(valid_us, tx_us)}
        assert catalog.live_version_ids(ids, valid_us, tx_us) == live
        assert catalog.live_version_ids(iter(ids), valid_us, tx_us) == live


class _Failed(Exception):
    """A batch failing part-way."""


@pytest.mark.parametrize("seed", range(60))
def test_cached_entries_and_links_equal_fresh_ones_after_every_batch(
        seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    catalog = Catalog()
    versions: list[int] = []
    edges: list[int] = []
    sent_nodes: list[NodeVersion] = []
    sent_edges: list[tuple[int, Edge]] = []
    version_id, edge_id, row, tx = 1, 1, 1, 10
    for _batch in range(25):
        fill = rng.random()
        if fill < 0.5:  # every entry and link cached before the batch
            catalog.warm(catalog._latest.since)
        elif fill < 0.8:  # some of them
            since = catalog._latest.since
            for source in rng.sample(SOURCES, 2):
                entry = catalog.entry(source, since, since)
                if rng.random() < 0.5:
                    catalog.links(source, entry, since, since)
        tx += rng.choice([1, 3, 10])
        nodes = [_random_version(rng, version_id + i, tx) for i in range(rng.randint(0, 3))]
        version_id += len(nodes)
        closed_nodes = []
        for _ in range(rng.randint(0, 2)):  # known versions (closed again, or backdated)
            if versions and rng.random() < 0.8:
                closed_nodes.append((rng.choice(versions), tx - rng.choice([0, 0, 5])))
            else:
                closed_nodes.append((10**6 + rng.randint(0, 5), tx))  # an unknown id
        new_edges = [(edge_id + i, _random_edge(rng, tx)) for i in range(rng.randint(0, 2))]
        edge_id += len(new_edges)
        closed_edges = [(rng.choice(edges), tx) for _ in range(rng.randint(0, 1)) if edges]
        sources = ([SourceVersionRow(row_id=row, source_id=rng.choice(SOURCES), tx_us=tx,
                                     text="some words")] if rng.random() < 0.3 else [])
        row += len(sources)
        # rows sent again, as a catch-up after a failure does
        again_nodes = rng.sample(sent_nodes, min(len(sent_nodes), 1)) if rng.random() < 0.2 else []
        again_edges = rng.sample(sent_edges, min(len(sent_edges), 1)) if rng.random() < 0.2 else []
        batch = CatalogBatch(
            nodes=sorted([*again_nodes, *nodes], key=lambda n: n.version_id),
            closed_nodes=closed_nodes,
            edges=sorted([*again_edges, *new_edges], key=lambda e: e[0]),
            closed_edges=closed_edges, sources=sources)
        if rng.random() < 0.15:  # fails part-way (after nodes and edges), then is sent again
            add = catalog.documents.add

            def fail(_rows: object) -> None:
                raise _Failed

            monkeypatch.setattr(catalog.documents, "add", fail)
            with pytest.raises(_Failed):
                catalog.apply(batch)
            monkeypatch.setattr(catalog.documents, "add", add)
            _check_every_document(catalog, rng)
            if rng.random() < 0.5:
                catalog.warm(catalog._latest.since)
        catalog.apply(batch)
        versions += [n.version_id for n in nodes]
        edges += [e for e, _ in new_edges]
        sent_nodes += nodes
        sent_edges += new_edges
        _check_every_document(catalog, rng)


def _version(version_id: int, node_id: str, source: str, tx: int,
             valid_to: int | None = None) -> NodeVersion:
    return NodeVersion(version_id=version_id, node_id=node_id, labels=("passage",),
                       properties={}, text="x", confidence=1.0,
                       provenance=(SpanRef(source, 1, 0, 1),), valid_from_us=0,
                       valid_to_us=valid_to, tx_from_us=tx, tx_to_us=None)


def _edge(src: str, dst: str, weight: float, tx: int) -> Edge:
    return Edge(src=src, dst=dst, relation="mentions", weight=weight, valid_from_us=0,
                valid_to_us=None, tx_from_us=tx, tx_to_us=None)


def test_a_batch_keeps_what_it_cannot_change() -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(
        nodes=[_version(1, "a", "doc0", 1), _version(2, "b", "doc1", 1),
               _version(3, "c", "doc2", 1), _version(4, "d", "doc3", 1)],
        edges=[(1, _edge("a", "b", 0.5, 1))]))
    assert catalog.warm(1) == 4
    before = catalog._latest
    # c moves to doc4: doc2 loses its member, doc4 gains one; d, its doc3 and a-b stay alone
    catalog.apply(CatalogBatch(nodes=[_version(5, "c", "doc4", 2)], closed_nodes=[(3, 2)]))
    after = catalog._latest
    assert {s: after.entries[s] is before.entries[s] for s in after.entries} == {
        "doc0": True, "doc1": True, "doc3": True}
    assert set(after.links) == {"doc0", "doc1", "doc3"}
    # an edge from d to b: the links of doc3 and doc1 change, doc0's stay
    catalog.apply(CatalogBatch(edges=[(2, _edge("d", "b", 0.7, 3))]))
    assert set(catalog._latest.links) == {"doc0"}
    _check_every_document(catalog, random.Random(0))
    assert dict(catalog.links("doc1", catalog.entry("doc1", 3, 3), 3, 3)) == {
        "doc0": 0.5, "doc3": 0.7}


def test_a_closing_sent_again_changes_nothing() -> None:
    # the change feed sends the closings at or after its last transaction time again
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(1, "a", "doc0", 1), _version(2, "b", "doc1", 1)]))
    catalog.apply(CatalogBatch(nodes=[_version(3, "a", "doc0", 5)], closed_nodes=[(1, 5)]))
    catalog.warm(5)
    kept = catalog._latest.entries["doc0"]
    catalog.apply(CatalogBatch(nodes=[_version(4, "c", "doc1", 9)], closed_nodes=[(1, 5)]))
    assert catalog._latest.entries["doc0"] is kept
    assert "doc1" not in catalog._latest.entries
    # the same for an edge's closing
    catalog.apply(CatalogBatch(edges=[(1, _edge("a", "b", 0.5, 9))], closed_edges=[(1, 12)]))
    catalog.warm(12)
    links = catalog._latest.links["doc0"]
    catalog.apply(CatalogBatch(nodes=[_version(5, "d", "doc2", 15)], closed_edges=[(1, 12)]))
    assert catalog._latest.links["doc0"] is links
    _check_every_document(catalog, random.Random(0))


def test_a_failed_carry_over_leaves_empty_caches(monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(1, "a", "doc0", 1)]))
    catalog.warm(1)
    batch = CatalogBatch(nodes=[_version(2, "b", "doc0", 1)])  # a second member, same bounds

    def fail(_changes: object) -> set[str]:
        raise MemoryError

    monkeypatch.setattr(catalog, "_relinked", fail)
    with pytest.raises(MemoryError):
        catalog.apply(batch)
    assert catalog._latest.open and not catalog._latest.entries
    monkeypatch.undo()
    catalog.apply(batch)  # sent again: every id is known now
    assert catalog.entry("doc0", 1, 1).ids == (1, 2)


def test_a_batch_prunes_the_shared_caches_in_place_without_copying_them() -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(i, f"n{i}", f"doc{i}", 1) for i in range(50)]))
    catalog.warm(1)
    before = catalog._latest
    shared = before.entries._values
    catalog.apply(CatalogBatch(nodes=[_version(50, "n3", "doc3", 2)], closed_nodes=[(3, 2)]))
    after = catalog._latest
    assert after.entries._values is shared and after.generation == before.generation + 1
    assert len(after.entries) == 49 and "doc3" not in after.entries
    # a value computed by the new state is not read by the old one, whose batch came after it
    entry = catalog.entry("doc3", 2, 2)
    assert after.entries["doc3"] is entry and "doc3" not in before.entries
    assert before.entries.get("doc3") is None and before.entries.get("doc4") is not None
    # the old state is closed: it keeps nothing it computes
    assert not before.open
    _check_every_document(catalog, random.Random(0))


def test_a_value_computed_across_a_batch_is_not_kept() -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(1, "a", "doc0", 1), _version(2, "b", "doc1", 1)]))
    computing = catalog._entry

    def batch_meanwhile(source_id: str, valid_us: int, tx_us: int) -> SourceEntry:
        # a plan computes doc1's entry; before it keeps it, a batch gives doc1 a member
        found = computing(source_id, valid_us, tx_us)
        catalog._entry = computing  # type: ignore[method-assign]
        catalog.apply(CatalogBatch(nodes=[_version(3, "c", "doc1", 1)]))
        return found

    catalog._entry = batch_meanwhile  # type: ignore[method-assign]
    assert catalog.entry("doc1", 1, 1).ids == (2,)  # the plan gets what it computed
    assert "doc1" not in catalog._latest.entries  # but nothing stale is kept
    assert catalog.entry("doc1", 1, 1).ids == (2, 3)


def test_warm_computes_nothing_when_a_bound_lies_well_after_now() -> None:
    ahead = catalog_module.WARM_AHEAD_US
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(1, "a", "doc0", 10),
                                      _version(2, "b", "doc1", 10, valid_to=100 + ahead + 1)]))
    assert catalog.warm(100) == 0  # plans as of 100 are not past every bound: none would read them
    assert not catalog._latest.entries
    assert catalog.warm(101) == 2  # a bound within the minute: the next plans will be past it
    assert set(catalog._latest.entries) == set(catalog._latest.links) == {"doc0", "doc1"}


@pytest.mark.parametrize("failing", ["documents", "passages"])
def test_a_batch_failing_before_its_text_is_indexed_indexes_it_when_sent_again(
        failing: str, monkeypatch: pytest.MonkeyPatch) -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(
        nodes=[_version(1, "a", "doc0", 1)],
        sources=[SourceVersionRow(row_id=1, source_id="doc0", tx_us=1, text="alpha")]))
    text = "beta"
    batch = CatalogBatch(
        nodes=[NodeVersion(version_id=2, node_id="b", labels=("passage",), properties={},
                           text=text, confidence=1.0, provenance=(SpanRef("doc0", 5, 0, 4),),
                           valid_from_us=0, valid_to_us=None, tx_from_us=5, tx_to_us=None)],
        sources=[SourceVersionRow(row_id=2, source_id="doc0", tx_us=5, text=text)])
    index = getattr(catalog, failing)
    add = index.add

    def fail(_rows: object) -> None:
        raise _Failed

    monkeypatch.setattr(index, "add", fail)
    with pytest.raises(_Failed):
        catalog.apply(batch)
    monkeypatch.setattr(index, "add", add)
    catalog.apply(batch)  # the catch-up sends the batch again
    assert catalog.document_terms("doc0", 10) == frozenset({"beta"})
    assert [row for row, _ in catalog.documents.search(["alpha"], valid_us=10, tx_us=10,
                                                      limit=5)] == []
    assert [row for row, _ in catalog.documents.search(["beta"], valid_us=10, tx_us=10,
                                                     limit=5)] == [2]
    assert [row for row, _ in catalog.passages.search(["beta"], valid_us=10, tx_us=10,
                                                    limit=5)] == [2]


def test_entries_computes_a_repeated_uncached_document_once() -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=[_version(1, "a", "doc0", 10),
                                      _version(2, "b", "doc1", 10)]))
    since = catalog._latest.since
    assert not catalog._latest.entries  # nothing cached yet
    first, other, again = catalog.entries(["doc0", "doc1", "doc0"], since, since)
    assert first is again  # one object: links() cached for it hold for every copy
    assert first.ids == (1,) and other.ids == (2,)
    assert catalog._latest.entries.find("doc0") is first
