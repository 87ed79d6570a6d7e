"""The database under every part of the store: connections, write transactions, snapshots.

One SQLite file in WAL mode. Every thread gets its own connection (``threading.local``), so
reads run concurrently (WAL readers never block each other or the writer; the sqlite3 module
releases the GIL while SQLite works). Writes are serialised by one in-process lock plus SQLite's
own write lock (``BEGIN IMMEDIATE`` with a busy timeout) for other processes. A write method
commits before returning unless it runs inside :meth:`Database.transaction`, which groups
several writes into one atomic commit (nested blocks are savepoints).

Durability: ``synchronous=NORMAL`` (the default) in WAL mode makes a committed write survive the
process being killed (``kill -9``); ``FULL`` also survives power loss, at an fsync per commit.

Batch reads: :meth:`Database._read_batch` is the one way a part reads many keys at once (the keys
sorted, distinct, sent as one JSON array and expanded by ``json_each``), so a read of a thousand
nodes is one statement whatever SQLite's parameter limit.
"""

from __future__ import annotations

import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from planner_svc.core.errors import ConfigError
from planner_svc.store.connections import ConnectionSet
from planner_svc.store.schema import ADDED_COLUMNS, DDL, LAST_TX_BACKFILL, SCHEMA_VERSION

SYNC_MODES = ("NORMAL", "FULL", "EXTRA")
"""Accepted SQLite ``synchronous`` levels."""

PAGE_ROWS = 2048
"""Rows per page of the iterators that read a whole table (no long-lived read transaction)."""


def to_json(value: object) -> str:
    """Compact JSON, non-ASCII kept: the form labels, properties and batch keys are stored and
    sent in."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def live(alias: str) -> str:
    """SQL condition: the row's valid and tx intervals contain (?valid, ?tx), half-open; four
    parameters: valid, valid, tx, tx."""
    a = f"{alias}." if alias else ""
    return (
        f"{a}valid_from <= ? AND ({a}valid_to IS NULL OR {a}valid_to > ?) "
        f"AND {a}tx_from <= ? AND ({a}tx_to IS NULL OR {a}tx_to > ?)"
    )


class Database(ConnectionSet[sqlite3.Connection]):
    """Connections, write transactions and snapshots of one store file.

    Use :meth:`planner_svc.store.Store.open`; this constructor neither creates the file nor the
    schema.

    Raises:
        ConfigError: (``synchronous``) not one of :data:`SYNC_MODES`.
    """

    def __init__(self, path: Path, *, synchronous: str = "NORMAL") -> None:
        if synchronous.upper() not in SYNC_MODES:
            raise ConfigError(
                "synchronous", f"{synchronous!r} is not one of {', '.join(SYNC_MODES)}"
            )
        super().__init__()
        self._path = path
        self._synchronous = synchronous.upper()
        self._local = threading.local()
        self._write_lock = threading.RLock()

    # ------------------------------------------------------------------ lifecycle

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
                    for table, column, kind in ADDED_COLUMNS:
                        have = {row[1] for row in conn.execute(f"PRAGMA table_info({table})")}
                        if column not in have:
                            conn.execute(f"ALTER TABLE {table} ADD COLUMN {column} {kind}")
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

    def _conn(self) -> sqlite3.Connection:
        conn: sqlite3.Connection | None = getattr(self._local, "conn", None)
        if conn is not None and not self._closed:
            return conn
        with self._conns_lock:
            if self._closed:
                raise self.closed_error()
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

    # ------------------------------------------------------------------ reads

    def _read_batch(self, sql: str, keys: Iterable[object], *params: object) -> list[Any]:
        """Rows of ``sql`` for many keys in one statement.

        ``sql``'s first parameter receives the distinct ``keys``, sorted, as one JSON array
        (a tuple key becomes an array, read back with ``json_extract(value, '$[i]')``); expand
        it with ``json_each(?)``. ``params`` fill the parameters after it.

        Returns:
            The rows (tuples), or ``[]`` without running anything when ``keys`` is empty.
        """
        wanted = sorted(set(keys))  # type: ignore[type-var]
        if not wanted:
            return []
        return self._conn().execute(sql, (to_json(wanted), *params)).fetchall()

    # ------------------------------------------------------------------ transactions

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
