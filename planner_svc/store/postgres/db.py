"""The database under every part of the PostgreSQL store: connections, write transactions
serialised by the clock row, snapshots.

Driver: psycopg 3 (``psycopg[binary]``), the maintained PostgreSQL adapter (the psycopg2
successor: typed, thread-safe connections, pipelined ``executemany``). Every thread gets its own
connection in autocommit mode (``threading.local``), opened on first use and opened again when
the server dropped it between calls. Transactions are explicit:

- **Writes** (:meth:`PgDatabase._write`, :meth:`transaction`, ``stamped``): ``BEGIN`` at READ
  COMMITTED, then the one row of ``clock`` is locked (``SELECT ... FOR UPDATE``) before anything
  else, and held until ``COMMIT``. Every writer of every replica takes that lock first, so write
  transactions run one at a time in the order they commit: transaction times and row ids grow
  in commit order, and a reader that has seen a transaction time or an id has seen every row
  committed before it (PostgreSQL has no commit-time clock, and sequences hand out values in
  start order, not commit order; the lock gives both). Nested blocks are savepoints.
- **Round trips**: a write holds its inserts and closings back
  (:mod:`planner_svc.store.postgres.pending`) until it next reads the database or commits,
  then sends them as one statement per table, pipelined with the commit; it keeps the current
  rows it read or wrote (:class:`Known`: under the clock lock nobody else changes them), and
  :meth:`~planner_svc.store.postgres.PostgresStore.expect_writes` reads those of a whole
  ingest chunk at once. A savepoint costs nothing until its block must send rows. An ingest
  chunk therefore costs a few round trips whatever its number of documents, where one
  statement per write would cost about fifteen a document (docs/scaling.md).
- **Snapshots** (:meth:`snapshot`): ``BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY``; every
  read of the block sees the state of its first read, and writers are never blocked.

Durability: a write returns after ``COMMIT``, which the server makes durable before it answers
(``synchronous_commit = on``, PostgreSQL's default). A connection that breaks is reported as
:class:`~planner_svc.core.errors.StoreUnavailable` (nothing of the failed call was committed).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from typing import Any

import psycopg
from psycopg import pq

from planner_svc.core.errors import ConfigError, StoreUnavailable
from planner_svc.store.connections import ConnectionSet
from planner_svc.store.postgres.pending import PendingWrites
from planner_svc.store.postgres.schema import INIT_LOCK, MIGRATIONS, SCHEMA_VERSION, TABLES
from planner_svc.store.records import Edge, NodeVersion
from planner_svc.store.url import redacted

PAGE_ROWS = 2048
"""Rows per page of the iterators that read a whole table (no long-lived read transaction)."""

Row = tuple[Any, ...]


def live(alias: str = "") -> str:
    """SQL condition: the row's valid and tx intervals contain (%s valid, %s tx), half-open;
    four parameters: valid, valid, tx, tx."""
    a = f"{alias}." if alias else ""
    return (
        f"{a}valid_from <= %s AND ({a}valid_to IS NULL OR {a}valid_to > %s) "
        f"AND {a}tx_from <= %s AND ({a}tx_to IS NULL OR {a}tx_to > %s)"
    )


@dataclass(slots=True)
class Known:
    """The current rows a write transaction knows of, exactly: read inside it (under the clock
    row's lock no other writer changes them) and kept up to date by its own writes, so its
    later statements need not read them again.

    Attributes:
        sources: source_id -> (latest version tx, its canonical UTF-8 text), None for a source
            without versions.
        nodes: node_id -> its current version, None for a node without one (write with
            :meth:`set_node`).
        edges: src -> {(src, dst, relation): (edge_id, current version)} of every current edge
            leaving src (the inner mappings are replaced, never changed, so a copy of the outer
            one is independent).
        prefixes: node ids starting with one of these are known (absent: no current version),
            and so are the edges leaving them (extend with :meth:`add_prefixes`).
    """

    sources: dict[str, tuple[int, bytes] | None] = field(default_factory=dict)
    nodes: dict[str, NodeVersion | None] = field(default_factory=dict)
    edges: dict[str, dict[tuple[str, str, str], tuple[int, Edge]]] = field(
        default_factory=dict)
    prefixes: frozenset[str] = frozenset()
    _lengths: tuple[int, ...] = ()
    # prefix -> ids of ``nodes`` starting with it, and maybe ids a rolled-back block added
    # (the sets are shared between copies: a superset, filtered by ``nodes``)
    _under: dict[str, set[str]] = field(default_factory=dict)

    def copy(self) -> Known:
        return Known(sources=dict(self.sources), nodes=dict(self.nodes), edges=dict(self.edges),
                     prefixes=self.prefixes, _lengths=self._lengths, _under=dict(self._under))

    def _prefixes_of(self, node_id: str) -> list[str]:
        """The known prefixes ``node_id`` starts with (a set lookup per prefix length)."""
        return [node_id[:n] for n in self._lengths
                if n <= len(node_id) and node_id[:n] in self.prefixes]

    def add_prefixes(self, prefixes: Iterable[str]) -> None:
        """Mark the ids starting with ``prefixes`` known (call before :meth:`set_node` of the
        versions read for them)."""
        added = frozenset(prefixes) - self.prefixes
        if not added:
            return
        self.prefixes = self.prefixes | added
        self._lengths = tuple(sorted({len(p) for p in self.prefixes}))
        for node_id in self.nodes:
            for p in self._prefixes_of(node_id):
                self._under.setdefault(p, set()).add(node_id)

    def set_node(self, node_id: str, version: NodeVersion | None) -> None:
        """Record the node's current version (None: it has none)."""
        self.nodes[node_id] = version
        for p in self._prefixes_of(node_id):
            self._under.setdefault(p, set()).add(node_id)

    def covers(self, node_id: str) -> bool:
        """Whether ``node_id`` starts with a known prefix."""
        return bool(self._prefixes_of(node_id))

    def knows_node(self, node_id: str) -> bool:
        """Whether the node's current version (or its absence) is known."""
        return node_id in self.nodes or self.covers(node_id)

    def knows_edges_of(self, src: str) -> bool:
        """Whether every current edge leaving ``src`` is known."""
        return src in self.edges or self.covers(src)

    def ids_starting(self, prefix: str) -> list[str] | None:
        """Sorted ids of the nodes with a current version starting with ``prefix``; None
        unless every such node is known."""
        bases = self._prefixes_of(prefix)
        if not bases:
            return None
        return sorted(i for i in self._under.get(bases[0], ())
                      if i.startswith(prefix) and self.nodes.get(i) is not None)


@dataclass(slots=True)
class _WriteState:
    """What a write transaction keeps between its statements: the clock row it locked (the
    latest transaction time, advanced by the writes and stored once at commit), the next id
    of each table it inserted into, whether it changed anything, the settled facts it read or
    wrote (facts that never change once set, kept by the store after the commit), what it
    wrote that its own later statements would otherwise read back (the node versions it
    created, the source texts it stored), the rows it has not sent yet
    (:class:`~planner_svc.store.postgres.pending.PendingWrites`), and the current state it
    knows of (see :class:`Known`)."""

    last_tx: int | None
    committed_tx: int | None
    next_ids: dict[str, int] = field(default_factory=dict)
    changed: bool = False
    settled: dict[str, int] = field(default_factory=dict)
    created_nodes: set[int] = field(default_factory=set)
    written_texts: dict[tuple[str, int], bytes] = field(default_factory=dict)
    pending: PendingWrites = field(default_factory=PendingWrites)
    known: Known = field(default_factory=Known)

    def copy(self) -> _WriteState:
        return _WriteState(last_tx=self.last_tx, committed_tx=self.committed_tx,
                           next_ids=dict(self.next_ids), changed=self.changed,
                           settled=dict(self.settled), created_nodes=set(self.created_nodes),
                           written_texts=dict(self.written_texts),
                           pending=self.pending.copy(), known=self.known.copy())


@dataclass(slots=True)
class _Savepoint:
    """A savepoint of a write transaction: the state to restore when its block fails, and
    whether it was sent to the server (only when the block had to send writes: a block whose
    writes are all still pending rolls back by restoring the state alone)."""

    name: str
    saved: _WriteState
    sent: bool = False


class PgDatabase(ConnectionSet[psycopg.Connection[Row]]):
    """Connections, write transactions and snapshots of one PostgreSQL store.

    Use :meth:`planner_svc.store.postgres.PostgresStore.open`; this constructor neither
    connects nor creates the schema.
    """

    def __init__(self, url: str) -> None:
        super().__init__()
        self._url = url
        self._local = threading.local()
        self._write_lock = threading.RLock()
        self._settled: dict[str, int] = {}

    # ------------------------------------------------------------------ lifecycle

    @property
    def url(self) -> str:
        """The store's URL, password left out."""
        return redacted(self._url)

    def _init_schema(self) -> None:
        """Create or migrate the schema (one transaction under an advisory lock).

        Raises:
            ConfigError: (``store``) the database holds a newer schema, or tables of these
                names that are not a planner-svc store.
        """
        with self._write_lock:
            conn = self._conn()
            try:
                conn.execute("BEGIN")
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (INIT_LOCK,))
                version = self._schema_version(conn)
                if version > SCHEMA_VERSION:
                    raise ConfigError("store", f"{self.url} has schema version {version}; this "
                                               f"build reads up to {SCHEMA_VERSION}")
                for step in range(version + 1, SCHEMA_VERSION + 1):
                    for statement in MIGRATIONS[step].split(";"):
                        if statement.strip():
                            conn.execute(statement)  # type: ignore[call-overload]
                    conn.execute(
                        "INSERT INTO meta (key, value) VALUES ('schema_version', %s) "
                        "ON CONFLICT (key) DO UPDATE SET value = excluded.value", (str(step),))
                conn.execute("COMMIT")
            except BaseException:
                self._rollback(conn)
                raise

    def _schema_version(self, conn: psycopg.Connection[Row]) -> int:
        found = {
            r[0] for r in conn.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = ANY(%s)", (list(TABLES),))
        }
        if "meta" not in found:
            if found:
                raise ConfigError("store", f"{self.url} holds tables named "
                                           f"{', '.join(sorted(found))} but no planner-svc "
                                           "store: give the store a database (or schema) of "
                                           "its own")
            return 0
        row = conn.execute("SELECT value FROM meta WHERE key = 'schema_version'").fetchone()
        if row is None:
            raise ConfigError("store", f"{self.url}: table meta holds no schema_version: not a "
                                       "planner-svc store")
        return int(row[0])

    def _connect(self) -> psycopg.Connection[Row]:
        try:
            return psycopg.connect(self._url, autocommit=True)
        except psycopg.Error as exc:
            raise StoreUnavailable(f"cannot connect to {self.url}: {exc}") from exc

    def _conn(self) -> psycopg.Connection[Row]:
        conn: psycopg.Connection[Row] | None = getattr(self._local, "conn", None)
        if conn is not None and not self._closed:
            if not conn.closed:
                return conn
            if self._local.depth > 0 or self._local.snapshot:
                raise StoreUnavailable(f"the connection to {self.url} was lost")
        with self._conns_lock:
            if self._closed:
                raise self.closed_error()
        conn = self._connect()
        with self._conns_lock:
            if self._closed:
                conn.close()
                raise self.closed_error()
            self._conns = [c for c in self._conns if not c.closed]
            self._conns.append(conn)
        self._local.conn = conn
        self._local.depth = 0
        self._local.snapshot = False
        self._local.memo = {}
        self._local.tx = None
        self._local.savepoints = []
        return conn

    # ------------------------------------------------------------------ statements

    def _rows(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of one statement (after sending the running write's pending rows, so it
        reads them).

        Raises:
            StoreUnavailable: the connection broke.
        """
        self._flush()
        return self._fetch(sql, params)

    def _fetch(self, sql: str, params: Sequence[object] = ()) -> list[Row]:
        """All rows of one statement, sent as it is (pending rows stay pending)."""
        try:
            return self._conn().execute(sql, params).fetchall()  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"{self.url}: {exc}") from exc

    def _row(self, sql: str, params: Sequence[object] = ()) -> Row | None:
        """The first row of one statement, or None."""
        rows = self._rows(sql, params)
        return rows[0] if rows else None

    def _snapshot_constant(self, sql: str) -> Row | None:
        """The first row of a parameterless statement, read once per snapshot: inside one
        REPEATABLE READ snapshot its answer cannot change (the vector index asks for the
        newest node version before every search, a plan searches many times)."""
        self._conn()
        local = self._local
        if not local.snapshot:
            return self._row(sql)
        if sql not in local.memo:
            local.memo[sql] = self._row(sql)
        found: Row | None = local.memo[sql]
        return found

    def _run(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one statement (after the running write's pending rows); returns the rows it
        changed."""
        self._flush()
        return self._send(sql, params)

    def _send(self, sql: str, params: Sequence[object] = ()) -> int:
        """Run one statement as it is (pending rows stay pending); returns the rows changed."""
        try:
            cur = self._conn().execute(sql, params)  # type: ignore[arg-type]
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"{self.url}: {exc}") from exc
        return max(cur.rowcount, 0)

    def _pending(self) -> PendingWrites:
        """The running write's rows not yet sent (append to write a row)."""
        return self._tx().pending

    def _pipelined(
        self, steps: Sequence[tuple[str, Sequence[object]]]
    ) -> list[psycopg.Cursor[Row]]:
        """Run statements in one round trip (psycopg's pipeline mode); their cursors, read
        after all have run.

        Raises:
            StoreUnavailable: the connection broke.
        """
        try:
            conn = self._conn()
            with conn.pipeline():
                return [conn.execute(sql, params)  # type: ignore[arg-type]
                        for sql, params in steps]
        except psycopg.OperationalError as exc:
            raise StoreUnavailable(f"{self.url}: {exc}") from exc

    def _flush(self, then: Sequence[tuple[str, Sequence[object]]] = ()) -> None:
        """Send the running write's pending rows, one statement per table, and the statements
        ``then``, in one round trip (pipelined). Savepoints whose blocks wrote some of the rows
        are sent first, in their place: the rows written before a savepoint, ``SAVEPOINT``, the
        rows written in its block, and so on, so a block that fails later still rolls back
        exactly its rows."""
        local = self._local
        tx: _WriteState | None = getattr(local, "tx", None)
        if tx is None or not tx.pending:
            if then:
                self._pipelined(then)
            return
        stack: list[_Savepoint] = local.savepoints
        unsent = [sp for sp in stack if not sp.sent]
        steps: list[tuple[str, Sequence[object]]] = []
        before = unsent[0].saved.pending if unsent else tx.pending
        steps.extend(before.statements())
        for i, sp in enumerate(unsent):
            steps.append((f"SAVEPOINT {sp.name}", ()))
            after = unsent[i + 1].saved.pending if i + 1 < len(unsent) else tx.pending
            steps.extend(after.since(sp.saved.pending).statements())
        steps.extend(then)
        self._pipelined(steps)
        for sp in unsent:
            sp.sent = True
            sp.saved.pending = PendingWrites()
        tx.pending = PendingWrites()

    def _next_id(self, table: str, column: str, count: int = 1) -> int:
        """The first of ``count`` new ids of ``table`` (``max(column) + 1`` when the write
        transaction first asks, then counted on): inside a write, under the clock lock, so no
        other writer allocates concurrently; a rolled-back savepoint gives its ids back."""
        tx = self._tx()
        first = tx.next_ids.get(table)
        if first is None:  # none of this table's rows is pending: no need to send them
            rows = self._fetch(f"SELECT coalesce(max({column}), 0) + 1 FROM {table}")
            first = int(rows[0][0])
        tx.next_ids[table] = first + count
        return first

    # ------------------------------------------------------------------ transactions

    @staticmethod
    def _rollback(conn: psycopg.Connection[Row]) -> None:
        if conn.closed:
            return
        if conn.info.transaction_status != pq.TransactionStatus.IDLE:
            with suppress(psycopg.OperationalError):
                conn.execute("ROLLBACK")

    def _tx(self) -> _WriteState:
        state: _WriteState | None = getattr(self._local, "tx", None)
        if state is None or self._local.depth == 0:
            raise RuntimeError("not inside a write transaction")
        return state

    @contextmanager
    def _write(self, *, savepoint: bool = True) -> Iterator[None]:
        """A write transaction; nested, a savepoint (restoring the clock, the id counters, the
        pending rows and the known state on rollback; sent to the server only when its block
        sends rows, see :meth:`_flush`), or with ``savepoint=False`` a block that joins the
        running transaction (for a method that refuses before it writes anything)."""
        self._conn()
        local = self._local
        if local.depth > 0:
            if not savepoint:
                local.depth += 1
                try:
                    yield
                finally:
                    local.depth -= 1
                return
            sp = _Savepoint(name=f"sp{local.depth}", saved=local.tx.copy())
            local.savepoints.append(sp)
            local.depth += 1
            try:
                yield
            except BaseException:
                if sp.sent:
                    self._send(f"ROLLBACK TO SAVEPOINT {sp.name}")
                    self._send(f"RELEASE SAVEPOINT {sp.name}")
                local.tx = sp.saved
                raise
            else:
                if sp.sent:
                    self._send(f"RELEASE SAVEPOINT {sp.name}")
            finally:
                local.depth -= 1
                local.savepoints.pop()
            return
        if local.snapshot:
            raise RuntimeError("a write cannot run inside Store.snapshot()")
        with self._write_lock:
            conn = local.conn
            local.depth = 1
            local.savepoints = []
            try:
                _begin, lock = self._pipelined([("BEGIN ISOLATION LEVEL READ COMMITTED", ()),
                                                ("SELECT last_tx FROM clock FOR UPDATE", ())])
                rows = lock.fetchall()
                assert rows
                last = None if rows[0][0] is None else int(rows[0][0])
                local.tx = _WriteState(last_tx=last, committed_tx=last)
                yield
                tx = local.tx
                ending: list[tuple[str, Sequence[object]]] = []
                if tx.changed or tx.last_tx != tx.committed_tx:
                    ending.append(("UPDATE clock SET last_tx = %s, generation = generation + %s",
                                   (tx.last_tx, 1 if tx.changed else 0)))
                ending.append(("COMMIT", ()))
                self._flush(then=ending)
                self._settled.update(tx.settled)
            except BaseException:
                self._rollback(conn)
                raise
            finally:
                local.depth = 0
                local.tx = None
                local.savepoints = []

    def _changed(self) -> None:
        self._tx().changed = True

    def _settled_fact(self, key: str) -> int | None:
        """A fact that never changes once committed (the vector dimension), if known."""
        known = self._settled.get(key)
        if known is None and getattr(self._local, "depth", 0) > 0:
            known = self._tx().settled.get(key)
        return known

    def _settle(self, key: str, value: int) -> None:
        """Remember a settled fact: at once outside a write, at its commit inside one."""
        if getattr(self._local, "depth", 0) > 0:
            self._tx().settled[key] = value
        else:
            self._settled[key] = value

    @contextmanager
    def transaction(self) -> Iterator[None]:
        """Group the writes made inside the block into one atomic commit (a savepoint when
        nested).

        Raises:
            RuntimeError: called inside :meth:`snapshot`.
            StoreUnavailable: the connection broke (nothing was committed).
        """
        with self._write():
            yield

    @contextmanager
    def snapshot(self) -> Iterator[None]:
        """Run the reads inside the block against one consistent snapshot (REPEATABLE READ,
        taken at the first read). Writes are not allowed inside (RuntimeError). Nested use (or
        use inside :meth:`transaction`) joins the running transaction."""
        self._conn()
        local = self._local
        if local.snapshot or local.depth > 0:
            yield
            return
        self._run("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
        local.snapshot = True
        local.memo = {}
        try:
            yield
        finally:
            local.snapshot = False
            local.memo = {}
            conn = local.conn
            if not conn.closed and conn.info.transaction_status != pq.TransactionStatus.IDLE:
                with suppress(psycopg.OperationalError):
                    conn.execute("COMMIT")
