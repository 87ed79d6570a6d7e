"""The write ports: what ingestion and the memory service need from a store backend.

Like the read ports of :mod:`planner_svc.recall.ports`, these protocols are the contract a
second store backend (PostgreSQL) implements with the same semantics; the embedded
:class:`planner_svc.store.Store` satisfies them. Conventions:

- Times are integer microseconds since the Unix epoch; offsets are UTF-8 byte offsets into a
  source version's canonical text; intervals are half-open.
- Transaction time never moves backwards. Every write records the transaction time it writes at
  and refuses one earlier than the latest the store has recorded (InvalidRequest naming the
  field); :meth:`WriteTransactions.stamped` hands out a time that is safe to write at.
- A write method is atomic and durable when it returns, unless it runs inside
  :meth:`WriteTransactions.transaction` (or a ``stamped`` block), which commits once at the end
  of the outermost block; an exception leaving an inner block undoes only that block's writes.
- Writes that would change nothing (identical text, node or edge) write nothing and record no
  time.
- Validation errors are :class:`~planner_svc.core.errors.InvalidRequest` whose ``field`` names
  the offending argument; nothing of the failed call is written.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
import numpy.typing as npt

from planner_svc.core.model import SpanRef
from planner_svc.store.records import (
    Edge,
    EdgeWrite,
    LedgerSpan,
    NodeVersion,
    NodeWrite,
    NodeWriteResult,
)

__all__ = ["IndexCatchUp", "IngestStore", "MemoryStore", "WriteTransactions"]


class WriteTransactions(Protocol):
    """Atomic groups of writes and the transaction clock."""

    def transaction(self) -> AbstractContextManager[None]:
        """A block whose writes commit together (a savepoint when nested)."""
        ...

    def stamped(
        self,
        proposed_us: int | None,
        *,
        now_us: int,
        field: str = "version_tx",
        or_clock: bool = False,
    ) -> AbstractContextManager[int]:
        """A write block (a savepoint when nested) stamped with one transaction time, yielded.

        The time is ``proposed_us`` when given, which must lie in ``[last_tx, now_us]`` (equal
        to the latest recorded time is allowed, so one bulk load can stamp every document with
        one time); else the store's clock ``max(now_us, last_tx + 1)``, strictly increasing
        across every writer. ``or_clock`` takes the clock instead of refusing a proposal
        outside that range.

        Raises:
            InvalidRequest: (``field``) the proposal is in the future or earlier than the
                latest recorded transaction time (unless ``or_clock``).
        """
        ...

    def last_tx(self) -> int | None:
        """The latest transaction time any write recorded, microseconds; None when empty."""
        ...


class IngestStore(WriteTransactions, Protocol):
    """Everything :func:`planner_svc.ingest.ingest_documents` reads and writes."""

    def get_meta(self, key: str) -> str | None:
        """A free-form metadata value (the embedder's name is kept under ``embedder``)."""
        ...

    def set_meta(self, key: str, value: str) -> None:
        """Set a free-form metadata value."""
        ...

    def expect_writes(
        self,
        *,
        source_ids: Iterable[str],
        node_ids: Iterable[str],
        node_prefixes: Iterable[str] = (),
    ) -> None:
        """Announce, inside a write transaction, what it will write over: these sources, these
        nodes and those whose ids start with one of ``node_prefixes`` (non-empty), and the edges
        leaving them. A backend whose every statement is a network round trip (PostgreSQL)
        reads their current rows now, in a few queries, instead of once per document; results
        and rules are unchanged, and a backend may ignore the call."""
        ...

    def latest_version(self, source_id: str) -> int | None:
        """Transaction time of the source's latest version; None for an unknown source."""
        ...

    def latest_texts(self, source_ids: Iterable[str]) -> Mapping[str, tuple[int, str]]:
        """Source id -> (latest version's transaction time, its canonical text), in one query;
        unknown sources are absent."""
        ...

    def source_text(self, source_id: str, tx_us: int) -> str | None:
        """Whole canonical text of one version; None when it does not exist."""
        ...

    def iter_sources(self) -> Iterator[tuple[str, str, int]]:
        """Every ``(source_id, latest title, latest version tx)``, by source id."""
        ...

    def source_titles_after(self, after_row_id: int) -> list[tuple[int, str, str]]:
        """Up to a page of ``(row id, source_id, title)`` of source versions past a row id, in
        row id order (commit order); ``[]`` when there are none."""
        ...

    def put_source_version(
        self, source_id: str, text: str, *, title: str, media_type: str, tx_us: int
    ) -> tuple[int, bool]:
        """Record a new version unless the canonical text equals the latest version's.

        Returns:
            ``(version_tx_us, created)``: ``(tx_us, True)`` for a new version, or the latest
            version's time and False when the text is unchanged (nothing written).

        Raises:
            InvalidRequest: ``source_id`` malformed, ``text`` blank or not UTF-8, ``version_tx``
                not later than the source's latest version or earlier than the clock allows.
        """
        ...

    def add_spans(self, source_id: str, tx_us: int, spans: Iterable[LedgerSpan]) -> int:
        """Record ledger rows ``(start, end, kind, location)`` of one version (a 3-tuple
        without the location records none); returns the rows written.

        The location (:class:`~planner_svc.core.model.Location`: 1-based page, heading path,
        0-based notebook cell) is a plain value of the ledger row, kept as the JSON object
        :func:`planner_svc.store.records.encode_location` writes (keys ``page``,
        ``headingPath``, ``cellIndex``, those that are set; NULL for none) in a text or JSON
        column beside the kind, and read back with the kind
        (:meth:`planner_svc.index.catalog_sync.CatalogFeed.ledger_rows`).

        Raises:
            InvalidRequest: unknown version, a span outside the text, off a code point
                boundary, of an unknown kind, or a location that is not a Location.
        """
        ...

    def write_nodes(self, writes: Sequence[NodeWrite], *, tx_us: int) -> list[NodeWriteResult]:
        """Write node versions at ``tx_us``: a current version that differs is closed at
        ``tx_us`` and superseded; an identical write is a no-op (``created`` False). One result
        per write, in input order."""
        ...

    def retire_nodes(self, node_ids: Iterable[str], *, tx_us: int) -> int:
        """Close the current version of each node at ``tx_us``; returns the versions closed."""
        ...

    def current_node_ids(self, prefix: str) -> list[str]:
        """Ids of nodes with a current version starting with ``prefix``, sorted."""
        ...

    def current_nodes(self, node_ids: Iterable[str]) -> Mapping[str, NodeVersion]:
        """Current versions (open transaction interval) of the given nodes; others absent."""
        ...

    def max_version_id(self) -> int:
        """Largest node version id written so far (0 when there is none): a size measure."""
        ...

    def iter_current_nodes(
        self, *, label: str | None = None, after_version_id: int = 0
    ) -> Iterator[NodeVersion]:
        """Every current node version (carrying ``label`` when given), by version id."""
        ...

    def current_nodes_matching_phrases(
        self, phrases: Iterable[str], *, label: str, commonness: Mapping[str, int] | None = None
    ) -> list[NodeVersion]:
        """Current versions carrying ``label`` whose text may contain the words of one of
        ``phrases`` in sequence (a superset of the exact matches; callers verify), by version
        id, each once. ``commonness`` (lower-case word -> a count, e.g. of titles holding it)
        hints which of a phrase's words is rarest; it never changes which exact matches are
        returned."""
        ...

    def put_vectors(self, items: Iterable[tuple[int, npt.NDArray[np.float32]]]) -> int:
        """Store float32 ``(dim,)`` vectors by node version id; returns the number stored.

        Raises:
            InvalidRequest: an unknown version id, or a vector of another dimension.
        """
        ...

    def get_vectors(self, version_ids: Iterable[int]) -> Mapping[int, npt.NDArray[np.float32]]:
        """Stored vectors by version id; versions without one are absent."""
        ...

    def current_out_edges(self, src_ids: Iterable[str]) -> Sequence[Edge]:
        """Current edge versions leaving ``src_ids``, sorted by ``(src, dst, relation)``."""
        ...

    def put_edges(
        self, writes: Iterable[EdgeWrite], *, tx_us: int, replace_out_of: Iterable[str] = ()
    ) -> int:
        """Write edge versions at ``tx_us`` (superseding a differing current version of the
        same key; the last write of a key wins); returns the versions created."""
        ...

    def retire_edges(self, keys: Iterable[tuple[str, str, str]], *, tx_us: int) -> int:
        """Close the current version of each ``(src, dst, relation)`` at ``tx_us``; returns the
        versions closed."""
        ...


class MemoryStore(WriteTransactions, Protocol):
    """Everything the memory service (API-written nodes and edges) writes."""

    def check_provenance(self, spans: Sequence[SpanRef], *, field: str) -> None:
        """Refuse provenance a plan could not cite: every span names a committed version,
        lies inside its text and starts and ends on code point boundaries.

        Raises:
            InvalidRequest: (``{field}[i].source_version_tx``, ``.start`` or ``.end``).
        """
        ...

    def write_nodes(self, writes: Sequence[NodeWrite], *, tx_us: int) -> list[NodeWriteResult]:
        """As :meth:`IngestStore.write_nodes`."""
        ...

    def put_vector(self, version_id: int, vector: npt.NDArray[np.float32]) -> None:
        """Store the float32 ``(dim,)`` vector of one node version (replacing any earlier)."""
        ...

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
        """Write one edge version at ``tx_us``; returns the transaction time of the edge's
        current version (``tx_us``, or the existing one's when the write was identical).

        Raises:
            InvalidRequest: (``src_node_id``, ``dst_node_id``, ``relation``, ``weight``,
                ``valid_to``) malformed.
        """
        ...


class IndexCatchUp(Protocol):
    """A derived vector index that can be caught up with the store after a write."""

    def sync(self) -> int:
        """Index what the store holds beyond the index (forward only); returns the vectors
        added."""
        ...
