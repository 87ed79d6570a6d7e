"""Bitemporal weighted edges between nodes, keyed by ``(src, dst, relation)``.

Edge versions have valid and transaction intervals like nodes (microseconds, half-open); at most
one version per key is current (open transaction interval). A write that differs from the
current version closes it at the write's time and adds a new one; an identical write is a no-op.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import Direction
from planner_svc.store.clock import TransactionClock
from planner_svc.store.db import live
from planner_svc.store.records import Edge, EdgeWrite
from planner_svc.store.rules import edge_changes, edge_sources
from planner_svc.store.text import check_time

EDGE_COLUMNS = "src, dst, relation, weight, valid_from, valid_to, tx_from, tx_to"
"""Columns of an edge row, in the order :func:`edge_from_row` reads them."""


def edge_from_row(row: Sequence[Any]) -> Edge:
    """The :class:`Edge` of one row selected with :data:`EDGE_COLUMNS`."""
    return Edge(
        src=row[0],
        dst=row[1],
        relation=row[2],
        weight=row[3],
        valid_from_us=row[4],
        valid_to_us=row[5],
        tx_from_us=row[6],
        tx_to_us=row[7],
    )


class Edges(TransactionClock):
    """Bitemporal edge versions (a part of :class:`planner_svc.store.Store`)."""

    def put_edge(
        self,
        src: str,
        dst: str,
        relation: str,
        weight: float,
        *,
        valid_from_us: int,
        valid_to_us: int | None = None,
        tx_us: int,
    ) -> int:
        """Write one edge version (see :meth:`put_edges`).

        Returns:
            The transaction time (microseconds) of the edge's current version: ``tx_us``, or the
            existing version's when the write was identical (a no-op).
        """
        write = EdgeWrite(
            src=src,
            dst=dst,
            relation=relation,
            weight=weight,
            valid_from_us=valid_from_us,
            valid_to_us=valid_to_us,
        )
        self.put_edges([write], tx_us=tx_us)
        row = (
            self._conn()
            .execute(
                "SELECT tx_from FROM edges WHERE src = ? AND dst = ? AND relation = ? "
                "AND tx_to IS NULL",
                (src, dst, relation),
            )
            .fetchone()
        )
        return int(row[0])

    def put_edges(
        self,
        writes: Iterable[EdgeWrite],
        *,
        tx_us: int,
        replace_out_of: Iterable[str] = (),
    ) -> int:
        """Write edge versions at transaction time ``tx_us`` (microseconds), atomically.

        Supersession is keyed on ``(src, dst, relation)``: a different current version is
        closed at ``tx_us`` and replaced; an identical write is a no-op. When a key occurs more
        than once in ``writes`` the last one wins.

        Args:
            writes: the edges.
            tx_us: transaction time.
            replace_out_of: node ids whose current outgoing edges are replaced by the ones in
                ``writes``: their current edges whose key is not written are closed at
                ``tx_us``.

        Returns:
            Number of edge versions created.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest transaction time the
                store has recorded. Nothing is written then.
        """
        check_time(tx_us, field="tx")
        listed, replace, srcs = edge_sources(writes, replace_out_of)
        if not srcs:
            return 0
        with self._write() as conn:
            current: dict[tuple[str, str, str], tuple[int, Edge]] = {}
            for row in self._read_batch(
                f"SELECT edge_id, {EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL "
                "AND src IN (SELECT value FROM json_each(?))",
                srcs,
            ):
                edge = edge_from_row(row[1:])
                current[edge.key] = (row[0], edge)
            changes, closing = edge_changes(listed, current, replace)
            if closing or changes:
                self._record_tx(conn, tx_us, field="tx")
            if closing:
                conn.executemany(
                    "UPDATE edges SET tx_to = ? WHERE edge_id = ?",
                    [(tx_us, edge_id) for edge_id in closing],
                )
            if changes:
                conn.executemany(
                    "INSERT INTO edges (src, dst, relation, weight, valid_from, valid_to, "
                    "tx_from, tx_to) VALUES (?, ?, ?, ?, ?, ?, ?, NULL)",
                    [
                        (w.src, w.dst, w.relation, w.weight, w.valid_from_us, w.valid_to_us, tx_us)
                        for w in changes
                    ],
                )
            if closing or changes:
                self._changed()
        return len(changes)

    def edges_as_of(
        self,
        node_ids: Iterable[str],
        valid_us: int,
        tx_us: int,
        *,
        direction: Direction = "out",
    ) -> list[Edge]:
        """Edges live at (``valid_us``, ``tx_us``) (microseconds, half-open intervals) that
        leave (``out``), enter (``in``) or touch (``both``) one of ``node_ids``.

        Returns:
            Edges sorted by (src, dst, relation); each edge once. At most two SQL queries.

        Raises:
            InvalidRequest: (``direction``) not one of out, in, both.
        """
        if direction not in ("out", "in", "both"):
            raise InvalidRequest("direction", f"{direction!r} is not one of out, in, both")
        ids = sorted(set(node_ids))
        found: dict[tuple[str, str, str], Edge] = {}
        columns = {"out": ("src",), "in": ("dst",), "both": ("src", "dst")}[direction]
        for column in columns:
            rows = self._read_batch(
                f"SELECT {EDGE_COLUMNS} FROM edges "
                f"WHERE {column} IN (SELECT value FROM json_each(?)) AND {live('')}",
                ids, valid_us, valid_us, tx_us, tx_us,
            )
            for row in rows:
                edge = edge_from_row(row)
                found[edge.key] = edge
        return [found[k] for k in sorted(found)]

    def current_out_edges(self, src_ids: Iterable[str]) -> list[Edge]:
        """Current edge versions (open tx interval, any valid interval) leaving ``src_ids``,
        sorted by (src, dst, relation)."""
        rows = self._read_batch(
            f"SELECT {EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL "
            "AND src IN (SELECT value FROM json_each(?)) ORDER BY src, dst, relation",
            src_ids,
        )
        return [edge_from_row(row) for row in rows]

    def retire_edges(self, keys: Iterable[tuple[str, str, str]], *, tx_us: int) -> int:
        """End the current version of each ``(src, dst, relation)`` edge at ``tx_us``
        (microseconds), writing no successor; keys without a current version are skipped.

        Returns:
            Number of versions closed.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest transaction time the
                store has recorded. Nothing is written then.
        """
        check_time(tx_us, field="tx")
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        with self._write() as conn:
            rows = self._read_batch(
                "SELECT edge_id, src, dst, relation, tx_from FROM edges WHERE tx_to IS NULL "
                "AND src IN (SELECT value FROM json_each(?))",
                (k[0] for k in wanted),
            )
            keyset = set(wanted)
            closing = [
                (tx_us, edge_id)
                for edge_id, src, dst, relation, _tx_from in rows
                if (src, dst, relation) in keyset
            ]
            if closing:
                self._record_tx(conn, tx_us, field="tx")
                conn.executemany("UPDATE edges SET tx_to = ? WHERE edge_id = ?", closing)
                self._changed()
        return len(closing)

    def count_edges(self, *, current_only: bool = True) -> int:
        """Number of edge versions (only current ones by default)."""
        sql = "SELECT count(*) FROM edges" + (" WHERE tx_to IS NULL" if current_only else "")
        return int(self._conn().execute(sql).fetchone()[0])
