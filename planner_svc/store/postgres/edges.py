"""Bitemporal weighted edges in the PostgreSQL store (see :mod:`planner_svc.store.edges`)."""

from __future__ import annotations

from collections.abc import Iterable

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import Direction
from planner_svc.store.edges import EDGE_COLUMNS, edge_from_row
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.db import live
from planner_svc.store.records import Edge, EdgeWrite
from planner_svc.store.rules import edge_changes, edge_sources
from planner_svc.store.text import check_time


class PgEdges(PgClock):
    """Bitemporal edge versions (a part of :class:`planner_svc.store.postgres.PostgresStore`).
    """

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
        """Write one edge version; returns the tx of the edge's current version."""
        write = EdgeWrite(src=src, dst=dst, relation=relation, weight=weight,
                          valid_from_us=valid_from_us, valid_to_us=valid_to_us)
        self.put_edges([write], tx_us=tx_us)
        row = self._row("SELECT tx_from FROM edges WHERE src = %s AND dst = %s "
                        "AND relation = %s AND tx_to IS NULL", (src, dst, relation))
        assert row is not None
        return int(row[0])

    def put_edges(
        self,
        writes: Iterable[EdgeWrite],
        *,
        tx_us: int,
        replace_out_of: Iterable[str] = (),
    ) -> int:
        """See :meth:`planner_svc.store.edges.Edges.put_edges`.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest recorded time.
        """
        check_time(tx_us, field="tx")
        listed, replace, srcs = edge_sources(writes, replace_out_of)
        if not srcs:
            return 0
        with self._write(savepoint=False):
            current: dict[tuple[str, str, str], tuple[int, Edge]] = {}
            for row in self._rows(f"SELECT edge_id, {EDGE_COLUMNS} FROM edges "
                                  "WHERE tx_to IS NULL AND src = ANY(%s)", (srcs,)):
                edge = edge_from_row(row[1:])
                current[edge.key] = (int(row[0]), edge)
            changes, closing = edge_changes(listed, current, replace)
            if not (closing or changes):
                return 0
            self._record_tx(tx_us, field="tx")
            if closing:
                self._run("UPDATE edges SET tx_to = %s WHERE edge_id = ANY(%s::bigint[])",
                          (tx_us, closing))
            if changes:
                first = self._next_id("edges", "edge_id", len(changes))
                self._run(
                    "INSERT INTO edges (edge_id, src, dst, relation, weight, valid_from, "
                    "valid_to, tx_from, tx_to) SELECT *, %s::bigint, NULL::bigint FROM unnest("
                    "%s::bigint[], "
                    "%s::text[], %s::text[], %s::text[], %s::float8[], %s::bigint[], "
                    "%s::bigint[])",
                    (tx_us, list(range(first, first + len(changes))),
                     [w.src for w in changes], [w.dst for w in changes],
                     [w.relation for w in changes], [w.weight for w in changes],
                     [w.valid_from_us for w in changes], [w.valid_to_us for w in changes]))
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
        """Edges live at (``valid_us``, ``tx_us``) leaving, entering or touching ``node_ids``,
        sorted by (src, dst, relation), each once.

        Raises:
            InvalidRequest: (``direction``) not one of out, in, both.
        """
        if direction not in ("out", "in", "both"):
            raise InvalidRequest("direction", f"{direction!r} is not one of out, in, both")
        ids = sorted(set(node_ids))
        if not ids:
            return []
        found: dict[tuple[str, str, str], Edge] = {}
        columns = {"out": ("src",), "in": ("dst",), "both": ("src", "dst")}[direction]
        for column in columns:
            for row in self._rows(f"SELECT {EDGE_COLUMNS} FROM edges WHERE {column} = ANY(%s) "
                                  f"AND {live()}", (ids, valid_us, valid_us, tx_us, tx_us)):
                edge = edge_from_row(row)
                found[edge.key] = edge
        return [found[k] for k in sorted(found)]

    def current_out_edges(self, src_ids: Iterable[str]) -> list[Edge]:
        """Current edge versions leaving ``src_ids``, sorted by (src, dst, relation)."""
        ids = sorted(set(src_ids))
        if not ids:
            return []
        rows = self._rows(f"SELECT {EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL "
                          "AND src = ANY(%s) ORDER BY src, dst, relation", (ids,))
        return [edge_from_row(row) for row in rows]

    def retire_edges(self, keys: Iterable[tuple[str, str, str]], *, tx_us: int) -> int:
        """End the current version of each ``(src, dst, relation)`` at ``tx_us``; returns the
        versions closed.

        Raises:
            InvalidRequest: (``tx``) ``tx_us`` is earlier than the latest recorded time.
        """
        check_time(tx_us, field="tx")
        wanted = sorted(set(keys))
        if not wanted:
            return 0
        with self._write(savepoint=False):
            rows = self._rows(
                "SELECT edge_id, src, dst, relation FROM edges WHERE tx_to IS NULL "
                "AND src = ANY(%s)", (sorted({k[0] for k in wanted}),))
            keyset = set(wanted)
            closing = [int(r[0]) for r in rows if (r[1], r[2], r[3]) in keyset]
            if closing:
                self._record_tx(tx_us, field="tx")
                self._run("UPDATE edges SET tx_to = %s WHERE edge_id = ANY(%s::bigint[])",
                          (tx_us, closing))
                self._changed()
        return len(closing)

    def count_edges(self, *, current_only: bool = True) -> int:
        """Number of edge versions (only current ones by default)."""
        row = self._row("SELECT count(*) FROM edges"
                        + (" WHERE tx_to IS NULL" if current_only else ""))
        assert row is not None
        return int(row[0])
