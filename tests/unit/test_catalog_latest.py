"""The recall catalog's latest-state caches: entries and links kept across batches equal the
ones computed afresh, whatever the batches add or close."""

from __future__ import annotations

import random

import pytest

from planner_svc.core.model import SpanRef
from planner_svc.index.catalog import Catalog, CatalogBatch
from planner_svc.store import Edge, NodeVersion

SOURCES = [f"doc{i}" for i in range(6)]
NODES = [f"n{i}" for i in range(16)]


def _version(version_id: int, node_id: str, source: str, *, valid: tuple[int, int | None],
             tx: int) -> NodeVersion:
    return NodeVersion(
        version_id=version_id, node_id=node_id, labels=("passage",), properties={},
        text=f"{node_id} of {source}", confidence=1.0,
        provenance=(SpanRef(source, 1, 0, 4 + version_id % 3),), valid_from_us=valid[0],
        valid_to_us=valid[1], tx_from_us=tx, tx_to_us=None)


def _edge(src: str, dst: str, weight: float, tx: int) -> Edge:
    return Edge(src=src, dst=dst, relation="mentions", weight=weight, valid_from_us=0,
                valid_to_us=None, tx_from_us=tx, tx_to_us=None)


def _check_every_document(catalog: Catalog) -> None:
    """Entries and links as of the latest state (cached, maybe carried over) equal the ones
    computed afresh from the rows."""
    at = catalog._latest.since
    for source in SOURCES:
        entry = catalog.entry(source, at, at)
        assert entry == catalog._entry(source, at, at), source
        links = catalog.links(source, entry, at, at)
        assert dict(links) == dict(catalog._links(entry.members, at, at)), source


@pytest.mark.parametrize("seed", range(8))
def test_cached_entries_and_links_equal_fresh_ones_after_every_batch(seed: int) -> None:
    rng = random.Random(seed)
    catalog = Catalog()
    open_versions: dict[int, NodeVersion] = {}
    open_edges: list[int] = []
    next_version, next_edge, tx = 1, 1, 10
    for _batch in range(30):
        catalog.warm()  # every entry and link cached before the batch
        tx += rng.choice([1, 5, 20])
        nodes, closed_nodes, edges, closed_edges = [], [], [], []
        for _ in range(rng.randint(0, 3)):  # new versions, some moving a node to another doc
            node_id = rng.choice(NODES)
            valid_to = rng.choice([None, None, tx + rng.randint(1, 50)])  # some end later
            when = tx - rng.choice([0, 0, 3])  # some backdated
            version = _version(next_version, node_id, rng.choice(SOURCES),
                               valid=(rng.randint(0, tx), valid_to), tx=when)
            nodes.append(version)
            if rng.random() < 0.6:  # the node's previous open version closes with it
                for vid, old in sorted(open_versions.items()):
                    if old.node_id == node_id:
                        closed_nodes.append((vid, when))
                        del open_versions[vid]
            open_versions[next_version] = version
            next_version += 1
        if open_versions and rng.random() < 0.3:  # a version closed on its own
            vid = rng.choice(sorted(open_versions))
            closed_nodes.append((vid, tx))
            del open_versions[vid]
        for _ in range(rng.randint(0, 2)):
            src, dst = rng.sample(NODES, 2)
            edges.append((next_edge, _edge(src, dst, rng.choice([0.3, 0.6, 0.9]), tx)))
            open_edges.append(next_edge)
            next_edge += 1
        if open_edges and rng.random() < 0.3:
            closed_edges.append((open_edges.pop(rng.randrange(len(open_edges))), tx))
        catalog.apply(CatalogBatch(nodes=nodes, closed_nodes=closed_nodes, edges=edges,
                                   closed_edges=closed_edges))
        _check_every_document(catalog)


def test_a_batch_keeps_what_it_cannot_change() -> None:
    catalog = Catalog()
    catalog.apply(CatalogBatch(
        nodes=[_version(1, "a", "doc0", valid=(0, None), tx=1),
               _version(2, "b", "doc1", valid=(0, None), tx=1),
               _version(3, "c", "doc2", valid=(0, None), tx=1),
               _version(4, "d", "doc3", valid=(0, None), tx=1)],
        edges=[(1, _edge("a", "b", 0.5, 1))]))
    catalog.warm()
    before = catalog._latest
    # c moves to doc4: doc2 loses its member, doc4 gains one; d, its doc3 and a-b stay alone
    catalog.apply(CatalogBatch(nodes=[_version(5, "c", "doc4", valid=(0, None), tx=2)],
                               closed_nodes=[(3, 2)]))
    after = catalog._latest
    assert after is not before
    assert {s: after.entries[s] is before.entries[s] for s in after.entries} == {
        "doc0": True, "doc1": True, "doc3": True}
    assert set(after.links) == {"doc0", "doc1", "doc3"}
    # an edge from d to b: the links of doc3 and doc1 change, doc0's stay
    catalog.apply(CatalogBatch(edges=[(2, _edge("d", "b", 0.7, 3))]))
    assert set(catalog._latest.links) == {"doc0"}
    _check_every_document(catalog)
    assert dict(catalog.links("doc1", catalog.entry("doc1", 3, 3), 3, 3)) == {
        "doc0": 0.5, "doc3": 0.7}
