"""Catalog catch-up: the recall catalog brought up to the store before each plan.

The catalog (:mod:`planner_svc.index.catalog`) is derived data. :class:`FreshCatalog` keeps the
store's feed position it has read to and, when the store's write counter has moved, reads what
lies past it (:class:`planner_svc.store.feed.ChangeFeed`): new node, edge and source versions,
and the intervals closed since. New spans get their kind from the span ledger and their token
estimate from their text, once. Writes from anywhere (this process, another worker, ``planner-svc
ingest`` on the same data directory) therefore reach every plan of every process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from contextlib import AbstractContextManager
from typing import Protocol

import structlog

from planner_svc.core.model import NOWHERE, CoordKey
from planner_svc.core.tokens import estimate_tokens
from planner_svc.index.catalog import Catalog, CatalogBatch, SpanInfo
from planner_svc.store.feed import FeedPosition, SourceVersionRow
from planner_svc.store.records import Edge, LedgerRow, NodeVersion

__all__ = ["CatalogFeed", "FreshCatalog"]

_PAGE = 4096
"""Rows read per feed call."""

_log = structlog.get_logger("planner_svc.index")


class CatalogFeed(Protocol):
    """What the catalog reads from the store (the embedded store satisfies it)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads all see one committed state (re-entrant)."""
        ...

    def generation(self) -> int:
        """The store's write counter."""
        ...

    def feed_position(self) -> FeedPosition:
        """Where the feed ends now."""
        ...

    def node_versions_after(self, after_version_id: int, limit: int) -> list[NodeVersion]:
        """Node versions past an id, in id order."""
        ...

    def node_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(version_id, tx_to_us)`` closed at or after a time."""
        ...

    def edge_versions_after(self, after_edge_id: int, limit: int) -> list[tuple[int, Edge]]:
        """Edge versions past an id, in id order."""
        ...

    def edge_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(edge_id, tx_to_us)`` closed at or after a time."""
        ...

    def source_versions_after(self, after_row_id: int, limit: int) -> list[SourceVersionRow]:
        """Source versions past a row id, in row id order."""
        ...

    def ledger_rows(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, LedgerRow]:
        """Span-ledger rows (kind and location) of exact spans, read together; spans without
        a row are absent (the catalog then uses ``body`` and no location)."""
        ...

    def canonical_slices(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        """Texts of spans; unsliceable spans are absent."""
        ...


class FreshCatalog:
    """A :class:`Catalog` kept up to the store it is derived from.

    Args:
        feed: the store.
    """

    def __init__(self, feed: CatalogFeed) -> None:
        self._feed = feed
        self._catalog = Catalog()
        self._position = FeedPosition()
        self._lock = threading.Lock()

    @property
    def position(self) -> FeedPosition:
        """The feed position the catalog has read to."""
        return self._position

    def current(self) -> Catalog:
        """The catalog, caught up first when the store's write counter moved (one cheap read
        when it did not). Call it inside the plan's store snapshot, so the catch-up reads the
        state the plan reads."""
        if self._feed.generation() != self._position.generation:
            self.catch_up()
        return self._catalog

    def catch_up(self, progress: Callable[[str, int, int], None] | None = None) -> int:
        """Read everything past the position and apply it; returns the node versions added.

        Args:
            progress: called after each page read with ``(rows, last id read, target id)``
                for ``rows`` in ``nodes``, ``edges``, ``sources``; then once with ``(spans,
                n, n)`` when the ``n`` cited spans' kinds and token estimates are read, and
                once with ``(indexed, n, n)`` when the ``n`` node versions are indexed (a
                replica's start-up reports how far its build is).
        """
        report = progress or (lambda _rows, _at, _target: None)
        with self._lock, self._feed.snapshot():
            target = self._feed.feed_position()
            before = self._position
            if target == before:
                return 0
            nodes: list[NodeVersion] = []
            after = before.node_version_id
            while after < target.node_version_id:
                page = self._feed.node_versions_after(after, _PAGE)
                if not page:
                    break
                nodes.extend(v for v in page if v.version_id <= target.node_version_id)
                after = page[-1].version_id
                report("nodes", after, target.node_version_id)
            edges: list[tuple[int, Edge]] = []
            after = before.edge_id
            while after < target.edge_id:
                edge_page = self._feed.edge_versions_after(after, _PAGE)
                if not edge_page:
                    break
                edges.extend(e for e in edge_page if e[0] <= target.edge_id)
                after = edge_page[-1][0]
                report("edges", after, target.edge_id)
            sources: list[SourceVersionRow] = []
            after = before.source_version_id
            while after < target.source_version_id:
                source_page = self._feed.source_versions_after(after, _PAGE)
                if not source_page:
                    break
                sources.extend(s for s in source_page if s.row_id <= target.source_version_id)
                after = source_page[-1].row_id
                report("sources", after, target.source_version_id)
            since = before.last_tx_us
            closed_nodes = [] if since is None else self._feed.node_versions_closed_since(since)
            closed_edges = [] if since is None else self._feed.edge_versions_closed_since(since)
            keys = sorted({span.key for n in nodes for span in n.provenance})
            ledger = self._feed.ledger_rows(keys) if keys else {}
            texts = self._feed.canonical_slices(keys) if keys else {}
            spans = {
                key: SpanInfo(kind=row.kind if row is not None else "body",
                              kind_known=row is not None,
                              estimated_tokens=estimate_tokens(texts[key])
                              if key in texts else None,
                              location=row.location if row is not None else NOWHERE)
                for key in keys
                for row in (ledger.get(key),)
            }
            report("spans", len(keys), len(keys))
            self._catalog.apply(CatalogBatch(
                nodes=nodes, closed_nodes=closed_nodes, edges=edges, closed_edges=closed_edges,
                sources=sources, spans=spans,
            ))
            if before.generation < 0:
                self._catalog.compact()  # one merged segment after the initial build
            report("indexed", len(nodes), len(nodes))
            self._position = target
        if nodes or edges or sources:
            _log.debug("catalog.catch_up", nodes=len(nodes), edges=len(edges),
                       sources=len(sources), generation=target.generation)
        return len(nodes)
