"""The PostgreSQL store: the union of its parts over one :class:`PgDatabase`."""

from __future__ import annotations

from planner_svc.store.postgres.db import PgDatabase
from planner_svc.store.postgres.edges import PgEdges
from planner_svc.store.postgres.feed import PgChangeFeed
from planner_svc.store.postgres.ledger import PgSpanLedger
from planner_svc.store.postgres.nodes import PgNodes
from planner_svc.store.postgres.sources import PgSourceVersions
from planner_svc.store.postgres.vectors import PgVectors


class PostgresStore(PgSourceVersions, PgSpanLedger, PgNodes, PgEdges, PgVectors, PgChangeFeed):
    """Sources, span ledger, bitemporal nodes and edges and vectors in one PostgreSQL database,
    shared by every replica; the same methods, rules and results as
    :class:`planner_svc.store.Store` (full-text ranking is not the store's: it is the recall
    catalog's, :mod:`planner_svc.index.catalog`, on every backend).

    Open with :meth:`open`; use as a context manager or call :meth:`close`. Safe to share
    between threads (a connection per thread).
    """

    @classmethod
    def open(cls, url: str) -> PostgresStore:
        """Connect to the database at ``url`` (``postgresql://user@host:port/db``; libpq's
        environment variables and password file apply) and create or migrate the schema.

        Raises:
            ConfigError: (``store``) the database holds a newer schema or foreign tables of
                the store's names.
            StoreUnavailable: the server cannot be reached.
        """
        store = cls(url)
        try:
            store._init_schema()
        except BaseException:
            store.close()
            raise
        return store


__all__ = ["PgDatabase", "PostgresStore"]
