"""The PostgreSQL store: the union of its parts over one :class:`PgDatabase`."""

from __future__ import annotations

from collections.abc import Iterable

from planner_svc.store.postgres.db import PgDatabase
from planner_svc.store.postgres.edges import PgEdges
from planner_svc.store.postgres.feed import PgChangeFeed
from planner_svc.store.postgres.ledger import PgSpanLedger
from planner_svc.store.postgres.nodes import PgNodes
from planner_svc.store.postgres.sources import PgSourceVersions
from planner_svc.store.postgres.vectors import PgVectors


class PostgresStore(PgSourceVersions, PgSpanLedger, PgEdges, PgNodes, PgVectors, PgChangeFeed):
    """Sources, span ledger, bitemporal nodes and edges and vectors in one PostgreSQL database,
    shared by every replica; the same methods, rules and results as
    :class:`planner_svc.store.Store` (full-text ranking is not the store's: it is the recall
    catalog's, :mod:`planner_svc.index.catalog`, on every backend).

    Open with :meth:`open`; use as a context manager or call :meth:`close`. Safe to share
    between threads (a connection per thread).
    """

    def expect_writes(
        self,
        *,
        source_ids: Iterable[str],
        node_ids: Iterable[str],
        node_prefixes: Iterable[str] = (),
    ) -> None:
        """Read at once what the running write transaction will write over: the latest
        version of each source, the current versions of the nodes named or starting with one
        of ``node_prefixes``, the current edges leaving them, and the next ids (three round
        trips; later statements then find them known instead of reading them one document at
        a time). Outside a write transaction it does nothing.

        See :meth:`planner_svc.ingest.ports.IngestStore.expect_writes`.
        """
        if self._local_depth() == 0:
            return
        self.load_sources(source_ids)
        self.load_nodes(node_ids, node_prefixes)
        row = self._fetch(
            "SELECT (SELECT coalesce(max(id), 0) + 1 FROM source_versions), "
            "(SELECT coalesce(max(version_id), 0) + 1 FROM nodes), "
            "(SELECT coalesce(max(edge_id), 0) + 1 FROM edges)")[0]
        next_ids = self._tx().next_ids
        for table, first in zip(("source_versions", "nodes", "edges"), row, strict=True):
            next_ids.setdefault(table, int(first))

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
