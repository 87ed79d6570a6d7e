"""The embedded store: one SQLite file in WAL mode (DESIGN section 4).

Units everywhere: times are integer microseconds since the Unix epoch, offsets are UTF-8 byte
offsets into a source version's canonical text (see :mod:`planner_svc.store.text`), intervals
are half-open ``[from, to)`` with ``None`` as an open upper bound.

Concurrency: every thread gets its own SQLite connection (``threading.local``), so reads run
concurrently (WAL readers never block each other or the writer; the sqlite3 module releases the
GIL while SQLite works). Writes are serialised by one in-process lock plus SQLite's own write
lock (``BEGIN IMMEDIATE`` with a busy timeout) for other processes. Every public write method
commits before returning unless it runs inside :meth:`Store.transaction`, which groups several
writes into one atomic commit.

Durability: ``synchronous=NORMAL`` (the default) in WAL mode makes a committed write survive the
process being killed (``kill -9``); ``FULL`` also survives power loss, at an fsync per commit.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import ConfigError, InvalidRequest
from planner_svc.core.model import SPAN_KINDS, CoordKey, Direction, SpanRef
from planner_svc.store.records import (
    Edge,
    EdgeWrite,
    NodeVersion,
    NodeWrite,
    NodeWriteResult,
)
from planner_svc.store.schema import DDL, LAST_TX_BACKFILL, SCHEMA_VERSION
from planner_svc.store.text import (
    canonicalize,
    check_id,
    check_time,
    encode_text,
    fts_or_query,
    fts_phrase_query,
)

STORE_FILE = "store.sqlite"
"""File name of the database inside the data directory."""

_SYNC_MODES = ("NORMAL", "FULL", "EXTRA")
_PAGE_ROWS = 2048

_NODE_COLUMNS = (
    "version_id, node_id, labels, properties, text, confidence, provenance, "
    "valid_from, valid_to, tx_from, tx_to"
)
_EDGE_COLUMNS = "src, dst, relation, weight, valid_from, valid_to, tx_from, tx_to"

# Label/property filters of search_text; 3 parameters: labels JSON array, [[key, value], ...]
# JSON array, number of filters.
_FILTER_PER_HIT = (
    "(SELECT COUNT(*) FROM json_each(?) AS w JOIN node_labels AS l "
    "ON l.label = w.value AND l.version_id = n.version_id) + "
    "(SELECT COUNT(*) FROM json_each(?) AS w JOIN node_props AS p "
    "ON p.key = json_extract(w.value, '$[0]') AND p.value = json_extract(w.value, '$[1]') "
    "AND p.version_id = n.version_id) = ?"
)
_FILTER_GROUPED = (
    "n.version_id IN (SELECT version_id FROM ("
    "SELECT version_id FROM node_labels WHERE label IN (SELECT value FROM json_each(?)) "
    "UNION ALL SELECT p.version_id FROM json_each(?) AS w JOIN node_props AS p "
    "ON p.key = json_extract(w.value, '$[0]') AND p.value = json_extract(w.value, '$[1]')"
    ") GROUP BY version_id HAVING COUNT(*) = ?)"
)


def _live(alias: str) -> str:
    """SQL condition: the row's valid and tx intervals contain (?valid, ?tx); 4 parameters:
    valid, valid, tx, tx."""
    a = f"{alias}." if alias else ""
    return (
        f"{a}valid_from <= ? AND ({a}valid_to IS NULL OR {a}valid_to > ?) "
        f"AND {a}tx_from <= ? AND ({a}tx_to IS NULL OR {a}tx_to > ?)"
    )


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _provenance_json(spans: Sequence[SpanRef]) -> str:
    return _json([[s.source_id, s.source_version_tx, s.start, s.end] for s in spans])


def _node_from_row(row: Sequence[Any]) -> NodeVersion:
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


def _edge_from_row(row: Sequence[Any]) -> Edge:
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


def _same_node(write: NodeWrite, current: NodeVersion) -> bool:
    return (
        write.labels == current.labels
        and dict(write.properties) == dict(current.properties)
        and write.text == current.text
        and write.confidence == current.confidence
        and write.provenance == current.provenance
        and write.valid_from_us == current.valid_from_us
        and write.valid_to_us == current.valid_to_us
    )


def _is_continuation(byte: int) -> bool:
    return 0x80 <= byte <= 0xBF


def _on_boundary(data: bytes, offset: int) -> bool:
    return offset == len(data) or (0 <= offset < len(data) and not _is_continuation(data[offset]))


def _slice(data: bytes, start: int, end: int) -> str | None:
    if not 0 <= start <= end <= len(data):
        return None
    if not (_on_boundary(data, start) and _on_boundary(data, end)):
        return None
    return data[start:end].decode("utf-8")


def _vector_array(vector: npt.ArrayLike, *, field: str) -> npt.NDArray[np.float32]:
    if not isinstance(vector, np.ndarray):
        raise InvalidRequest(field, f"expected a numpy array, got {type(vector).__name__}")
    if vector.ndim != 1 or vector.shape[0] == 0:
        raise InvalidRequest(field, f"expected a non-empty 1-D array, got shape {vector.shape}")
    if vector.dtype != np.float32:
        raise InvalidRequest(field, f"expected dtype float32, got {vector.dtype}")
    if not np.all(np.isfinite(vector)):
        raise InvalidRequest(field, "holds a non-finite value")
    return np.ascontiguousarray(vector, dtype="<f4")


class Store:
    """Sources, span ledger, bitemporal nodes and edges, full-text index and vectors.

    Open with :meth:`Store.open`; use as a context manager or call :meth:`close`. Safe to share
    between threads (see the module docstring).
    """

    def __init__(self, path: Path, *, synchronous: str = "NORMAL") -> None:
        """Use :meth:`open`; this constructor does not create the schema."""
        if synchronous.upper() not in _SYNC_MODES:
            raise ConfigError(
                "synchronous", f"{synchronous!r} is not one of {', '.join(_SYNC_MODES)}"
            )
        self._path = path
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._conns: list[sqlite3.Connection] = []
        self._conns_lock = threading.Lock()
        self._closed = False

    # ------------------------------------------------------------------ lifecycle

    @classmethod
    def open(cls, data_dir: Path, *, synchronous: str = "NORMAL") -> Store:
        """Open (creating if needed) the store in ``data_dir`` (file ``store.sqlite``).

        Args:
            data_dir: directory; created with parents when missing.
            synchronous: SQLite ``synchronous`` level, ``NORMAL`` (survives kill -9), ``FULL``
                or ``EXTRA`` (also survive power loss).

        Raises:
            ConfigError: (``synchronous``) unknown level; (``data_dir``) the file was written by
                a newer schema version.
        """
        data_dir = Path(data_dir)
        data_dir.mkdir(parents=True, exist_ok=True)
        store = cls(data_dir / STORE_FILE, synchronous=synchronous)
        try:
            store._init_schema()
        except BaseException:
            store.close()
            raise
        return store

    def _init_schema(self) -> None:
        conn = self._conn()
        conn.execute("PRAGMA journal_mode=WAL")
        version = conn.execute("PRAGMA user_version").fetchone()[0]
        if version > SCHEMA_VERSION:
            raise ConfigError(
                "data_dir",
                f"{self._path} has schema version {version}; this build reads up to "
                f"{SCHEMA_VERSION}",
            )
        if version < SCHEMA_VERSION:
            with self._write_lock:
                conn.execute("BEGIN IMMEDIATE")
                try:
                    for statement in DDL.split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute(LAST_TX_BACKFILL)
                    conn.execute(f"PRAGMA user_version={SCHEMA_VERSION}")
                    conn.execute("COMMIT")
                except BaseException:
                    conn.execute("ROLLBACK")
                    raise

    @property
    def path(self) -> Path:
        """Path of the SQLite file."""
        return self._path

    def close(self) -> None:
        """Close every connection of every thread. Idempotent; later calls raise RuntimeError."""
        with self._conns_lock:
            self._closed = True
            conns, self._conns = self._conns, []
        for conn in conns:
            conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not self._closed:
            return conn
        with self._conns_lock:
            if self._closed:
                raise RuntimeError(f"store {self._path} is closed")
            conn = sqlite3.connect(
                self._path, timeout=30.0, isolation_level=None, check_same_thread=False
            )
            conn.execute(f"PRAGMA synchronous={self._synchronous}")
            conn.execute("PRAGMA busy_timeout=30000")
            conn.execute("PRAGMA temp_store=MEMORY")
            conn.execute("PRAGMA cache_size=-32768")
            self._conns.append(conn)
        self._local.conn = conn
        self._local.depth = 0
        self._local.changed = False
        return conn

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        conn = self._conn()
        local = self._local
        if local.depth > 0:
            savepoint = f"sp{local.depth}"
            conn.execute(f"SAVEPOINT {savepoint}")
            local.depth += 1
            try:
                yield conn
            except BaseException:
                conn.execute(f"ROLLBACK TO {savepoint}")
                conn.execute(f"RELEASE {savepoint}")
                raise
            else:
                conn.execute(f"RELEASE {savepoint}")
            finally:
                local.depth -= 1
            return
        if conn.in_transaction:
            raise RuntimeError("a write cannot run inside Store.snapshot()")
        with self._write_lock:
            conn.execute("BEGIN IMMEDIATE")
            local.depth = 1
            local.changed = False
            try:
                yield conn
                if local.changed:
                    conn.execute("UPDATE meta SET value = value + 1 WHERE key = 'generation'")
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            finally:
                local.depth = 0
                local.changed = False

    def _changed(self) -> None:
        self._local.changed = True

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group the writes made inside the block into one atomic commit.

        Nested use opens a savepoint inside the outer transaction: an exception leaving the
        inner block undoes only the inner block's writes; one leaving the outermost block rolls
        everything back.

        Raises:
            RuntimeError: called inside :meth:`snapshot`.
        """
        with self._write():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run the reads inside the block against one consistent database snapshot.

        The snapshot starts at the first read. Writes are not allowed inside (RuntimeError).
        Nested use (or use inside :meth:`transaction`) joins the running transaction.
        """
        conn = self._conn()
        if conn.in_transaction:
            yield
            return
        conn.execute("BEGIN DEFERRED")
        try:
            yield
        finally:
            if conn.in_transaction:
                conn.execute("COMMIT")

    # ------------------------------------------------------------------ meta

    def generation(self) -> int:
        """A counter incremented by every committed write that changed something.

        A derived structure (the vector index) records it and compares later to tell that it
        lags the store.
        """
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'generation'").fetchone()
        return int(row[0])

    def last_tx(self) -> int | None:
        """The latest transaction time (microseconds) any write has recorded; None for an empty
        store. Every later write carries a transaction time at or after it."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
        return None if row is None else int(row[0])

    def _record_tx(self, conn: sqlite3.Connection, tx_us: int, *, field: str) -> None:
        """Refuse ``tx_us`` when it lies before the latest recorded transaction time, else
        advance the clock row to it (inside the running write transaction).

        Raises:
            InvalidRequest: (``field``) ``tx_us`` is earlier than the latest recorded time.
        """
        row = conn.execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
        last = None if row is None else int(row[0])
        if last is not None and tx_us < last:
            raise InvalidRequest(
                field,
                f"{tx_us} is earlier than the latest transaction time {last} the store has "
                "recorded; transaction time never moves backwards (a time known about the "
                "content belongs on the valid axis)",
            )
        if last is None or tx_us > last:
            conn.execute(
                "INSERT OR REPLACE INTO meta (key, value) VALUES ('last_tx', ?)", (tx_us,)
            )

    @contextmanager
    def stamped(
        self,
        proposed_us: int | None,
        *,
        now_us: int,
        field: str = "version_tx",
        or_clock: bool = False,
    ) -> Iterator[int]:
        """A write transaction (a savepoint when nested) stamped with one transaction time.

        The time is ``proposed_us`` when given, which must lie in ``[last_tx, now_us]`` (equal to
        the latest recorded time is allowed, so one bulk load can stamp all its documents with
        one time); else the store's clock, ``max(now_us, last_tx + 1)``, strictly increasing
        across every writer of the file. Writes inside the block use the yielded time; each
        write method records the time it writes at (a block that writes nothing records none).

        Args:
            proposed_us: a transaction time the caller proposes, microseconds, or None.
            now_us: the current time, microseconds.
            field: request field named by errors about ``proposed_us``.
            or_clock: take the clock instead of refusing a proposal outside
                ``[last_tx, now_us]`` (a follow-up write that prefers its batch's time).

        Raises:
            InvalidRequest: (``field``) the proposal is in the future or earlier than the
                latest recorded transaction time (unless ``or_clock``).
        """
        check_time(now_us, field="now_us")
        with self._write() as conn:
            row = conn.execute("SELECT value FROM meta WHERE key = 'last_tx'").fetchone()
            last = None if row is None else int(row[0])
            if or_clock and proposed_us is not None and not (
                (last is None or last <= proposed_us) and proposed_us <= now_us
            ):
                proposed_us = None
            if proposed_us is None:
                tx = now_us if last is None else max(now_us, last + 1)
            else:
                tx = check_time(proposed_us, field=field)
                if tx > now_us:
                    raise InvalidRequest(
                        field, f"{tx} is in the future (now {now_us}); it must be <= now"
                    )
                if last is not None and tx < last:
                    raise InvalidRequest(
                        field,
                        f"{tx} is earlier than the latest transaction time {last} the store "
                        "has recorded; transaction time never moves backwards (a time known "
                        "about the content belongs on the valid axis)",
                    )
            yield tx

    def get_meta(self, key: str) -> str | None:
        """A free-form metadata value (e.g. the embedder name), or None when unset."""
        row = self._conn().execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Set a free-form metadata value. ``generation`` is reserved.

        Raises:
            InvalidRequest: (``key``) reserved key.
        """
        if key in ("generation", "last_tx"):
            raise InvalidRequest("key", f"{key!r} is maintained by the store")
        with self._write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", (key, value))
            self._changed()

    # ------------------------------------------------------------------ sources

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
        check_id(source_id, field="source_id")
        check_time(tx_us, field="version_tx")
        if not isinstance(title, str) or not isinstance(media_type, str):
            raise InvalidRequest("title", "title and media_type must be strings")
        canonical = canonicalize(text)
        data = encode_text(canonical, field="text")
        if not canonical.strip():
            raise InvalidRequest("text", "is empty (no non-whitespace character)")
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
                if tx_us <= latest_tx:
                    raise InvalidRequest(
                        "version_tx",
                        f"{tx_us} is not later than the latest version {latest_tx} "
                        f"of source {source_id!r}",
                    )
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
        ids = sorted(set(source_ids))
        if not ids:
            return {}
        rows = self._conn().execute(
            "SELECT source_id, latest_tx FROM sources "
            "WHERE source_id IN (SELECT value FROM json_each(?))",
            (_json(ids),),
        )
        return {sid: tx for sid, tx in rows}

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
                (after, _PAGE_ROWS),
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
                (after, _PAGE_ROWS),
            ).fetchall()
            if not rows:
                return
            yield from ((r[0], r[1], r[2]) for r in rows)
            after = rows[-1][0]

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
        if not wanted:
            return {}
        versions = sorted({(k[0], k[1]) for k in wanted})
        rows = self._conn().execute(
            "SELECT source_id, tx, text FROM source_versions WHERE (source_id, tx) IN "
            "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') "
            "FROM json_each(?))",
            (_json(versions),),
        )
        texts = {(r[0], r[1]): bytes(r[2]) for r in rows}
        out: dict[CoordKey, str] = {}
        for key in wanted:
            data = texts.get((key[0], key[1]))
            if data is None:
                continue
            piece = _slice(data, key[2], key[3])
            if piece is not None:
                out[key] = piece
        return out

    def check_provenance(self, spans: Sequence[SpanRef], *, field: str) -> None:
        """Refuse provenance that a plan could not cite.

        Every span must name a committed version of its source, lie inside that version's
        canonical text (``0 <= start < end <= len``, UTF-8 bytes) and start and end on code
        point boundaries.

        Raises:
            InvalidRequest: (``{field}[i].source_version_tx``) no such version;
                (``{field}[i].end`` / ``.start``) out of range or inside a character.
        """
        versions = sorted({(s.source_id, s.source_version_tx) for s in spans})
        if not versions:
            return
        rows = self._conn().execute(
            "SELECT source_id, tx, text FROM source_versions WHERE (source_id, tx) IN "
            "(SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') "
            "FROM json_each(?))",
            (_json(versions),),
        )
        texts = {(r[0], r[1]): bytes(r[2]) for r in rows}
        for i, span in enumerate(spans):
            where = f"{field}[{i}]"
            data = texts.get((span.source_id, span.source_version_tx))
            if data is None:
                raise InvalidRequest(
                    f"{where}.source_version_tx",
                    f"source {span.source_id!r} has no version {span.source_version_tx}",
                )
            if span.end > len(data):
                raise InvalidRequest(
                    f"{where}.end",
                    f"{span.end} is past the end of the version's text ({len(data)} bytes)",
                )
            for name, offset in (("start", span.start), ("end", span.end)):
                if not _on_boundary(data, offset):
                    raise InvalidRequest(
                        f"{where}.{name}", f"{offset} falls inside a multi-byte character"
                    )

    # ------------------------------------------------------------------ span ledger

    def add_spans(self, source_id: str, tx_us: int, spans: Iterable[tuple[int, int, str]]) -> int:
        """Record the structural kind of spans of one source version.

        Args:
            source_id, tx_us: the version.
            spans: ``(start, end, kind)`` with UTF-8 byte offsets, ``0 <= start < end <= len``,
                both on code point boundaries, kind in paragraph|heading|cell|code|body.
                Re-adding a span replaces its kind.

        Returns:
            Number of rows written.

        Raises:
            InvalidRequest: (``source_version_tx``) unknown version; (``spans[i]``) a span is
                out of range, not on a boundary, or has an unknown kind. Nothing is written then.
        """
        rows: list[tuple[str, int, int, int, str]] = []
        with self._write() as conn:
            found = conn.execute(
                "SELECT text FROM source_versions WHERE source_id = ? AND tx = ?",
                (source_id, tx_us),
            ).fetchone()
            if found is None:
                raise InvalidRequest(
                    "source_version_tx", f"source {source_id!r} has no version {tx_us}"
                )
            data = bytes(found[0])
            for i, (start, end, kind) in enumerate(spans):
                if kind not in SPAN_KINDS:
                    raise InvalidRequest(
                        f"spans[{i}].kind", f"{kind!r} is not one of {', '.join(SPAN_KINDS)}"
                    )
                if not (0 <= start < end <= len(data)):
                    raise InvalidRequest(
                        f"spans[{i}]", f"[{start}, {end}) is outside [0, {len(data)}) or empty"
                    )
                if not (_on_boundary(data, start) and _on_boundary(data, end)):
                    raise InvalidRequest(
                        f"spans[{i}]", f"[{start}, {end}) is not on code point boundaries"
                    )
                rows.append((source_id, tx_us, start, end, kind))
            conn.executemany(
                "INSERT OR REPLACE INTO spans (source_id, tx, byte_start, byte_end, kind) "
                "VALUES (?, ?, ?, ?, ?)",
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
        wanted = sorted(set(keys))
        if not wanted:
            return {}
        rows = self._conn().execute(
            "SELECT s.source_id, s.tx, s.byte_start, s.byte_end, s.kind FROM "
            "(SELECT json_extract(value, '$[0]') AS sid, json_extract(value, '$[1]') AS tx, "
            "json_extract(value, '$[2]') AS a, json_extract(value, '$[3]') AS b "
            "FROM json_each(?)) AS k "
            "JOIN spans AS s ON s.source_id = k.sid AND s.tx = k.tx "
            "AND s.byte_start = k.a AND s.byte_end = k.b",
            (_json(wanted),),
        )
        return {(r[0], r[1], r[2], r[3]): r[4] for r in rows}

    def spans_of_version(self, source_id: str, tx_us: int) -> list[tuple[int, int, str]]:
        """Every ledger row of one version as ``(start, end, kind)``, in offset order."""
        rows = self._conn().execute(
            "SELECT byte_start, byte_end, kind FROM spans WHERE source_id = ? AND tx = ? "
            "ORDER BY byte_start, byte_end",
            (source_id, tx_us),
        )
        return [(r[0], r[1], r[2]) for r in rows]

    # ------------------------------------------------------------------ nodes

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
            current: dict[str, NodeVersion] = {}
            for row in conn.execute(
                f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL "
                "AND node_id IN (SELECT value FROM json_each(?))",
                (_json(sorted(ids)),),
            ):
                current[row[1]] = _node_from_row(row)
            if any(
                w.node_id not in current or not _same_node(w, current[w.node_id]) for w in writes
            ):
                self._record_tx(conn, tx_us, field="tx")
            results: list[NodeWriteResult] = []
            for w in writes:
                cur = current.get(w.node_id)
                if cur is not None and _same_node(w, cur):
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
            self._changed()
        return results

    def _insert_node(self, conn: sqlite3.Connection, w: NodeWrite, tx_us: int) -> int:
        cur = conn.execute(
            "INSERT INTO nodes (node_id, labels, properties, text, confidence, provenance, "
            "valid_from, valid_to, tx_from, tx_to) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, NULL)",
            (
                w.node_id,
                _json(list(w.labels)),
                _json(dict(w.properties)),
                w.text,
                w.confidence,
                _provenance_json(w.provenance),
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
                (tx_us, _json(ids)),
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
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        rows = self._conn().execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE tx_to IS NULL "
            "AND node_id IN (SELECT value FROM json_each(?))",
            (_json(ids),),
        )
        return {row[1]: _node_from_row(row) for row in rows}

    def get_as_of(self, node_id: str, valid_us: int, tx_us: int) -> NodeVersion | None:
        """The node version whose valid interval contains ``valid_us`` and whose tx interval
        contains ``tx_us`` (both microseconds, half-open); None when there is none."""
        return self.get_many_as_of([node_id], valid_us, tx_us).get(node_id)

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> dict[str, NodeVersion]:
        """Batched :meth:`get_as_of` in one SQL query: node_id -> version, for the nodes that
        have a version live at (``valid_us``, ``tx_us``)."""
        ids = sorted(set(node_ids))
        if not ids:
            return {}
        rows = self._conn().execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes "
            f"WHERE node_id IN (SELECT value FROM json_each(?)) AND {_live('')}",
            (_json(ids), valid_us, valid_us, tx_us, tx_us),
        )
        out: dict[str, NodeVersion] = {}
        for row in rows:
            out[row[1]] = _node_from_row(row)
        return out

    def get_versions(self, version_ids: Iterable[int]) -> dict[int, NodeVersion]:
        """Node versions by ``version_id`` regardless of liveness; unknown ids are absent."""
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        rows = self._conn().execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes "
            "WHERE version_id IN (SELECT value FROM json_each(?))",
            (_json(ids),),
        )
        return {row[0]: _node_from_row(row) for row in rows}

    def node_history(self, node_id: str) -> list[NodeVersion]:
        """Every stored version of a node, ordered by (tx_from, version_id)."""
        rows = self._conn().execute(
            f"SELECT {_NODE_COLUMNS} FROM nodes WHERE node_id = ? ORDER BY tx_from, version_id",
            (node_id,),
        )
        return [_node_from_row(row) for row in rows]

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
                    f"SELECT {_NODE_COLUMNS} FROM nodes WHERE version_id > ? AND tx_to IS NULL "
                    "ORDER BY version_id LIMIT ?",
                    (after, _PAGE_ROWS),
                ).fetchall()
            else:
                rows = conn.execute(
                    f"SELECT {_NODE_COLUMNS} FROM nodes WHERE version_id > ? AND tx_to IS NULL "
                    "AND version_id IN (SELECT version_id FROM node_labels WHERE label = ? "
                    "AND version_id > ?) ORDER BY version_id LIMIT ?",
                    (after, label, after, _PAGE_ROWS),
                ).fetchall()
            if not rows:
                return
            yield from (_node_from_row(row) for row in rows)
            after = rows[-1][0]

    def max_version_id(self) -> int:
        """Largest node version_id stored, 0 when there is none."""
        row = self._conn().execute("SELECT max(version_id) FROM nodes").fetchone()
        return int(row[0] or 0)

    def count_nodes(self, *, current_only: bool = True) -> int:
        """Number of node versions (only current ones by default)."""
        sql = "SELECT count(*) FROM nodes" + (" WHERE tx_to IS NULL" if current_only else "")
        return int(self._conn().execute(sql).fetchone()[0])

    # ------------------------------------------------------------------ edges

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
        by_key: dict[tuple[str, str, str], EdgeWrite] = {}
        for w in writes:
            by_key[w.key] = w
        replace = set(replace_out_of)
        srcs = sorted({k[0] for k in by_key} | replace)
        if not srcs:
            return 0
        created = 0
        with self._write() as conn:
            current: dict[tuple[str, str, str], tuple[int, Edge]] = {}
            for row in conn.execute(
                f"SELECT edge_id, {_EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL "
                "AND src IN (SELECT value FROM json_each(?))",
                (_json(srcs),),
            ):
                edge = _edge_from_row(row[1:])
                current[edge.key] = (row[0], edge)
            changes: list[tuple[tuple[str, str, str], EdgeWrite]] = []
            for key in sorted(by_key):
                w = by_key[key]
                found = current.get(key)
                if found is not None:
                    e = found[1]
                    if (e.weight, e.valid_from_us, e.valid_to_us) == (
                        w.weight,
                        w.valid_from_us,
                        w.valid_to_us,
                    ):
                        continue
                changes.append((key, w))
            closing = [
                edge_id
                for key, (edge_id, _e) in sorted(current.items())
                if (key[0] in replace and key not in by_key)
            ]
            for key, _w in changes:
                if key in current:
                    closing.append(current[key][0])
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
                        for _k, w in changes
                    ],
                )
                created = len(changes)
            if closing or changes:
                self._changed()
        return created

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
        if not ids:
            return []
        conn = self._conn()
        found: dict[tuple[str, str, str], Edge] = {}
        columns = {"out": ("src",), "in": ("dst",), "both": ("src", "dst")}[direction]
        for column in columns:
            rows = conn.execute(
                f"SELECT {_EDGE_COLUMNS} FROM edges "
                f"WHERE {column} IN (SELECT value FROM json_each(?)) AND {_live('')}",
                (_json(ids), valid_us, valid_us, tx_us, tx_us),
            )
            for row in rows:
                edge = _edge_from_row(row)
                found[edge.key] = edge
        return [found[k] for k in sorted(found)]

    def current_out_edges(self, src_ids: Iterable[str]) -> list[Edge]:
        """Current edge versions (open tx interval, any valid interval) leaving ``src_ids``,
        sorted by (src, dst, relation)."""
        ids = sorted(set(src_ids))
        if not ids:
            return []
        rows = self._conn().execute(
            f"SELECT {_EDGE_COLUMNS} FROM edges WHERE tx_to IS NULL "
            "AND src IN (SELECT value FROM json_each(?)) ORDER BY src, dst, relation",
            (_json(ids),),
        )
        return [_edge_from_row(row) for row in rows]

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
            rows = conn.execute(
                "SELECT edge_id, src, dst, relation, tx_from FROM edges WHERE tx_to IS NULL "
                "AND src IN (SELECT value FROM json_each(?))",
                (_json(sorted({k[0] for k in wanted})),),
            ).fetchall()
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

    # ------------------------------------------------------------------ full text

    def search_text(
        self,
        query: str,
        *,
        labels: Iterable[str] = (),
        properties: Mapping[str, str] | None = None,
        valid_us: int,
        tx_us: int,
        limit: int,
    ) -> list[tuple[str, float]]:
        """Full-text search (FTS5, BM25) over node versions live at (valid_us, tx_us).

        The query is user text: its words (stopwords dropped) are quoted and OR-ed
        (:func:`planner_svc.store.text.fts_or_query`), so no input raises a syntax error.
        Filters: the node carries every label in ``labels`` and every ``key = value`` pair of
        ``properties``. With no query word but some filter, every live node passing the
        filters scores 1.0 (filter-only mode); with neither, the result is empty.

        Args:
            query: user text.
            labels, properties: filters (AND).
            valid_us, tx_us: as-of times, microseconds.
            limit: maximum number of results (>= 0).

        Returns:
            ``(node_id, score)`` with score = ``-bm25()`` (higher is better), sorted by score
            descending then node_id.

        Raises:
            InvalidRequest: (``limit``) negative.
        """
        if isinstance(limit, bool) or not isinstance(limit, int) or limit < 0:
            raise InvalidRequest("limit", f"{limit!r} must be an integer >= 0")
        if limit == 0:
            return []
        conds = [_live("n")]
        params: list[Any] = [valid_us, valid_us, tx_us, tx_us]
        wanted_labels = sorted(set(labels))
        wanted_props = sorted((properties or {}).items())
        n_filters = len(wanted_labels) + len(wanted_props)
        has_filter = n_filters > 0
        fts = fts_or_query(query)
        if has_filter:
            # One statement whatever the number of filters (one subquery per filter nests the
            # SQL deeper than SQLite allows past about a thousand): a version passes when it
            # has one matching row per filter. Labels are distinct and a property key has one
            # wanted value, so counting matching rows is exact. With full text, FTS drives and
            # the count is probed per hit; filter-only, the matching versions come from the
            # label/property indexes, grouped.
            conds.append(_FILTER_PER_HIT if fts is not None else _FILTER_GROUPED)
            params.extend((_json(wanted_labels), _json(wanted_props), n_filters))
        conn = self._conn()
        if fts is None:
            if not has_filter:
                return []
            rows = conn.execute(
                f"SELECT n.node_id FROM nodes AS n WHERE {' AND '.join(conds)} "
                "ORDER BY n.node_id LIMIT ?",
                (*params, limit),
            )
            return [(r[0], 1.0) for r in rows]
        rows = conn.execute(
            "SELECT n.node_id, -bm25(nodes_fts) AS score FROM nodes_fts "
            "JOIN nodes AS n ON n.version_id = nodes_fts.rowid "
            f"WHERE nodes_fts MATCH ? AND {' AND '.join(conds)} "
            "ORDER BY score DESC, n.node_id LIMIT ?",
            (fts, *params, limit),
        )
        return [(r[0], float(r[1])) for r in rows]

    def current_nodes_matching_phrase(self, phrase: str, *, label: str) -> list[NodeVersion]:
        """Current node versions (open tx interval) carrying ``label`` whose text contains the
        words of ``phrase`` in sequence, case-insensitively and after stemming (a superset of
        exact matches: callers verify). Ordered by version_id."""
        fts = fts_phrase_query(phrase)
        if fts is None:
            return []
        rows = self._conn().execute(
            f"SELECT {', '.join('n.' + c for c in _NODE_COLUMNS.split(', '))} "
            "FROM nodes_fts JOIN nodes AS n ON n.version_id = nodes_fts.rowid "
            "WHERE nodes_fts MATCH ? AND n.tx_to IS NULL AND n.version_id IN "
            "(SELECT version_id FROM node_labels WHERE label = ?) ORDER BY n.version_id",
            (fts, label),
        )
        return [_node_from_row(row) for row in rows]

    # ------------------------------------------------------------------ vectors

    def vector_dim(self) -> int | None:
        """Dimension of the stored vectors; None before the first vector."""
        value = self.get_meta("vector_dim")
        return None if value is None else int(value)

    def put_vector(self, version_id: int, vector: npt.NDArray[np.float32]) -> None:
        """Store the embedding of one node version (replacing any earlier one).

        Args:
            version_id: an existing node version's id.
            vector: 1-D float32 numpy array with finite values; every vector of a store has
                the same dimension.

        Raises:
            InvalidRequest: (``version_id``) unknown; (``vector``) wrong type, shape, dtype,
                dimension or a non-finite value.
        """
        self.put_vectors([(version_id, vector)])

    def put_vectors(self, items: Iterable[tuple[int, npt.NDArray[np.float32]]]) -> int:
        """Batched :meth:`put_vector`, atomically. Returns the number stored."""
        pairs = [(vid, _vector_array(vec, field="vector")) for vid, vec in items]
        if not pairs:
            return 0
        dims = {vec.shape[0] for _vid, vec in pairs}
        with self._write() as conn:
            stored = self.vector_dim()
            if len(dims) > 1 or (stored is not None and dims != {stored}):
                raise InvalidRequest(
                    "vector", f"dimension {sorted(dims)} differs from the store's {stored}"
                )
            ids = sorted({vid for vid, _v in pairs})
            (known,) = conn.execute(
                "SELECT count(*) FROM nodes WHERE version_id IN (SELECT value FROM json_each(?))",
                (_json(ids),),
            ).fetchone()
            if known != len(ids):
                raise InvalidRequest("version_id", "names a node version that does not exist")
            if stored is None:
                conn.execute(
                    "INSERT OR REPLACE INTO meta (key, value) VALUES ('vector_dim', ?)",
                    (str(dims.pop()),),
                )
            conn.executemany(
                "INSERT OR REPLACE INTO vectors (version_id, vector) VALUES (?, ?)",
                [(vid, vec.tobytes()) for vid, vec in pairs],
            )
            self._changed()
        return len(pairs)

    def get_vectors(self, version_ids: Iterable[int]) -> dict[int, npt.NDArray[np.float32]]:
        """Stored vectors by version_id (float32, 1-D); versions without one are absent."""
        ids = sorted(set(version_ids))
        if not ids:
            return {}
        rows = self._conn().execute(
            "SELECT version_id, vector FROM vectors "
            "WHERE version_id IN (SELECT value FROM json_each(?))",
            (_json(ids),),
        )
        return {r[0]: np.frombuffer(r[1], dtype="<f4").astype(np.float32) for r in rows}

    def iter_vectors(
        self, after_version_id: int = 0
    ) -> Iterator[tuple[int, str, int, npt.NDArray[np.float32]]]:
        """Every stored vector with ``version_id > after_version_id``, in version_id order.

        Yields:
            ``(version_id, node_id, valid_from_us, vector)``; vector is 1-D float32 (a fresh
            array). Read in pages, so a long iteration holds no read transaction.
        """
        conn = self._conn()
        after = after_version_id
        while True:
            rows = conn.execute(
                "SELECT v.version_id, n.node_id, n.valid_from, v.vector FROM vectors AS v "
                "JOIN nodes AS n ON n.version_id = v.version_id WHERE v.version_id > ? "
                "ORDER BY v.version_id LIMIT ?",
                (after, _PAGE_ROWS),
            ).fetchall()
            if not rows:
                return
            for vid, node_id, valid_from, blob in rows:
                yield vid, node_id, valid_from, np.frombuffer(blob, dtype="<f4").astype(np.float32)
            after = rows[-1][0]

    def max_vector_version_id(self) -> int:
        """Largest version_id that has a vector, 0 when there is none."""
        row = self._conn().execute("SELECT max(version_id) FROM vectors").fetchone()
        return int(row[0] or 0)

    def count_vectors(self) -> int:
        """Number of stored vectors."""
        return int(self._conn().execute("SELECT count(*) FROM vectors").fetchone()[0])

    def live_version_ids(self, version_ids: Iterable[int], valid_us: int, tx_us: int) -> set[int]:
        """The subset of ``version_ids`` whose node version is live at (``valid_us``,
        ``tx_us``) (microseconds, half-open intervals). One SQL query."""
        ids = sorted(set(version_ids))
        if not ids:
            return set()
        rows = self._conn().execute(
            "SELECT version_id FROM nodes WHERE version_id IN (SELECT value FROM json_each(?)) "
            f"AND {_live('')}",
            (_json(ids), valid_us, valid_us, tx_us, tx_us),
        )
        return {r[0] for r in rows}
