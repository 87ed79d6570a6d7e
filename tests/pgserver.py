"""A throwaway PostgreSQL server for tests and benchmarks: Debian's ``postgresql`` package,
``initdb`` in a temporary directory, ``pg_ctl`` on a free loopback port, stopped afterwards;
and a counter of the statements and round trips a client sends (:class:`StatementCounter`).

The binaries are found on ``PATH`` or under ``/usr/lib/postgresql/<version>/bin`` (where
Debian installs them; ``make setup`` installs the package when they are missing). PostgreSQL
refuses to run as root, so as root the server runs as the ``postgres`` user the package
creates.
"""

from __future__ import annotations

import itertools
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

import psycopg

from planner_svc.store.open import AnyStore, open_store

PACKAGE = "postgresql"
"""The Debian package that provides the server."""


def server_bin_dir() -> Path:
    """The directory holding ``initdb``, ``pg_ctl`` and ``postgres``.

    Raises:
        RuntimeError: the server is not installed (the message names the package).
    """
    found = shutil.which("initdb")
    if found and shutil.which("pg_ctl"):
        return Path(found).resolve().parent
    versions = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"),
                      key=lambda p: int(p.parent.parent.name) if p.parent.parent.name.isdigit()
                      else 0)
    if versions:
        return versions[-1].parent
    raise RuntimeError(f"PostgreSQL is not installed: install the Debian package {PACKAGE!r} "
                       "(`make setup` does)")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that is free now (the OS picks it)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class PostgresServer:
    """One server in a temporary directory (``with PostgresServer() as pg: pg.url("db")``).

    Args:
        fsync: keep PostgreSQL's durable default (True), or turn fsync off for a faster test
            server (a killed server process still loses nothing: the OS holds the pages).
    """

    def __init__(self, *, fsync: bool = True) -> None:
        self._fsync = fsync
        self._dir: Path | None = None
        self.port = 0
        self.user = "planner"
        self._as: list[str] = []

    def _run(self, *args: str) -> None:
        subprocess.run([*self._as, *args], check=True, stdout=subprocess.DEVNULL,
                       stderr=subprocess.PIPE, timeout=120)

    def start(self) -> Self:
        """initdb and start on a free port (waits until it accepts connections)."""
        bindir = server_bin_dir()
        self._dir = Path(tempfile.mkdtemp(prefix="planner-pg-"))
        data, sockets = self._dir / "data", self._dir / "run"
        sockets.mkdir()
        if os.geteuid() == 0:
            owner = pwd.getpwnam("postgres")
            for path in (self._dir, sockets):
                os.chown(path, owner.pw_uid, owner.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]
        self._run(str(bindir / "initdb"), "-D", str(data), "-U", self.user, "--auth=trust",
                  "-E", "UTF8", "--locale=C", "--no-sync")
        self.port = free_port()
        options = (f"-p {self.port} -k {sockets} -c listen_addresses=127.0.0.1 "
                   f"-c fsync={'on' if self._fsync else 'off'} -c max_connections=200")
        self._run(str(bindir / "pg_ctl"), "-D", str(data), "-o", options, "-l",
                  str(self._dir / "server.log"), "-w", "-t", "60", "start")
        return self

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its directory. Idempotent."""
        if self._dir is None:
            return
        try:
            self._run(str(server_bin_dir() / "pg_ctl"), "-D", str(self._dir / "data"),
                      "-m", "fast", "-w", "stop")
        finally:
            shutil.rmtree(self._dir, ignore_errors=True)
            self._dir = None

    def url(self, database: str = "postgres") -> str:
        """The connection URL of one database of this server."""
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> str:
        """Create an empty database; returns its URL."""
        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')  # type: ignore[arg-type]
        return self.url(name)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.stop()


@dataclass(frozen=True, slots=True)
class Backend:
    """One store backend under test: its name, the data directory and (PostgreSQL) the URL;
    :meth:`open` opens the same store again each time."""

    name: str
    data_dir: Path
    url: str | None

    def open(self) -> AnyStore:
        """Open (creating on first use) this backend's store."""
        return open_store(self.data_dir, self.url)


class SchemaPerTest:
    """Fresh, empty stores on one server: each :meth:`url` is a new schema of the server's
    database (``search_path`` set in the URL), much cheaper than a database per test."""

    def __init__(self, server: PostgresServer) -> None:
        self._server = server
        self._count = itertools.count()

    def url(self) -> str:
        """The URL of a new, empty schema."""
        name = f"t{next(self._count)}"
        with psycopg.connect(self._server.url(), autocommit=True) as conn:
            conn.execute(f"CREATE SCHEMA {name}")  # type: ignore[arg-type]
        return f"{self._server.url()}?options=-csearch_path%3D{name}"


class StatementCounter:
    """Counts, while installed (all threads), the statements sent through
    ``psycopg.Connection.execute`` and the round trips they cost: one a statement, except that
    the statements of one ``Connection.pipeline()`` block share one."""

    def __init__(self) -> None:
        self.statements = 0
        self.round_trips = 0
        self._execute: Callable[..., Any] = psycopg.Connection.execute
        self._pipeline: Callable[..., Any] = psycopg.Connection.pipeline
        self._inside = threading.local()

    def __enter__(self) -> StatementCounter:
        execute, pipeline, counter = self._execute, self._pipeline, self

        def counting(conn: Any, *args: Any, **kwargs: Any) -> Any:
            counter.statements += 1
            if not getattr(counter._inside, "depth", 0):
                counter.round_trips += 1
            return execute(conn, *args, **kwargs)

        @contextmanager
        def counted_pipeline(conn: Any) -> Iterator[Any]:
            depth = getattr(counter._inside, "depth", 0)
            if depth == 0:
                counter.round_trips += 1
            counter._inside.depth = depth + 1
            try:
                with pipeline(conn) as p:
                    yield p
            finally:
                counter._inside.depth = depth

        psycopg.Connection.execute = counting  # type: ignore[method-assign]
        psycopg.Connection.pipeline = counted_pipeline  # type: ignore[method-assign,assignment]
        return self

    def __exit__(self, *exc: object) -> None:
        psycopg.Connection.execute = self._execute  # type: ignore[method-assign]
        psycopg.Connection.pipeline = self._pipeline  # type: ignore[method-assign]
