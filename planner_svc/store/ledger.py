"""The span ledger: the structural kind and the location of each span of a source version.

A row ``(source_id, tx, byte_start, byte_end) -> (kind, location)`` says what a span of that
version's canonical text is (``paragraph``, ``heading``, ``cell``, ``code`` or ``body``) and
where it sits in the original document (page, heading path, notebook cell; stored as
:func:`~planner_svc.store.records.encode_location` writes it, NULL for none). Offsets are UTF-8
byte offsets on code point boundaries, the range half-open.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from planner_svc.core.model import CoordKey, Location
from planner_svc.store.clock import TransactionClock
from planner_svc.store.records import LedgerRow, LedgerSpan, decode_location
from planner_svc.store.rules import checked_spans


class SpanLedger(TransactionClock):
    """The span ledger (a part of :class:`planner_svc.store.Store`)."""

    def add_spans(self, source_id: str, tx_us: int, spans: Iterable[LedgerSpan]) -> int:
        """Record the structural kind and location of spans of one source version.

        Args:
            source_id, tx_us: the version.
            spans: ``(start, end, kind)`` or ``(start, end, kind, location)`` with UTF-8 byte
                offsets, ``0 <= start < end <= len``, both on code point boundaries, kind in
                paragraph|heading|cell|code|body, location a
                :class:`~planner_svc.core.model.Location` (absent = none). Re-adding a span
                replaces its kind and location.

        Returns:
            Number of rows written.

        Raises:
            InvalidRequest: (``source_version_tx``) unknown version; (``spans[i]``) a span is
                out of range, not on a boundary, or has an unknown kind. Nothing is written then.
        """
        with self._write() as conn:
            found = conn.execute(
                "SELECT text FROM source_versions WHERE source_id = ? AND tx = ?",
                (source_id, tx_us),
            ).fetchone()
            rows = checked_spans(source_id, tx_us,
                                 None if found is None else bytes(found[0]), spans)
            conn.executemany(
                "INSERT OR REPLACE INTO spans (source_id, tx, byte_start, byte_end, kind, "
                "location) VALUES (?, ?, ?, ?, ?, ?)",
                rows,
            )
            if rows:
                self._changed()
        return len(rows)

    def span_kind(self, source_id: str, tx_us: int, start: int, end: int) -> str | None:
        """Ledger kind of the exact span ``[start, end)`` (UTF-8 bytes); None without a row."""
        row = (
            self._conn()
            .execute(
                "SELECT kind FROM spans WHERE source_id = ? AND tx = ? AND byte_start = ? "
                "AND byte_end = ?",
                (source_id, tx_us, start, end),
            )
            .fetchone()
        )
        return None if row is None else str(row[0])

    def span_kinds(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        """Batched :meth:`span_kind`: ``(source_id, tx, start, end)`` -> kind; keys without a
        ledger row are absent. One SQL query."""
        rows = self._read_batch(
            "SELECT s.source_id, s.tx, s.byte_start, s.byte_end, s.kind FROM "
            "(SELECT json_extract(value, '$[0]') AS sid, json_extract(value, '$[1]') AS tx, "
            "json_extract(value, '$[2]') AS a, json_extract(value, '$[3]') AS b "
            "FROM json_each(?)) AS k "
            "JOIN spans AS s ON s.source_id = k.sid AND s.tx = k.tx "
            "AND s.byte_start = k.a AND s.byte_end = k.b",
            keys,
        )
        return {(r[0], r[1], r[2], r[3]): r[4] for r in rows}

    def ledger_rows(self, keys: Iterable[CoordKey]) -> dict[CoordKey, LedgerRow]:
        """Kind and location of each exact span ``(source_id, tx, start, end)``, in one SQL
        query; keys without a ledger row are absent."""
        rows = self._read_batch(
            "SELECT s.source_id, s.tx, s.byte_start, s.byte_end, s.kind, s.location FROM "
            "(SELECT json_extract(value, '$[0]') AS sid, json_extract(value, '$[1]') AS tx, "
            "json_extract(value, '$[2]') AS a, json_extract(value, '$[3]') AS b "
            "FROM json_each(?)) AS k "
            "JOIN spans AS s ON s.source_id = k.sid AND s.tx = k.tx "
            "AND s.byte_start = k.a AND s.byte_end = k.b",
            keys,
        )
        decoded: dict[str | None, Location] = {}  # rows of one document share few locations
        out: dict[CoordKey, LedgerRow] = {}
        for r in rows:
            location = decoded.get(r[5])
            if location is None:
                location = decoded[r[5]] = decode_location(r[5])
            out[(r[0], r[1], r[2], r[3])] = LedgerRow(r[4], location)
        return out

    def locations_of_version(
        self, source_id: str, tx_us: int
    ) -> Sequence[tuple[int, int, str, Location]]:
        """Every ledger row of one version as ``(start, end, kind, location)``, in offset
        order."""
        rows = self._conn().execute(
            "SELECT byte_start, byte_end, kind, location FROM spans WHERE source_id = ? "
            "AND tx = ? ORDER BY byte_start, byte_end",
            (source_id, tx_us),
        )
        return [(r[0], r[1], r[2], decode_location(r[3])) for r in rows]

    def spans_of_version(self, source_id: str, tx_us: int) -> list[tuple[int, int, str]]:
        """Every ledger row of one version as ``(start, end, kind)``, in offset order."""
        rows = self._conn().execute(
            "SELECT byte_start, byte_end, kind FROM spans WHERE source_id = ? AND tx = ? "
            "ORDER BY byte_start, byte_end",
            (source_id, tx_us),
        )
        return [(r[0], r[1], r[2]) for r in rows]
