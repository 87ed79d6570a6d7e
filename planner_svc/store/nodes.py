"""Bitemporal nodes: versions with valid and transaction intervals, labels, properties and
provenance spans.

A node version is live at ``(valid_us, tx_us)`` when ``valid_from <= valid_us < valid_to`` and
``tx_from <= tx_us < tx_to`` (microseconds; an absent upper bound is open). At most one version
per node has an open transaction interval: the current one. A write that differs from it closes
it at the write's time and adds a new current version; an identical write is a no-op.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import SpanRef
from planner_svc.store.clock import TransactionClock
from planner_svc.store.db import PAGE_ROWS, live, to_json
from planner_svc.store.records import NodeVersion, NodeWrite, NodeWriteResult
from planner_svc.store.rules import provenance_json, same_node
from planner_svc.store.text import check_time

NODE_COLUMNS = (
    "version_id, node_id, labels, properties, text, confidence, provenance, "
    "valid_from, valid_to, tx_from, tx_to"
)
"""Columns of a node row, in the order :func:`node_from_row` reads them."""


def node_from_row(row: Sequence[Any]) -> NodeVersion:
    """The :class:`NodeVersion` of one row selected with :data:`NODE_COLUMNS`."""
    return NodeVersion(
        version_id=row[0],
        node_id=row[1],
        labels=tuple(json.loads(row[2])),
        properties=json.loads(row[3]),
        text=row[4],
        confidence=row[5],
        provenance=tuple(SpanRef(s, t, a, b) for s, t, a, b in json.loads(row[6])),
        valid_from_us=row[7],
        valid_to_us=row[8],
        tx_from_us=row[9],
        tx_to_us=row[10],
    )


class Nodes(TransactionClock):
    """Bitemporal node versions (a part of :class:`planner_svc.store.Store`)."""

    def put_node(self, write: NodeWrite, *, tx_us: int) -> int:
        """Write one node version; see :meth:`write_nodes`.

        Returns:
            The transaction time (microseconds) of the node's current version: ``tx_us``, or
            the existing version's when the write was identical (a no-op).
        """
        return self.write_nodes([write], tx_us=tx_us)[0].tx_us

    def write_nodes(self, writes: Sequence[NodeWrite], *, tx_us: int) -> list[NodeWriteResult]:
        """Write node versions at transaction time ``tx_us`` (microseconds), atomically.

        Bitemporal supersession: when a node has a current version (open tx interval) that
        differs from the write, its ``tx_to`` is set to ``tx_us`` and a new version
        ``[tx_us, open)`` is stored; an identical write is a no-op. The text is indexed for
        full-text search.

        Returns:
            One result per write, in input order.

        Raises:
            InvalidRequest: (``node_id``) a node id repeats within ``writes``; (``tx``)
                ``tx_us`` is earlier than the latest transaction time the store has recorded.
                Nothing is written then.
        """
        check_time(tx_us, field="tx")
        ids = [w.node_id for w in writes]
        if len(set(ids)) != len(ids):
            raise InvalidRequest("node_id", "a node id occurs more than once in one write")
        if not writes:
            return []
        with self._write() as conn:
            current = self.current_nodes(ids)
            if any(
                w.node_id not in current or not same_node(w, current[w.node_id]) for w in writes
            ):
                self._record_tx(conn, tx_us, field="tx")
            results: list[NodeWriteResult] = []
            for w in writes:
                cur = current.get(w.node_id)
                if cur is not None and same_node(w, cur):
                    results.append(
                        NodeWriteResult(
                            node_id=w.node_id,
                            version_id=cur.version_id,
                            tx_us=cur.tx_from_us,
                            created=False,
                        )
                    )
                    continue
                if cur is not None:
                    conn.execute(
                        "UPDATE nodes SET tx_to = ? WHERE version_id = ?", (tx_us, cur.version_id)
                    )
                version_id = self._insert_node(conn, w, tx_us)
                results.append(
                    NodeWriteResult(
                        node_id=w.node_id, version_id=version_id, tx_us=tx_us, created=True
                    )
                )
            if any(r.created for r in results):
                self._changed()
        return results

    def _insert_node(self, conn: sqlite3.Connection, w: NodeWrite, tx_us: int) -> int:
        cur = conn.execute(
            "INSERT INTO nodes (node_id, labels, properties, text, confidence, provenance, "
            "valid_from, valid_to, tx_from, tx_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                w.node_id,
                to_json(list(w.labels)),
                to_json(dict(w.properties)),
                w.text,
                w.confidence,
                provenance_json(w.provenance),
                w.valid_from_us,
                w.valid_to_us,
                tx_us,
            ),
        )
        version_id = cur.lastrowid
        assert version_id is not None
        conn.executemany(
            "INSERT INTO node_labels (label, version_id) VALUES (?, ?)",
            [(label, version_id) for label in w.labels],
        )
        conn.executemany(
            "INSERT INTO node_props (key, value, version_id) VALUES (?, ?, ?)",
            [(k, v, version_id) for k, v in w.properties.items()],
        )
        if w.text:
            conn.execute("INSERT INTO nodes_fts (rowid, text) VALUES (?, ?)", (version_id, w.text))
        return version_id

    def retire_nodes(self, node_ids: Iterable[str], *, tx_us: int) -> int:
        """End the current version of each node at ``tx_us`` (microseconds), writing no
        successor; nodes without a current version are skipped.

        Returns:
            Number of versions closed.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest transaction time the
                store has recorded.
        """
        check_time(tx_us, field="tx")
        ids = sorted(set(node_ids))
        if not ids:
            return 0
        with self._write() as conn:
            cur = conn.execute(
                "UPDATE nodes SET tx_to = ? WHERE tx_to IS NULL "
                "AND node_id IN (SELECT value FROM json_each(?))",
                (tx_us, to_json(ids)),
            )
            if cur.rowcount:
                self._record_tx(conn, tx_us, field="tx")  # raising rolls the update back
                self._changed()
            return int(cur.rowcount)

    def current_node_ids(self, prefix: str) -> list[str]:
        """Ids of nodes that have a current version (open tx interval) and start with
        ``prefix`` (non-empty), sorted."""
        if not prefix:
            raise InvalidRequest("prefix", "must not be empty")
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._conn().execute(
            "SELECT node_id FROM nodes WHERE node_id >= ? AND node_id < ? AND tx_to IS NULL "
            "ORDER BY node_id",
            (prefix, upper),
        )
        return [r[0] for r in rows]

    def current_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeVersion]:
        """Current versions (open tx interval, any valid interval) of the given nodes."""
        rows = self._read_batch(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL "
            "AND node_id IN (SELECT value FROM json_each(?))",
            node_ids,
        )
        return {row[1]: node_from_row(row) for row in rows}

    def get_as_of(self, node_id: str, valid_us: int, tx_us: int) -> NodeVersion | None:
        """The node version whose valid interval contains ``valid_us`` and whose tx interval
        contains ``tx_us`` (both microseconds, half-open); None when there is none."""
        return self.get_many_as_of([node_id], valid_us, tx_us).get(node_id)

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> dict[str, NodeVersion]:
        """Batched :meth:`get_as_of` in one SQL query: node_id -> version, for the nodes that
        have a version live at (``valid_us``, ``tx_us``)."""
        rows = self._read_batch(
            f"SELECT {NODE_COLUMNS} FROM nodes "
            f"WHERE node_id IN (SELECT value FROM json_each(?)) AND {live('')}",
            node_ids, valid_us, valid_us, tx_us, tx_us,
        )
        return {row[1]: node_from_row(row) for row in rows}

    def get_versions(self, version_ids: Iterable[int]) -> dict[int, NodeVersion]:
        """Node versions by ``version_id`` regardless of liveness; unknown ids are absent."""
        rows = self._read_batch(
            f"SELECT {NODE_COLUMNS} FROM nodes "
            "WHERE version_id IN (SELECT value FROM json_each(?))",
            version_ids,
        )
        return {row[0]: node_from_row(row) for row in rows}

    def node_history(self, node_id: str) -> list[NodeVersion]:
        """Every stored version of a node, ordered by (tx_from, version_id)."""
        rows = self._conn().execute(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE node_id = ? ORDER BY tx_from, version_id",
            (node_id,),
        )
        return [node_from_row(row) for row in rows]

    def iter_current_nodes(
        self, *, label: str | None = None, after_version_id: int = 0
    ) -> Iterator[NodeVersion]:
        """Every current node version (open tx interval), optionally only those carrying
        ``label``, in version_id order, read in pages (no long-lived read transaction)."""
        conn = self._conn()
        after = after_version_id
        while True:
            if label is None:
                rows = conn.execute(
                    f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > ? AND tx_to IS NULL "
                    "ORDER BY version_id LIMIT ?",
                    (after, PAGE_ROWS),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > ? AND tx_to IS NULL "
                    "AND version_id IN (SELECT version_id FROM node_labels WHERE label = ? "
                    "AND version_id > ?) ORDER BY version_id LIMIT ?",
                    (after, label, after, PAGE_ROWS),
                ).fetchall()
            if not rows:
                return
            yield from (node_from_row(row) for row in rows)
            after = rows[-1][0]

    def max_version_id(self) -> int:
        """Largest node version_id stored, 0 when there is none."""
        row = self._conn().execute("SELECT max(version_id) FROM nodes").fetchone()
        return int(row[0] or 0)

    def count_nodes(self, *, current_only: bool = True) -> int:
        """Number of node versions (only current ones by default)."""
        sql = "SELECT count(*) FROM nodes" + (" WHERE tx_to IS NULL" if current_only else "")
        return int(self._conn().execute(sql).fetchone()[0])
