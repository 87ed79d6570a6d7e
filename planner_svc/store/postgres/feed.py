"""The change feed of the PostgreSQL store (see :mod:`planner_svc.store.feed`).

Ids and transaction times grow in commit order because every write transaction holds the clock
row's lock from its start to its commit (:mod:`planner_svc.store.postgres.db`): a reader that
read up to an id inside one snapshot never later meets a smaller id committed after it.
"""

from __future__ import annotations

from planner_svc.store.edges import EDGE_COLUMNS, edge_from_row
from planner_svc.store.feed import FeedPosition, SourceVersionRow
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.nodes import NODE_COLUMNS, pg_node
from planner_svc.store.records import Edge, NodeVersion


class PgChangeFeed(PgClock):
    """Reads of what changed since a :class:`FeedPosition` (a part of
    :class:`planner_svc.store.postgres.PostgresStore`)."""

    def feed_position(self) -> FeedPosition:
        """Where the feed ends now: the generation, the largest ids and the latest tx."""
        row = self._row(
            "SELECT c.generation, (SELECT coalesce(max(version_id), 0) FROM nodes), "
            "(SELECT coalesce(max(edge_id), 0) FROM edges), "
            "(SELECT coalesce(max(id), 0) FROM source_versions), c.last_tx FROM clock AS c")
        assert row is not None
        return FeedPosition(generation=int(row[0]), node_version_id=int(row[1]),
                            edge_id=int(row[2]), source_version_id=int(row[3]),
                            last_tx_us=None if row[4] is None else int(row[4]))

    def node_versions_after(self, after_version_id: int, limit: int) -> list[NodeVersion]:
        """Up to ``limit`` node versions with ``version_id > after_version_id``, in id order."""
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > %s "
                          "ORDER BY version_id LIMIT %s", (after_version_id, limit))
        return [pg_node(row) for row in rows]

    def node_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(version_id, tx_to_us)`` of node versions closed at or after ``tx_us``."""
        rows = self._rows("SELECT version_id, tx_to FROM nodes WHERE tx_to >= %s "
                          "ORDER BY version_id", (tx_us,))
        return [(int(r[0]), int(r[1])) for r in rows]

    def edge_versions_after(self, after_edge_id: int, limit: int) -> list[tuple[int, Edge]]:
        """Up to ``limit`` ``(edge_id, edge version)`` with ``edge_id > after_edge_id``."""
        rows = self._rows(f"SELECT edge_id, {EDGE_COLUMNS} FROM edges WHERE edge_id > %s "
                          "ORDER BY edge_id LIMIT %s", (after_edge_id, limit))
        return [(int(row[0]), edge_from_row(row[1:])) for row in rows]

    def edge_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        """``(edge_id, tx_to_us)`` of edge versions closed at or after ``tx_us``."""
        rows = self._rows("SELECT edge_id, tx_to FROM edges WHERE tx_to >= %s ORDER BY edge_id",
                          (tx_us,))
        return [(int(r[0]), int(r[1])) for r in rows]

    def source_versions_after(self, after_row_id: int, limit: int) -> list[SourceVersionRow]:
        """Up to ``limit`` source versions with a row id above ``after_row_id``."""
        rows = self._rows("SELECT id, source_id, tx, text FROM source_versions WHERE id > %s "
                          "ORDER BY id LIMIT %s", (after_row_id, limit))
        return [SourceVersionRow(row_id=int(r[0]), source_id=r[1], tx_us=int(r[2]),
                                 text=bytes(r[3]).decode("utf-8")) for r in rows]
