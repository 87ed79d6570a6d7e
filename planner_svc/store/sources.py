"""Sources and their versions: canonical text per version, titles, slices by coordinate.

A source has versions; each version has a transaction time ``tx`` (microseconds) and its
canonical text (:func:`planner_svc.store.text.canonicalize`) stored as UTF-8 bytes, so offsets
are UTF-8 byte offsets. Old versions are kept: a plan as of an earlier transaction time slices
the old text.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from planner_svc.core.model import CoordKey, SpanRef
from planner_svc.store.clock import TransactionClock
from planner_svc.store.db import PAGE_ROWS
from planner_svc.store.rules import (
    check_cited,
    check_later_version,
    slices_of,
    source_version_bytes,
)

_VERSION_TEXTS = (
    "SELECT source_id, tx, text FROM source_versions WHERE (source_id, tx) IN "
    "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?))"
)
"""Texts of many ``(source_id, tx)`` versions, a statement for ``Database._read_batch``."""


class SourceVersions(TransactionClock):
    """Sources and source versions (a part of :class:`planner_svc.store.Store`)."""

    def put_source_version(
        self, source_id: str, text: str, *, title: str, media_type: str, tx_us: int
    ) -> tuple[int, bool]:
        """Record a new version of a source unless its canonical text is unchanged.

        Args:
            source_id: the source's id (1..1024 characters, no control characters).
            text: the document text; stored canonicalised (:func:`canonicalize`) as UTF-8.
            title: human title (used for title lookups and mention edges).
            media_type: e.g. ``text/markdown``.
            tx_us: the new version's transaction time, microseconds.

        Returns:
            ``(version_tx_us, created)``: the new version's tx and True; or, when the canonical
            text equals the latest version's, that version's tx and False (nothing is written,
            and a new title or media type is ignored).

        Raises:
            InvalidRequest: ``source_id`` invalid; ``text`` empty (whitespace only) or not valid
                UTF-8; ``version_tx`` not later than the latest version's tx, or earlier than
                the latest transaction time the store has recorded.
        """
        data = source_version_bytes(source_id, text, title=title, media_type=media_type,
                                    tx_us=tx_us)
        with self._write() as conn:
            row = conn.execute(
                "SELECT s.latest_tx, v.text FROM sources s JOIN source_versions v "
                "ON v.source_id = s.source_id AND v.tx = s.latest_tx WHERE s.source_id = ?",
                (source_id,),
            ).fetchone()
            if row is not None:
                latest_tx, latest_text = row
                if bytes(latest_text) == data:
                    return latest_tx, False
                check_later_version(source_id, tx_us, latest_tx)
            self._record_tx(conn, tx_us, field="version_tx")
            conn.execute(
                "INSERT INTO source_versions (source_id, tx, title, media_type, text) "
                "VALUES (?, ?, ?, ?, ?)",
                (source_id, tx_us, title, media_type, data),
            )
            conn.execute(
                "INSERT INTO sources (source_id, title, media_type, latest_tx) "
                "VALUES (?, ?, ?, ?) ON CONFLICT (source_id) DO UPDATE SET "
                "title = excluded.title, media_type = excluded.media_type, "
                "latest_tx = excluded.latest_tx",
                (source_id, title, media_type, tx_us),
            )
            self._changed()
        return tx_us, True

    def latest_version(self, source_id: str) -> int | None:
        """Transaction time (microseconds) of the source's latest version; None if unknown."""
        row = (
            self._conn()
            .execute("SELECT latest_tx FROM sources WHERE source_id = ?", (source_id,))
            .fetchone()
        )
        return None if row is None else int(row[0])

    def latest_versions(self, source_ids: Iterable[str]) -> dict[str, int]:
        """Batched :meth:`latest_version`: source_id -> latest tx (microseconds); unknown ids
        are absent."""
        rows = self._read_batch(
            "SELECT source_id, latest_tx FROM sources "
            "WHERE source_id IN (SELECT value FROM json_each(?))",
            source_ids,
        )
        return {sid: tx for sid, tx in rows}

    def latest_texts(self, source_ids: Iterable[str]) -> dict[str, tuple[int, str]]:
        """Batched :meth:`latest_version` with that version's canonical text: source_id ->
        (latest tx, text), in one query; unknown ids are absent."""
        rows = self._read_batch(
            "SELECT s.source_id, s.latest_tx, v.text FROM sources AS s JOIN source_versions AS v "
            "ON v.source_id = s.source_id AND v.tx = s.latest_tx "
            "WHERE s.source_id IN (SELECT value FROM json_each(?))",
            source_ids,
        )
        return {sid: (int(tx), bytes(text).decode("utf-8")) for sid, tx, text in rows}

    def version_as_of(self, source_id: str, at_tx_us: int) -> int | None:
        """Transaction time of the latest version recorded at or before ``at_tx_us``
        (microseconds); None when the source had no version then."""
        row = (
            self._conn()
            .execute(
                "SELECT max(tx) FROM source_versions WHERE source_id = ? AND tx <= ?",
                (source_id, at_tx_us),
            )
            .fetchone()
        )
        return None if row is None or row[0] is None else int(row[0])

    def source_title(self, source_id: str) -> str | None:
        """Title of the source's latest version; None if the source is unknown."""
        row = (
            self._conn()
            .execute("SELECT title FROM sources WHERE source_id = ?", (source_id,))
            .fetchone()
        )
        return None if row is None else str(row[0])

    def source_ids_by_title(self, title: str) -> list[str]:
        """Ids of the sources whose latest title equals ``title`` exactly, sorted."""
        rows = self._conn().execute(
            "SELECT source_id FROM sources WHERE title = ? ORDER BY source_id", (title,)
        )
        return [r[0] for r in rows]

    def iter_titles(self) -> Iterator[tuple[str, str]]:
        """Every ``(source_id, latest title)``, ordered by source_id."""
        conn = self._conn()
        after = ""
        while True:
            rows = conn.execute(
                "SELECT source_id, title FROM sources WHERE source_id > ? "
                "ORDER BY source_id LIMIT ?",
                (after, PAGE_ROWS),
            ).fetchall()
            if not rows:
                return
            yield from ((r[0], r[1]) for r in rows)
            after = rows[-1][0]

    def iter_sources(self) -> Iterator[tuple[str, str, int]]:
        """Every ``(source_id, latest title, latest version tx)`` (tx in microseconds), ordered
        by source_id."""
        conn = self._conn()
        after = ""
        while True:
            rows = conn.execute(
                "SELECT source_id, title, latest_tx FROM sources WHERE source_id > ? "
                "ORDER BY source_id LIMIT ?",
                (after, PAGE_ROWS),
            ).fetchall()
            if not rows:
                return
            yield from ((r[0], r[1], r[2]) for r in rows)
            after = rows[-1][0]

    def source_titles_after(self, after_row_id: int) -> list[tuple[int, str, str]]:
        """Up to a page of ``(row id, source_id, title)`` of the source versions with a row id
        above ``after_row_id``, in row id order (the order they were committed)."""
        rows = self._conn().execute(
            "SELECT id, source_id, title FROM source_versions WHERE id > ? ORDER BY id LIMIT ?",
            (after_row_id, PAGE_ROWS),
        ).fetchall()
        return [(int(r[0]), r[1], r[2]) for r in rows]

    def count_sources(self) -> int:
        """Number of distinct sources."""
        return int(self._conn().execute("SELECT count(*) FROM sources").fetchone()[0])

    def source_text(self, source_id: str, tx_us: int) -> str | None:
        """Whole canonical text of one version; None when that version does not exist."""
        row = (
            self._conn()
            .execute(
                "SELECT text FROM source_versions WHERE source_id = ? AND tx = ?",
                (source_id, tx_us),
            )
            .fetchone()
        )
        return None if row is None else bytes(row[0]).decode("utf-8")

    def canonical_slice(self, source_id: str, tx_us: int, start: int, end: int) -> str | None:
        """Text of UTF-8 bytes ``[start, end)`` of one source version's canonical text.

        One key of :meth:`canonical_slices` (same boundary rules).

        Returns:
            The slice (``""`` when ``start == end``), or None when the version does not exist,
            the range is outside ``0 <= start <= end <= len`` or an offset falls inside a
            multi-byte character.
        """
        key = (source_id, tx_us, start, end)
        return self.canonical_slices([key]).get(key)

    def canonical_slices(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        """Batched :meth:`canonical_slice` for ``(source_id, tx, start, end)`` keys.

        Returns:
            key -> slice for every key that can be sliced; the others are absent.
        """
        wanted = sorted(set(keys))
        rows = self._read_batch(_VERSION_TEXTS, ((k[0], k[1]) for k in wanted))
        return slices_of(wanted, {(r[0], r[1]): bytes(r[2]) for r in rows})

    def check_provenance(self, spans: Sequence[SpanRef], *, field: str) -> None:
        """Refuse provenance that a plan could not cite.

        Every span must name a committed version of its source, lie inside that version's
        canonical text (``0 <= start < end <= len``, UTF-8 bytes) and start and end on code
        point boundaries.

        Raises:
            InvalidRequest: (``{field}[i].source_version_tx``) no such version;
                (``{field}[i].end`` / ``.start``) out of range or inside a character.
        """
        rows = self._read_batch(_VERSION_TEXTS, ((s.source_id, s.source_version_tx) for s in spans))
        check_cited(spans, {(r[0], r[1]): bytes(r[2]) for r in rows}, field=field)
