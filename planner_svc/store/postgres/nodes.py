"""Bitemporal nodes in the PostgreSQL store (see :mod:`planner_svc.store.nodes`: same methods,
rules and results), and the phrase lookup of late mentions."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.store.nodes import node_from_row
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.db import PAGE_ROWS, live
from planner_svc.store.records import NodeVersion, NodeWrite, NodeWriteResult
from planner_svc.store.rules import provenance_json, same_node, to_json
from planner_svc.store.text import check_time

NODE_COLUMNS = (
    "version_id, node_id, labels, properties, text, confidence, provenance, "
    "valid_from, valid_to, tx_from, tx_to"
)
"""Columns of a node row, in the order :func:`pg_node` reads them."""

_WORD = re.compile(r"\w+")

_INSERT_NODES = (
    "INSERT INTO nodes (version_id, node_id, labels, label_set, properties, text, confidence, "
    "provenance, valid_from, valid_to, tx_from, tx_to) "
    "SELECT v, n, l, ARRAY(SELECT jsonb_array_elements_text(l::jsonb)), p, t, c, pr, vf, vt, "
    "tf, NULL::bigint FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::bytea[], "
    "%s::float8[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[]) "
    "AS u(v, n, l, p, t, c, pr, vf, vt, tf)"
)
"""Inserts many node versions in one statement (one array per column; labels as JSON)."""


def pg_node(row: Sequence[Any]) -> NodeVersion:
    """The :class:`NodeVersion` of one row selected with :data:`NODE_COLUMNS` (the text is
    stored as UTF-8 ``bytea``)."""
    return node_from_row((*row[:4], bytes(row[4]).decode("utf-8"), *row[5:]))


class PgNodes(PgClock):
    """Bitemporal node versions (a part of :class:`planner_svc.store.postgres.PostgresStore`).
    """

    def put_node(self, write: NodeWrite, *, tx_us: int) -> int:
        """Write one node version; returns the tx of the node's current version."""
        return self.write_nodes([write], tx_us=tx_us)[0].tx_us

    def write_nodes(self, writes: Sequence[NodeWrite], *, tx_us: int) -> list[NodeWriteResult]:
        """See :meth:`planner_svc.store.nodes.Nodes.write_nodes`.

        Raises:
            InvalidRequest: (``node_id``) a node id repeats; (``tx``) ``tx_us`` is earlier than
                the latest recorded transaction time. Nothing is written then.
        """
        check_time(tx_us, field="tx")
        ids = [w.node_id for w in writes]
        if len(set(ids)) != len(ids):
            raise InvalidRequest("node_id", "a node id occurs more than once in one write")
        if not writes:
            return []
        with self._write(savepoint=False):
            current = self.current_nodes(ids)
            fresh = [w for w in writes
                     if w.node_id not in current or not same_node(w, current[w.node_id])]
            if fresh:
                self._record_tx(tx_us, field="tx")
            next_id = self._next_id("nodes", "version_id", len(fresh)) if fresh else 0
            results: list[NodeWriteResult] = []
            closing: list[int] = []
            rows: list[tuple[object, ...]] = []
            for w in writes:
                cur = current.get(w.node_id)
                if cur is not None and same_node(w, cur):
                    results.append(NodeWriteResult(node_id=w.node_id, version_id=cur.version_id,
                                                   tx_us=cur.tx_from_us, created=False))
                    continue
                if cur is not None:
                    closing.append(cur.version_id)
                rows.append((next_id, w.node_id, to_json(list(w.labels)),
                              to_json(dict(w.properties)), w.text.encode("utf-8"), w.confidence,
                              provenance_json(w.provenance), w.valid_from_us, w.valid_to_us,
                              tx_us))
                results.append(NodeWriteResult(node_id=w.node_id, version_id=next_id,
                                               tx_us=tx_us, created=True))
                next_id += 1
            if closing:
                self._run("UPDATE nodes SET tx_to = %s WHERE version_id = ANY(%s::bigint[])",
                          (tx_us, closing))
            if rows:
                self._run(_INSERT_NODES, [[row[i] for row in rows] for i in range(10)])
                self._tx().created_nodes.update(r.version_id for r in results if r.created)
                self._changed()
        return results

    def retire_nodes(self, node_ids: Iterable[str], *, tx_us: int) -> int:
        """End the current version of each node at ``tx_us``; returns the versions closed.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest recorded time.
        """
        check_time(tx_us, field="tx")
        ids = sorted(set(node_ids))
        if not ids:
            return 0
        with self._write():
            closed = self._run("UPDATE nodes SET tx_to = %s WHERE tx_to IS NULL "
                               "AND node_id = ANY(%s)", (tx_us, ids))
            if closed:
                self._record_tx(tx_us, field="tx")  # raising rolls the update back
                self._changed()
            return closed

    def current_node_ids(self, prefix: str) -> list[str]:
        """Ids of nodes with a current version that start with ``prefix`` (non-empty), sorted.

        Raises:
            InvalidRequest: (``prefix``) empty.
        """
        if not prefix:
            raise InvalidRequest("prefix", "must not be empty")
        upper = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        rows = self._rows(
            "SELECT node_id FROM nodes WHERE node_id >= %s AND node_id < %s AND tx_to IS NULL "
            "ORDER BY node_id", (prefix, upper))
        return [r[0] for r in rows]

    def current_nodes(self, node_ids: Iterable[str]) -> dict[str, NodeVersion]:
        """Current versions (open tx interval, any valid interval) of the given nodes."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL "
                          "AND node_id = ANY(%s)", (ids,))
        return {row[1]: pg_node(row) for row in rows}

    def get_as_of(self, node_id: str, valid_us: int, tx_us: int) -> NodeVersion | None:
        """The node version live at (``valid_us``, ``tx_us``); None when there is none."""
        return self.get_many_as_of([node_id], valid_us, tx_us).get(node_id)

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> dict[str, NodeVersion]:
        """Batched :meth:`get_as_of` in one query."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE node_id = ANY(%s) "
                          f"AND {live()}", (ids, valid_us, valid_us, tx_us, tx_us))
        return {row[1]: pg_node(row) for row in rows}

    def get_versions(self, version_ids: Iterable[int]) -> dict[int, NodeVersion]:
        """Node versions by ``version_id`` regardless of liveness; unknown ids are absent."""
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes "
                          "WHERE version_id = ANY(%s::bigint[])", (ids,))
        return {int(row[0]): pg_node(row) for row in rows}

    def node_history(self, node_id: str) -> list[NodeVersion]:
        """Every stored version of a node, ordered by (tx_from, version_id)."""
        rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE node_id = %s "
                          "ORDER BY tx_from, version_id", (node_id,))
        return [pg_node(row) for row in rows]

    def iter_current_nodes(
        self, *, label: str | None = None, after_version_id: int = 0
    ) -> Iterator[NodeVersion]:
        """Every current node version (carrying ``label`` when given), in version_id order,
        read in pages."""
        after = after_version_id
        while True:
            if label is None:
                rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > %s "
                                  "AND tx_to IS NULL ORDER BY version_id LIMIT %s",
                                  (after, PAGE_ROWS))
            else:
                rows = self._rows(f"SELECT {NODE_COLUMNS} FROM nodes WHERE version_id > %s "
                                  "AND tx_to IS NULL AND %s = ANY(label_set) "
                                  "ORDER BY version_id LIMIT %s", (after, label, PAGE_ROWS))
            if not rows:
                return
            yield from (pg_node(row) for row in rows)
            after = int(rows[-1][0])

    def current_nodes_matching_phrase(
        self, phrase: str, *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """Current node versions carrying ``label`` whose text holds every word of ``phrase``
        (``\\w+`` runs, NFC, as written: case-sensitive). A superset of the texts that name
        the phrase's words in sequence (callers verify); ordered by version_id.
        ``commonness`` is not used here (one statement tests every word)."""
        words = sorted(set(_WORD.findall(unicodedata.normalize("NFC", phrase))))
        if not words:
            return []
        held = " AND ".join("position(%s::bytea IN text) > 0" for _ in words)
        rows = self._rows(
            f"SELECT {NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL AND %s = ANY(label_set) "
            f"AND {held} ORDER BY version_id",
            (label, *(w.encode("utf-8") for w in words)))
        return [pg_node(row) for row in rows]

    def max_version_id(self) -> int:
        """Largest node version_id stored, 0 when there is none (read once per snapshot)."""
        row = self._snapshot_constant("SELECT coalesce(max(version_id), 0) FROM nodes")
        assert row is not None
        return int(row[0])

    def count_nodes(self, *, current_only: bool = True) -> int:
        """Number of node versions (only current ones by default)."""
        row = self._row("SELECT count(*) FROM nodes"
                        + (" WHERE tx_to IS NULL" if current_only else ""))
        assert row is not None
        return int(row[0])
