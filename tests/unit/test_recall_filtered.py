"""Label- and property-filtered structured recall over the recall catalog: the same hits and
scores whichever store backend the catalog follows (every test runs on both)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from planner_svc.index.catalog import Catalog
from planner_svc.index.catalog_sync import FreshCatalog
from planner_svc.recall.engine import filtered_nodes
from planner_svc.store import NodeWrite
from planner_svc.store.open import AnyStore
from tests.pgserver import Backend

T0 = 1_700_000_000_000_000  # microseconds


def _node(node_id: str, text: str, **kw: object) -> NodeWrite:
    fields: dict[str, object] = {"valid_from_us": T0, "labels": ("thing",)}
    fields.update(kw)
    return NodeWrite(node_id=node_id, text=text, **fields)  # type: ignore[arg-type]


@pytest.fixture()
def store(backend: Backend) -> Iterator[AnyStore]:
    with backend.open() as s:
        s.write_nodes(
            [
                _node("d:cash", "Johnny Cash and the Tennessee Three", labels=("document",),
                      properties={"topic": "People"}),
                _node("p:cash", "Cash recorded with the Tennessee Three band",
                      labels=("passage",)),
                _node("p:goat", "Goats were domesticated in Iran", labels=("passage",),
                      properties={"topic": "Biology"}),
                _node("p:empty", "", labels=("passage",)),
            ],
            tx_us=100,
        )
        s.retire_nodes(["p:empty"], tx_us=200)
        yield s


def _catalog(store: AnyStore) -> Catalog:
    fresh = FreshCatalog(store)
    fresh.catch_up()
    return fresh.current()


def _hits(catalog: Catalog, text: str, *, labels: tuple[str, ...] = (),
          properties: dict[str, str] | None = None, tx_us: int = 100,
          limit: int = 10) -> list[tuple[str, float]]:
    found = filtered_nodes(catalog, text, labels=labels, properties=properties or {},
                           valid_us=T0, tx_us=tx_us, limit=limit)
    return list(found.items())


def test_filtered_hits_are_ranked_by_passage_bm25(store: AnyStore) -> None:
    catalog = _catalog(store)
    hits = _hits(catalog, "Tennessee Three band", labels=("passage",))
    assert [h[0] for h in hits] == ["p:cash"]
    view = catalog.passages.view(valid_us=T0, tx_us=100)
    version = catalog.live_version("p:cash", T0, 100)
    assert version is not None
    assert hits[0][1] == view.score_rows(["tennesse", "three", "band"], [version.version_id])[
        version.version_id]
    both = _hits(catalog, "Tennessee", labels=("thing",))
    assert both == []  # no node carries the label
    # stemming: "domestication" matches "domesticated"
    assert [h[0] for h in _hits(catalog, "domestication of goats",
                                properties={"topic": "Biology"})] == ["p:goat"]
    ranked = _hits(catalog, "Cash Tennessee", labels=())
    assert ranked == []  # no filter, no filtered search


def test_filter_only_scores_one_by_node_id(store: AnyStore) -> None:
    catalog = _catalog(store)
    assert _hits(catalog, "", labels=("passage",)) == [("p:cash", 1.0), ("p:empty", 1.0),
                                                       ("p:goat", 1.0)]
    assert _hits(catalog, "", labels=("passage",), tx_us=200) == [("p:cash", 1.0),
                                                                  ("p:goat", 1.0)]
    assert _hits(catalog, "  ", properties={"topic": "Biology"}) == [("p:goat", 1.0)]
    assert _hits(catalog, "", labels=("passage",), limit=1) == [("p:cash", 1.0)]
    assert _hits(catalog, "", labels=("passage",), limit=0) == []


def test_every_filter_must_hold(store: AnyStore) -> None:
    catalog = _catalog(store)
    assert _hits(catalog, "cash", labels=("document", "document"),
                 properties={"topic": "People"})[0][0] == "d:cash"
    assert _hits(catalog, "cash", labels=("document", "passage")) == []
    assert _hits(catalog, "", labels=("passage",), properties={"topic": "Biology"}) == [
        ("p:goat", 1.0)]
    assert _hits(catalog, "", labels=("passage",), properties={"topic": "People"}) == []
    many = tuple(f"l{i}" for i in range(1100))
    assert _hits(catalog, "Tennessee", labels=many) == []
    assert _hits(catalog, "cash", properties={f"k{i}": "v" for i in range(1100)}) == []


def test_as_of_hides_later_and_earlier_versions(store: AnyStore) -> None:
    catalog = _catalog(store)
    assert _hits(catalog, "Tennessee", labels=("passage",), tx_us=99) == []
    assert filtered_nodes(catalog, "Tennessee", labels=("passage",), properties={},
                          valid_us=T0 - 1, tx_us=100, limit=10) == {}


@pytest.mark.parametrize("query", ['"', "AND", "*", "NEAR(", "text:goat", "\x00", "three",
                                   "the of and", "naïve café"])
def test_any_text_is_a_query(store: AnyStore, query: str) -> None:
    found = _hits(_catalog(store), query, labels=("passage",))
    assert all(score > 0 for _node_id, score in found)
