"""Bitemporal weighted edges in the PostgreSQL store (see :mod:`planner_svc.store.edges`)."""

from __future__ import annotations

from collections.abc import Iterable

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import Direction
from planner_svc.store.edges import EDGE_COLUMNS, edge_from_row
from planner_svc.store.postgres.db import live
from planner_svc.store.postgres.nodes import PgNodes
from planner_svc.store.records import Edge, EdgeWrite
from planner_svc.store.rules import edge_changes, edge_sources
from planner_svc.store.text import check_time


class PgEdges(PgNodes):
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
            current = self._current_edges_in_write(srcs)
            changes, closing = edge_changes(listed, current, replace)
            if not (closing or changes):
                return 0
            self._record_tx(tx_us, field="tx")
            first = self._next_id("edges", "edge_id", len(changes)) if changes else 0
            added = [(first + i, edge_from_row((w.src, w.dst, w.relation, w.weight,
                                                w.valid_from_us, w.valid_to_us, tx_us, None)))
                     for i, w in enumerate(changes)]
            self._close_and_add(current, closing, added, tx_us)
        return len(changes)

    def _current_edges_in_write(
        self, srcs: Iterable[str]
    ) -> dict[tuple[str, str, str], tuple[int, Edge]]:
        """Inside a write: ``(src, dst, relation)`` -> (edge id, version) of every current edge
        leaving ``srcs``, from the known state, reading the sources not known yet at once."""
        known = self._tx().known
        wanted = sorted(set(srcs))
        unknown = [s for s in wanted if not known.knows_edges_of(s)]
        if unknown:
            self.load_nodes(unknown)
        out: dict[tuple[str, str, str], tuple[int, Edge]] = {}
        for src in wanted:
            out.update(known.edges.get(src, {}))
        return out

    def _close_and_add(
        self,
        current: dict[tuple[str, str, str], tuple[int, Edge]],
        closing: list[int],
        added: list[tuple[int, Edge]],
        tx_us: int,
    ) -> None:
        """Write closings (edge ids of ``current``) and new versions, keeping the known state."""
        tx = self._tx()
        by_id = {edge_id: edge for edge_id, edge in current.values()}
        leaving = tx.known.edges
        touched: dict[str, dict[tuple[str, str, str], tuple[int, Edge]]] = {}

        def of(src: str) -> dict[tuple[str, str, str], tuple[int, Edge]]:
            if src not in touched:
                touched[src] = dict(leaving.get(src, {}))
            return touched[src]

        for edge_id in closing:
            tx.pending.edge_closings.append((edge_id, tx_us))
            edge = by_id[edge_id]
            of(edge.src).pop(edge.key, None)
        for edge_id, edge in added:
            tx.pending.edges.append((edge_id, edge.src, edge.dst, edge.relation, edge.weight,
                                     edge.valid_from_us, edge.valid_to_us, tx_us))
            of(edge.src)[edge.key] = (edge_id, edge)
        leaving.update(touched)
        self._changed()

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
        if self._local_depth() > 0:
            current = self._current_edges_in_write(ids)
            return [current[k][1] for k in sorted(current)]
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
            current = self._current_edges_in_write({k[0] for k in wanted})
            closing = [current[k][0] for k in wanted if k in current]
            if closing:
                self._record_tx(tx_us, field="tx")
                self._close_and_add(current, closing, [], tx_us)
        return len(closing)

    def count_edges(self, *, current_only: bool = True) -> int:
        """Number of edge versions (only current ones by default)."""
        row = self._row("SELECT count(*) FROM edges"
                        + (" WHERE tx_to IS NULL" if current_only else ""))
        assert row is not None
        return int(row[0])
