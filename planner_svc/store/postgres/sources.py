"""Sources and their versions in the PostgreSQL store (see :mod:`planner_svc.store.sources`:
same methods, same rules, same results). Titles, media types and canonical texts are stored as
UTF-8 ``bytea``."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence

from planner_svc.core.model import CoordKey, SpanRef
from planner_svc.store.postgres.clock import PgClock
from planner_svc.store.postgres.db import PAGE_ROWS
from planner_svc.store.rules import (
    check_cited,
    check_later_version,
    slices_of,
    source_version_bytes,
)

_VERSION_TEXTS = (
    "SELECT v.source_id, v.tx, v.text FROM unnest(%s::text[], %s::bigint[]) AS k(sid, tx) "
    "JOIN source_versions AS v ON v.source_id = k.sid AND v.tx = k.tx"
)


def _utf8(value: bytes) -> str:
    return bytes(value).decode("utf-8")


class PgSourceVersions(PgClock):
    """Sources and source versions (a part of :class:`planner_svc.store.postgres.PostgresStore`).
    """

    def put_source_version(
        self, source_id: str, text: str, *, title: str, media_type: str, tx_us: int
    ) -> tuple[int, bool]:
        """See :meth:`planner_svc.store.sources.SourceVersions.put_source_version`."""
        data = source_version_bytes(source_id, text, title=title, media_type=media_type,
                                    tx_us=tx_us)
        with self._write(savepoint=False):
            latest = self._latest_in_write(source_id)
            if latest is not None:
                latest_tx, latest_text = latest
                if latest_text == data:
                    return latest_tx, False
                check_later_version(source_id, tx_us, latest_tx)
            self._record_tx(tx_us, field="version_tx")
            title_b, media_b = title.encode("utf-8"), media_type.encode("utf-8")
            tx = self._tx()
            tx.pending.source_versions.append(
                (self._next_id("source_versions", "id"), source_id, tx_us, title_b, media_b, data))
            tx.pending.sources.append((source_id, title_b, media_b, tx_us))
            tx.written_texts[(source_id, tx_us)] = data
            tx.known.sources[source_id] = (tx_us, data)
            self._changed()
        return tx_us, True

    def _latest_in_write(self, source_id: str) -> tuple[int, bytes] | None:
        """Inside a write: the source's latest version (tx, canonical UTF-8 text), None for a
        new source; read once, then known (:class:`~planner_svc.store.postgres.db.Known`)."""
        known = self._tx().known.sources
        if source_id not in known:
            self.load_sources([source_id])
        return known[source_id]

    def load_sources(self, source_ids: Iterable[str]) -> None:
        """Inside a write: read the latest version of each source (one query) into the
        known state; a no-op outside a write."""
        if self._local_depth() == 0:
            return
        ids = sorted(set(source_ids))
        found = self._latest_bytes(ids)
        known = self._tx().known.sources
        for sid in ids:
            known[sid] = found.get(sid)

    def _latest_bytes(self, source_ids: Iterable[str]) -> dict[str, tuple[int, bytes]]:
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        rows = self._rows(
            "SELECT s.source_id, s.latest_tx, v.text FROM sources s JOIN source_versions v "
            "ON v.source_id = s.source_id AND v.tx = s.latest_tx WHERE s.source_id = ANY(%s)",
            (ids,))
        return {r[0]: (int(r[1]), bytes(r[2])) for r in rows}

    def latest_texts(self, source_ids: Iterable[str]) -> dict[str, tuple[int, str]]:
        """Batched :meth:`latest_version` with that version's canonical text: source_id ->
        (latest tx, text), in one query; unknown ids are absent."""
        found = self._latest_bytes(source_ids)
        return {sid: (tx, _utf8(text)) for sid, (tx, text) in found.items()}

    def latest_version(self, source_id: str) -> int | None:
        """Transaction time of the source's latest version; None if unknown."""
        if self._local_depth() > 0 and source_id in self._tx().known.sources:
            latest = self._tx().known.sources[source_id]
            return None if latest is None else latest[0]
        row = self._row("SELECT latest_tx FROM sources WHERE source_id = %s", (source_id,))
        return None if row is None else int(row[0])

    def latest_versions(self, source_ids: Iterable[str]) -> dict[str, int]:
        """Batched :meth:`latest_version`; unknown ids are absent."""
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        rows = self._rows("SELECT source_id, latest_tx FROM sources WHERE source_id = ANY(%s)",
                          (ids,))
        return {sid: int(tx) for sid, tx in rows}

    def version_as_of(self, source_id: str, at_tx_us: int) -> int | None:
        """Transaction time of the latest version recorded at or before ``at_tx_us``."""
        row = self._row("SELECT max(tx) FROM source_versions WHERE source_id = %s AND tx <= %s",
                        (source_id, at_tx_us))
        return None if row is None or row[0] is None else int(row[0])

    def source_title(self, source_id: str) -> str | None:
        """Title of the source's latest version; None if the source is unknown."""
        row = self._row("SELECT title FROM sources WHERE source_id = %s", (source_id,))
        return None if row is None else _utf8(row[0])

    def source_ids_by_title(self, title: str) -> list[str]:
        """Ids of the sources whose latest title equals ``title`` exactly, sorted."""
        rows = self._rows("SELECT source_id FROM sources WHERE title = %s ORDER BY source_id",
                          (title.encode("utf-8"),))
        return [r[0] for r in rows]

    def iter_titles(self) -> Iterator[tuple[str, str]]:
        """Every ``(source_id, latest title)``, ordered by source_id."""
        for source_id, title, _tx in self.iter_sources():
            yield source_id, title

    def iter_sources(self) -> Iterator[tuple[str, str, int]]:
        """Every ``(source_id, latest title, latest version tx)``, ordered by source_id."""
        after = ""
        while True:
            rows = self._rows(
                "SELECT source_id, title, latest_tx FROM sources WHERE source_id > %s "
                "ORDER BY source_id LIMIT %s", (after, PAGE_ROWS))
            if not rows:
                return
            yield from ((r[0], _utf8(r[1]), int(r[2])) for r in rows)
            after = rows[-1][0]

    def source_titles_after(self, after_row_id: int) -> list[tuple[int, str, str]]:
        """Up to a page of ``(row id, source_id, title)`` of the source versions with a row id
        above ``after_row_id``, in row id order (the order they were committed: ids are taken
        under the clock lock)."""
        rows = self._rows(
            "SELECT id, source_id, title FROM source_versions WHERE id > %s ORDER BY id LIMIT %s",
            (after_row_id, PAGE_ROWS))
        return [(int(r[0]), r[1], _utf8(r[2])) for r in rows]

    def count_sources(self) -> int:
        """Number of distinct sources."""
        row = self._row("SELECT count(*) FROM sources")
        assert row is not None
        return int(row[0])

    def source_text(self, source_id: str, tx_us: int) -> str | None:
        """Whole canonical text of one version; None when that version does not exist."""
        row = self._row("SELECT text FROM source_versions WHERE source_id = %s AND tx = %s",
                        (source_id, tx_us))
        return None if row is None else _utf8(row[0])

    def _version_texts(self, pairs: Iterable[tuple[str, int]]) -> dict[tuple[str, int], bytes]:
        wanted = sorted(set(pairs))
        if not wanted:
            return {}
        rows = self._rows(_VERSION_TEXTS, ([p[0] for p in wanted], [p[1] for p in wanted]))
        return {(r[0], int(r[1])): bytes(r[2]) for r in rows}

    def canonical_slice(self, source_id: str, tx_us: int, start: int, end: int) -> str | None:
        """Text of UTF-8 bytes ``[start, end)`` of one version (see
        :meth:`planner_svc.store.sources.SourceVersions.canonical_slice`)."""
        key = (source_id, tx_us, start, end)
        return self.canonical_slices([key]).get(key)

    def canonical_slices(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        """Batched :meth:`canonical_slice`; keys that cannot be sliced are absent."""
        wanted = sorted(set(keys))
        return slices_of(wanted, self._version_texts((k[0], k[1]) for k in wanted))

    def check_provenance(self, spans: Sequence[SpanRef], *, field: str) -> None:
        """Refuse provenance a plan could not cite (see
        :meth:`planner_svc.store.sources.SourceVersions.check_provenance`).

        Raises:
            InvalidRequest: (``{field}[i].source_version_tx``, ``.start`` or ``.end``).
        """
        texts = self._version_texts((s.source_id, s.source_version_tx) for s in spans)
        check_cited(spans, texts, field=field)
