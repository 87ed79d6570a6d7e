"""The change feed: what was written since a position, for the structures derived from the store.

A derived structure (the recall catalog, :mod:`planner_svc.index.catalog_sync`) keeps a
:class:`FeedPosition` and asks for what lies past it: versions with a larger id (nodes, edges and
source versions get increasing ids in commit order, since writes are serialised), and intervals
closed at or after the last transaction time it saw (a version is closed by a later write, whose
time is never earlier than any time already recorded). Reading both inside one
:meth:`~planner_svc.store.db.Database.snapshot` gives one consistent step.
"""

from __future__ import annotations

from dataclasses import dataclass

from planner_svc.store.clock import TransactionClock
from planner_svc.store.edges import EDGE_COLUMNS, edge_from_row
from planner_svc.store.nodes import NODE_COLUMNS, node_from_row
from planner_svc.store.records import Edge, NodeVersion

__all__ = ["ChangeFeed", "FeedPosition", "SourceVersionRow"]


@dataclass(frozen=True, slots=True, kw_only=True)
class FeedPosition:
    """How far a reader of the feed has read.

    Attributes:
        generation: the store's write counter (:meth:`TransactionClock.generation`).
        node_version_id, edge_id, source_version_id: the largest ids read (0 = none).
        last_tx_us: the latest transaction time recorded when it read (None = empty store).
    """

    generation: int = -1
    node_version_id: int = 0
    edge_id: int = 0
    source_version_id: int = 0
    last_tx_us: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SourceVersionRow:
    """One stored source version: its row id, source, transaction time and canonical text."""

    row_id: int
    source_id: str
    tx_us: int
    text: str


class ChangeFeed(TransactionClock):
    """Reads of what changed since a :class:`FeedPosition` (a part of
    :class:`planner_svc.store.Store`)."""

    def feed_position(self) -> FeedPosition:
        """Where the feed ends now: the generation, the largest ids and the latest tx."""
        row = self._conn().execute(
            "SELECT (SELECT value FROM meta WHERE key = 'generation'), "
            "(SELECT coalesce(max(version_id), 0) FROM nodes), "
            "(SELECT coalesce(max(edge_id), 0) FROM edges), "
            "(SELECT coalesce(max(id), 0) FROM source_versions), "
            "(SELECT value FROM meta WHERE key = 'last_tx')"
        ).fetchone()
        return FeedPosition(generation=int(row[0]), node_version_id=int(row[1]),
                            edge_id=int(row[2]), source_version_id=int(row[3]),
                            last_tx_us=None if row[4] is None else int(row[4]))

    def node_versions_after(self, after_version_id: int, limit: int) -> list[NodeVersion]:
        """Up to ``limit`` node versions with ``version_id > after_version_id``, live or not,
        in version id order."""
        rows = self._conn().execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > ? ORDER BY version_id LIMIT ?",
            (after_version_id, limit),
        )
        return [node_from_row(row) for row in rows]

    def node_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(version_id, tx_to_us)`` of the node versions whose transaction interval ended at
        or after ``tx_us`` (microseconds), in version id order."""
        rows = self._conn().execute(
            "SELECT version_id, tx_to FROM nodes WHERE tx_to >= ? ORDER BY version_id", (tx_us,)
        )
        return [(int(r[0]), int(r[1])) for r in rows]

    def edge_versions_after(self, after_edge_id: int, limit: int) -> list[tuple[int, Edge]]:
        """Up to ``limit`` ``(edge_id, edge version)`` with ``edge_id > after_edge_id``, live or
        not, in edge id order."""
        rows = self._conn().execute(
            f"SELECT edge_id, {EDGE_COLUMNS} FROM edges WHERE edge_id > ? "
            "ORDER BY edge_id LIMIT ?",
            (after_edge_id, limit),
        )
        return [(int(row[0]), edge_from_row(row[1:])) for row in rows]

    def edge_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(edge_id, tx_to_us)`` of the edge versions whose transaction interval ended at or
        after ``tx_us`` (microseconds), in edge id order."""
        rows = self._conn().execute(
            "SELECT edge_id, tx_to FROM edges WHERE tx_to >= ? ORDER BY edge_id", (tx_us,)
        )
        return [(int(r[0]), int(r[1])) for r in rows]

    def source_versions_after(self, after_row_id: int, limit: int) -> list[SourceVersionRow]:
        """Up to ``limit`` source versions with a row id above ``after_row_id``, in row id
        order (a source's versions in transaction-time order)."""
        rows = self._conn().execute(
            "SELECT id, source_id, tx, text FROM source_versions WHERE id > ? "
            "ORDER BY id LIMIT ?",
            (after_row_id, limit),
        )
        return [SourceVersionRow(row_id=int(r[0]), source_id=r[1], tx_us=int(r[2]),
                                 text=bytes(r[3]).decode("utf-8")) for r in rows]
