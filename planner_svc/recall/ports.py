"""The read ports of recall: what Phase A needs from a store, a vector index and an embedder.

These protocols are the contract a store backend implements. Both store backends
(:class:`planner_svc.store.Store`, embedded SQLite, and
:class:`planner_svc.store.postgres.PostgresStore`, shared PostgreSQL), the vector index
(:class:`planner_svc.index.FreshIndex`) and :mod:`planner_svc.embed` satisfy them, with the
same shapes, units, orderings and sentinels. Ranking is not a store's: full-text (BM25) scores,
the label and property filters included, come from the recall catalog every replica derives
from the store (:mod:`planner_svc.index.catalog`), so both backends rank identically. Token counting
is the port :class:`planner_svc.core.tokens.TokenAccounting`; the write ports are in
:mod:`planner_svc.ingest.ports`.

Conventions every method keeps:

- Times are integer microseconds since the Unix epoch. A read "as of ``(valid_us, tx_us)``"
  sees the versions whose valid interval ``[valid_from, valid_to)`` contains ``valid_us`` and
  whose transaction interval ``[tx_from, tx_to)`` contains ``tx_us`` (half-open; an absent upper
  bound is open).
- A span coordinate is a :data:`~planner_svc.core.model.CoordKey`
  ``(source_id, source_version_tx, start, end)``: the version's transaction time in
  microseconds and a half-open range of UTF-8 byte offsets into that version's canonical text.
- Batched reads take any iterable (duplicates allowed) and return a mapping holding only the
  keys found: absence is the sentinel for "no such row", never ``None`` values.
- Results are deterministic: equal store states give equal results, bit for bit, in the order
  documented (the plan hash depends on it).
- Inside :meth:`RecallStore.snapshot` every read of the calling thread sees one committed
  state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Protocol

import numpy as np
import numpy.typing as npt

from planner_svc.core.model import CoordKey, Direction, SpanRef
from planner_svc.index.source import LiveVersions, VectorHits, VectorRows, VersionIds

__all__ = [
    "EdgeView",
    "LiveVersions",
    "NodeVersionView",
    "QueryEmbedder",
    "RecallStore",
    "SessionEmbedder",
    "VectorHitView",
    "VectorSearch",
]


class NodeVersionView(Protocol):
    """One node version live at the time of the read."""

    @property
    def node_id(self) -> str:
        """The node's stable id (1..1024 characters)."""
        ...

    @property
    def confidence(self) -> float:
        """Confidence of the version, in (0, 1]; the semantic leg decays it with age."""
        ...

    @property
    def valid_from_us(self) -> int:
        """Start of the valid interval, microseconds (the age of the version counts from it)."""
        ...

    @property
    def provenance(self) -> Sequence[SpanRef]:
        """Spans the version was derived from, sorted and distinct; empty for a node without
        evidence (it is recalled and counted, but yields no candidate)."""
        ...


class EdgeView(Protocol):
    """One edge version live at the time of the read."""

    @property
    def src(self) -> str:
        """Node id the edge leaves."""
        ...

    @property
    def dst(self) -> str:
        """Node id the edge enters."""
        ...

    @property
    def weight(self) -> float:
        """Weight in [0, 1], multiplied into hop-expansion scores."""
        ...


class RecallStore(Protocol):
    """The store reads of recall; every read is as of ``(valid_us, tx_us)`` or by coordinate."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads (on the calling thread) all see one committed store state.

        Re-entrant: a nested block joins the running one. Must not block writers: a reader
        holding a snapshot while another thread or process commits is the normal case, and the
        reader keeps seeing the state of its first read.
        """
        ...

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> Mapping[str, NodeVersionView]:
        """node_id -> its version live as of ``(valid_us, tx_us)``; nodes with no live version
        are absent (recall counts them as ``nodes_not_live``)."""
        ...

    def edges_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int, *, direction: Direction = "out"
    ) -> Sequence[EdgeView]:
        """Edges live as of ``(valid_us, tx_us)`` that leave (``out``), enter (``in``) or touch
        (``both``) one of ``node_ids``, each edge once, sorted by ``(src, dst, relation)``."""
        ...

    def span_kinds(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        """Span-ledger kind (``paragraph``, ``heading``, ``cell``, ``code`` or ``body``) of each
        exact coordinate; keys without a ledger row are absent (recall then uses ``body`` and
        counts ``kind_missing``)."""
        ...

    def canonical_slices(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        """Text of each coordinate: bytes ``[start, end)`` of that version's canonical UTF-8
        text, decoded. Absent when the version does not exist, the range is outside
        ``0 <= start <= end <= len`` or an offset falls inside a multi-byte character (recall
        skips the span and counts ``slices_missing``)."""
        ...


class VectorHitView(Protocol):
    """One candidate of a vector search: a live node version and its stored vector."""

    @property
    def node_id(self) -> str:
        """The node."""
        ...

    @property
    def version_id(self) -> int:
        """The node's version whose vector matched (the store's version id)."""
        ...

    @property
    def score(self) -> float:
        """The index's own similarity, higher is better. It only ranks candidates: it may differ
        in its last bits between processes and never enters a weight."""
        ...

    @property
    def vector(self) -> npt.NDArray[np.float32]:
        """The stored unit vector of that version, float32 ``(dim,)``: recall recomputes the
        similarity from it exactly."""
        ...


class VectorSearch(Protocol):
    """As-of nearest-neighbour candidates over node-version vectors (cosine similarity).

    Liveness: a search asks ``live`` (:class:`~planner_svc.index.source.LiveVersions`: which
    of these version ids are live as of ``(valid_us, tx_us)``) about its candidates; a plan
    passes its recall catalog, so the index needs no store read for it. Without ``live`` the
    index asks the store it was built from.
    """

    def current(self) -> VectorSearch:
        """The index brought up to the calling thread's store snapshot (forward only; one
        cheap store read when it is current), then fixed: searches and reads through the
        result neither check the store again nor see a later catch-up. A plan takes one when
        it first needs the index and uses it for every search and read of that plan."""
        ...

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> Sequence[VectorHitView]:
        """The ``k`` (>= 1) nodes most similar to ``query`` among versions live as of
        ``(valid_us, tx_us)``.

        Args:
            query: ``(dim,)`` numbers: checked and normalised, unless ``unit``.
            live: which candidates are live (default: the store's answer); a version it does
                not know is not live.
            unit: ``query`` is a float32 unit vector already (an embedder's row, or a caller's
                vector once validated and normalised by
                :func:`~planner_svc.recall.semantic.query_vector`, which names the field
                ``semantic.vector``): used as it is.

        Returns:
            At most ``k`` hits, each node once (its best live version), score descending, ties
            by node id; fewer when fewer nodes are live, ``[]`` when none is. The set must equal
            a brute-force scan up to the index's float32 rounding: recall re-ranks it exactly.

        Raises:
            InvalidRequest: (``semantic.vector``) a query that is not a float32 unit vector
                and has the wrong shape, is not finite or has zero norm; (``semantic.k``)
                ``k < 1``.
        """
        ...

    def search_columns(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> VectorHits:
        """:meth:`search`'s hits as columns, in the same order (recall reads them without
        one object per hit)."""
        ...

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """Where the stored unit vectors of ``version_ids`` sit, in their order: each one's
        matrix (float32, bit for bit as searched, read in place) and row, and which versions
        have one (:class:`~planner_svc.index.source.VectorRows`). Recall scores the passages
        of a candidate document with them."""
        ...


class QueryEmbedder(Protocol):
    """Embeds query text into vectors of the index's space."""

    @property
    def dim(self) -> int:
        """Vector dimension."""
        ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """float32 array ``(len(texts), dim)``; each row has L2 norm 1, or is all zeros (the
        "no direction" sentinel) for a text without a known token."""
        ...


class SessionEmbedder(QueryEmbedder, Protocol):
    """A query embedder that can embed one plan's texts together (optional: a plan asks for a
    session when its embedder has one, and embeds every text of the plan through it)."""

    def session(self) -> QueryEmbedder:
        """An embedder for one plan's run of texts, on one thread: the rows :meth:`embed`
        gives, bit for bit (it may reuse the work of texts it embedded earlier)."""
        ...

