"""The embedded store: one SQLite file in WAL mode (see docs/architecture.md, "Store").

:class:`Store` is a facade: each concern lives in its own module and contributes one part, and
the store is their union over one :class:`~planner_svc.store.db.Database` (connections, write
transactions, snapshots) and its :class:`~planner_svc.store.clock.TransactionClock`:

=====================================  ===================================================
:mod:`planner_svc.store.sources`        sources and versions (canonical text, titles, slices)
:mod:`planner_svc.store.ledger`         span ledger (structural kind per span)
:mod:`planner_svc.store.nodes`          bitemporal nodes with provenance spans
:mod:`planner_svc.store.edges`          bitemporal weighted edges
:mod:`planner_svc.store.fulltext`       full-text search (FTS5, BM25) with filters
:mod:`planner_svc.store.vectors`        node-version vectors
:mod:`planner_svc.store.feed`           the change feed of the derived structures
:mod:`planner_svc.store.clock`          transaction clock (``last_tx``, ``stamped``), metadata
:mod:`planner_svc.store.db`             connections, transactions, snapshots, batch reads
=====================================  ===================================================

Units everywhere: times are integer microseconds since the Unix epoch, offsets are UTF-8 byte
offsets into a source version's canonical text (see :mod:`planner_svc.store.text`), intervals
are half-open ``[from, to)`` with ``None`` as an open upper bound. Concurrency and durability:
see :mod:`planner_svc.store.db`. The store satisfies the read ports of
:mod:`planner_svc.recall.ports` and :class:`planner_svc.index.VectorSource`, and the write ports
of :mod:`planner_svc.ingest.ports`.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from planner_svc.store.edges import Edges
from planner_svc.store.feed import ChangeFeed
from planner_svc.store.fulltext import FullText
from planner_svc.store.ledger import SpanLedger
from planner_svc.store.nodes import Nodes
from planner_svc.store.sources import SourceVersions
from planner_svc.store.vectors import Vectors

STORE_FILE = "store.sqlite"
"""File name of the database inside the data directory."""


class Store(SourceVersions, SpanLedger, Nodes, Edges, FullText, Vectors, ChangeFeed):
    """Sources, span ledger, bitemporal nodes and edges, full-text index and vectors.

    Open with :meth:`Store.open`; use as a context manager or call :meth:`close`. Safe to share
    between threads (see :mod:`planner_svc.store.db`).
    """

    def expect_writes(
        self,
        *,
        source_ids: Iterable[str],
        node_ids: Iterable[str],
        node_prefixes: Iterable[str] = (),
    ) -> None:
        """Accepted and ignored: reads of an embedded database cost no round trip, so there is
        nothing to gain by reading ahead (see
        :meth:`planner_svc.ingest.ports.IngestStore.expect_writes`)."""
        del source_ids, node_ids, node_prefixes

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
