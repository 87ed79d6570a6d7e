"""The rows a PostgreSQL write transaction has written but not yet sent.

A write transaction of :class:`planner_svc.store.postgres.PostgresStore` holds its inserts and
its closings back (:class:`PendingWrites`) until it reads the database again or commits, then
sends them as one statement per table (arrays of column values through ``unnest``), whatever
the number of documents: an ingest chunk costs a few round trips, not a dozen per document
(docs/scaling.md). The rows sent, their ids and their times are those the statements one by
one would have written.

Order of a send: source versions, sources, spans, node closings, node versions, vectors, edge
closings, edge versions. Closings go before insertions because a node (an edge key) has at
most one open version (the ``nodes_open`` and ``edges_open`` unique indexes); a closing of a
version inserted by the same send is folded into that row instead. Upserts (sources, spans,
vectors) keep the last row of a key, as the statements one by one would.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field, fields
from typing import Any

SourceVersionRow = tuple[int, str, int, bytes, bytes, bytes]
"""(id, source_id, tx, title, media_type, text): title, media type and text as UTF-8."""
SourceRow = tuple[str, bytes, bytes, int]
"""(source_id, title, media_type, latest_tx)."""
SpanRow = tuple[str, int, int, int, str, str | None]
"""(source_id, tx, byte_start, byte_end, kind, location JSON or None)."""
NodeRow = tuple[int, str, str, str, bytes, float, str, int, int | None, int]
"""(version_id, node_id, labels JSON, properties JSON, text UTF-8, confidence, provenance JSON,
valid_from, valid_to, tx_from); the version is open when written."""
Closing = tuple[int, int]
"""(version_id or edge_id, tx_to)."""
VectorRow = tuple[int, bytes]
"""(version_id, float32 little-endian bytes)."""
EdgeRow = tuple[int, str, str, str, float, int, int | None, int]
"""(edge_id, src, dst, relation, weight, valid_from, valid_to, tx_from); open when written."""

_INSERT_SOURCE_VERSIONS = (
    "INSERT INTO source_versions (id, source_id, tx, title, media_type, text) "
    "SELECT * FROM unnest(%s::bigint[], %s::text[], %s::bigint[], %s::bytea[], %s::bytea[], "
    "%s::bytea[])"
)
_UPSERT_SOURCES = (
    "INSERT INTO sources (source_id, title, media_type, latest_tx) "
    "SELECT * FROM unnest(%s::text[], %s::bytea[], %s::bytea[], %s::bigint[]) "
    "ON CONFLICT (source_id) DO UPDATE SET title = excluded.title, "
    "media_type = excluded.media_type, latest_tx = excluded.latest_tx"
)
_UPSERT_SPANS = (
    "INSERT INTO spans (source_id, tx, byte_start, byte_end, kind, location) "
    "SELECT * FROM unnest(%s::text[], %s::bigint[], %s::bigint[], %s::bigint[], %s::text[], "
    "%s::text[]) ON CONFLICT (source_id, tx, byte_start, byte_end) "
    "DO UPDATE SET kind = excluded.kind, location = excluded.location"
)
_CLOSE_NODES = (
    "UPDATE nodes SET tx_to = u.t FROM unnest(%s::bigint[], %s::bigint[]) AS u(v, t) "
    "WHERE nodes.version_id = u.v"
)
_INSERT_NODES = (
    "INSERT INTO nodes (version_id, node_id, labels, label_set, properties, text, confidence, "
    "provenance, valid_from, valid_to, tx_from, tx_to) "
    "SELECT v, n, l, ARRAY(SELECT jsonb_array_elements_text(l::jsonb)), p, t, c, pr, vf, vt, "
    "tf, tt FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], %s::bytea[], "
    "%s::float8[], %s::text[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[]) "
    "AS u(v, n, l, p, t, c, pr, vf, vt, tf, tt)"
)
_UPSERT_VECTORS = (
    "INSERT INTO vectors (version_id, vector) SELECT * FROM unnest(%s::bigint[], %s::bytea[]) "
    "ON CONFLICT (version_id) DO UPDATE SET vector = excluded.vector"
)
_CLOSE_EDGES = (
    "UPDATE edges SET tx_to = u.t FROM unnest(%s::bigint[], %s::bigint[]) AS u(e, t) "
    "WHERE edges.edge_id = u.e"
)
_INSERT_EDGES = (
    "INSERT INTO edges (edge_id, src, dst, relation, weight, valid_from, valid_to, tx_from, "
    "tx_to) SELECT * FROM unnest(%s::bigint[], %s::text[], %s::text[], %s::text[], "
    "%s::float8[], %s::bigint[], %s::bigint[], %s::bigint[], %s::bigint[])"
)

Statement = tuple[str, tuple[list[Any], ...]]
"""SQL and its parameters: one array per column."""


def _columns(rows: Sequence[Sequence[Any]], width: int) -> tuple[list[Any], ...]:
    return tuple([row[i] for row in rows] for i in range(width))


def _last_of_key(rows: Sequence[Sequence[Any]], width: int) -> list[Sequence[Any]]:
    """The rows keeping the last of each key (the first ``width`` columns), in first-seen
    order."""
    latest: dict[tuple[Any, ...], Sequence[Any]] = {}
    for row in rows:
        latest[tuple(row[:width])] = row
    return list(latest.values())


def _fold_closings(
    inserted: Sequence[Sequence[Any]], closings: Sequence[Closing]
) -> tuple[list[tuple[Any, ...]], list[Closing]]:
    """The inserted rows with the closing time of those this send also closes appended, and
    the closings of rows already in the database."""
    where = {row[0]: i for i, row in enumerate(inserted)}
    closed_at: dict[int, int] = {}
    earlier: list[Closing] = []
    for row_id, tx_to in closings:
        if row_id in where:
            closed_at[row_id] = tx_to
        else:
            earlier.append((row_id, tx_to))
    return [(*row, closed_at.get(row[0])) for row in inserted], earlier


@dataclass(slots=True)
class PendingWrites:
    """Rows written by a transaction and not yet sent, per table, in write order. The lists
    only grow until they are sent, so the writes since a savepoint are the tails past the
    lengths it saw (:meth:`since`)."""

    source_versions: list[SourceVersionRow] = field(default_factory=list)
    sources: list[SourceRow] = field(default_factory=list)
    spans: list[SpanRow] = field(default_factory=list)
    node_closings: list[Closing] = field(default_factory=list)
    nodes: list[NodeRow] = field(default_factory=list)
    vectors: list[VectorRow] = field(default_factory=list)
    edge_closings: list[Closing] = field(default_factory=list)
    edges: list[EdgeRow] = field(default_factory=list)

    def _lists(self) -> Iterator[list[Any]]:
        for f in fields(self):
            yield getattr(self, f.name)

    def __bool__(self) -> bool:
        return any(self._lists())

    def copy(self) -> PendingWrites:
        """An independent copy (the rows themselves are immutable tuples)."""
        return PendingWrites(*(list(rows) for rows in self._lists()))

    def since(self, earlier: PendingWrites) -> PendingWrites:
        """The rows written after ``earlier`` was copied from this one's past."""
        return PendingWrites(*(rows[len(before):] for rows, before
                               in zip(self._lists(), earlier._lists(), strict=True)))

    def statements(self) -> list[Statement]:
        """The statements that write these rows, one per table that has any, in send order."""
        out: list[Statement] = []
        if self.source_versions:
            out.append((_INSERT_SOURCE_VERSIONS, _columns(self.source_versions, 6)))
        if self.sources:
            out.append((_UPSERT_SOURCES, _columns(_last_of_key(self.sources, 1), 4)))
        if self.spans:
            out.append((_UPSERT_SPANS, _columns(_last_of_key(self.spans, 4), 6)))
        nodes, node_closings = _fold_closings(self.nodes, self.node_closings)
        if node_closings:
            out.append((_CLOSE_NODES, _columns(node_closings, 2)))
        if nodes:
            out.append((_INSERT_NODES, _columns(nodes, 11)))
        if self.vectors:
            out.append((_UPSERT_VECTORS, _columns(_last_of_key(self.vectors, 1), 2)))
        edges, edge_closings = _fold_closings(self.edges, self.edge_closings)
        if edge_closings:
            out.append((_CLOSE_EDGES, _columns(edge_closings, 2)))
        if edges:
            out.append((_INSERT_EDGES, _columns(edges, 9)))
        return out
