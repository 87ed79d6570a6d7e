"""The span ledger in the PostgreSQL store (see :mod:`planner_svc.store.ledger`)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from planner_svc.core.model import CoordKey, Location
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.records import LedgerRow, LedgerSpan, decode_location
from planner_svc.store.rules import checked_spans


class PgSpanLedger(PgClock):
    """The span ledger (a part of :class:`planner_svc.store.postgres.PostgresStore`)."""

    def add_spans(self, source_id: str, tx_us: int, spans: Iterable[LedgerSpan]) -> int:
        """See :meth:`planner_svc.store.ledger.SpanLedger.add_spans`.

        Raises:
            InvalidRequest: unknown version, or a span out of range, off a boundary, of an
                unknown kind or with a location that is not a Location. Nothing is written then.
        """
        with self._write(savepoint=False):
            data = self._tx().written_texts.get((source_id, tx_us))
            if data is None:
                found = self._row(
                    "SELECT text FROM source_versions WHERE source_id = %s AND tx = %s",
                    (source_id, tx_us))
                data = None if found is None else bytes(found[0])
            rows = checked_spans(source_id, tx_us, data, spans)
            # re-adding a span replaces its kind and location
            latest = {(r[2], r[3]): (r[4], r[5]) for r in rows}
            if latest:
                self._pending().spans.extend(
                    (source_id, tx_us, a, b, kind, location)
                    for (a, b), (kind, location) in latest.items())
                self._changed()
        return len(rows)

    def span_kind(self, source_id: str, tx_us: int, start: int, end: int) -> str | None:
        """Ledger kind of the exact span ``[start, end)`` (UTF-8 bytes); None without a row."""
        key = (source_id, tx_us, start, end)
        return self.span_kinds([key]).get(key)

    def span_kinds(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        """Batched :meth:`span_kind`; keys without a ledger row are absent. One query."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self._rows(
            "SELECT s.source_id, s.tx, s.byte_start, s.byte_end, s.kind FROM "
            "unnest(%s::text[], %s::bigint[], %s::bigint[], %s::bigint[]) AS k(sid, tx, a, b) "
            "JOIN spans AS s ON s.source_id = k.sid AND s.tx = k.tx "
            "AND s.byte_start = k.a AND s.byte_end = k.b",
            tuple([k[i] for k in wanted] for i in range(4)),
        )
        return {(r[0], int(r[1]), int(r[2]), int(r[3])): r[4] for r in rows}

    def ledger_rows(self, keys: Iterable[CoordKey]) -> dict[CoordKey, LedgerRow]:
        """See :meth:`planner_svc.store.ledger.SpanLedger.ledger_rows`: kind and location of
        each exact span, in one query; keys without a ledger row are absent."""
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self._rows(
            "SELECT s.source_id, s.tx, s.byte_start, s.byte_end, s.kind, s.location FROM "
            "unnest(%s::text[], %s::bigint[], %s::bigint[], %s::bigint[]) AS k(sid, tx, a, b) "
            "JOIN spans AS s ON s.source_id = k.sid AND s.tx = k.tx "
            "AND s.byte_start = k.a AND s.byte_end = k.b",
            tuple([k[i] for k in wanted] for i in range(4)),
        )
        decoded: dict[str | None, Location] = {}  # rows of one document share few locations
        out: dict[CoordKey, LedgerRow] = {}
        for r in rows:
            location = decoded.get(r[5])
            if location is None:
                location = decoded[r[5]] = decode_location(r[5])
            out[(r[0], int(r[1]), int(r[2]), int(r[3]))] = LedgerRow(r[4], location)
        return out

    def locations_of_version(
        self, source_id: str, tx_us: int
    ) -> Sequence[tuple[int, int, str, Location]]:
        """Every ledger row of one version as ``(start, end, kind, location)``, in offset
        order."""
        rows = self._rows(
            "SELECT byte_start, byte_end, kind, location FROM spans WHERE source_id = %s "
            "AND tx = %s ORDER BY byte_start, byte_end", (source_id, tx_us))
        return [(int(r[0]), int(r[1]), r[2], decode_location(r[3])) for r in rows]

    def spans_of_version(self, source_id: str, tx_us: int) -> list[tuple[int, int, str]]:
        """Every ledger row of one version as ``(start, end, kind)``, in offset order."""
        rows = self._rows(
            "SELECT byte_start, byte_end, kind FROM spans WHERE source_id = %s AND tx = %s "
            "ORDER BY byte_start, byte_end", (source_id, tx_us))
        return [(int(r[0]), int(r[1]), r[2]) for r in rows]
