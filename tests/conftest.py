"""Test-wide setup: server logs go to stderr, so commands under test own stdout; the store
backends (``backend`` runs a test against the SQLite and the PostgreSQL store, the latter on
one real server per test session)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from planner_svc.server.observe import configure_logging
from tests.pgserver import Backend, PostgresServer, SchemaPerTest

configure_logging(json_logs=False, level="info")

BACKENDS = ("sqlite", "postgresql")
"""Every store backend: a test taking ``backend`` runs once per name."""


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server for the whole session (started on first use, stopped at the end)."""
    with PostgresServer(fsync=False) as server:
        yield server


@pytest.fixture(scope="session")
def postgres_schemas(postgres_server: PostgresServer) -> SchemaPerTest:
    """Fresh empty stores on the session's server."""
    return SchemaPerTest(postgres_server)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest, tmp_path: Path) -> Backend:
    """An empty store of each backend (the test runs once per backend)."""
    if request.param == "postgresql":
        schemas: SchemaPerTest = request.getfixturevalue("postgres_schemas")
        return Backend("postgresql", tmp_path / "replica", schemas.url())
    return Backend("sqlite", tmp_path / "data", None)
