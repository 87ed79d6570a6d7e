"""What recall needs from the store, the vector index and the embedder (structural types).

The embedded backends (``planner_svc.store``, ``planner_svc.index``, ``planner_svc.embed``)
satisfy these; a distributed backend would too, with the same shapes.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Literal, Protocol

import numpy as np
import numpy.typing as npt

from planner_svc.core.model import SpanRef

SpanKey = tuple[str, int, int, int]
Direction = Literal["out", "in", "both"]


class NodeVersionView(Protocol):
    """One live node version: identity, confidence, validity start and provenance spans."""

    @property
    def node_id(self) -> str: ...
    @property
    def confidence(self) -> float: ...
    @property
    def valid_from_us(self) -> int: ...
    @property
    def provenance(self) -> Sequence[SpanRef]: ...


class EdgeView(Protocol):
    """One live edge ``src -> dst`` with weight in [0, 1]."""

    @property
    def src(self) -> str: ...
    @property
    def dst(self) -> str: ...
    @property
    def weight(self) -> float: ...


class RecallStore(Protocol):
    """Reads recall performs against the store; every read is as-of (valid_us, tx_us)."""

    def snapshot(self) -> AbstractContextManager[None]:
        """A block whose reads (on the calling thread) all see one committed store state.

        Re-entrant: a nested block joins the running one. Must not block writers (a reader
        holding a snapshot while another thread or process commits is the normal case).
        """
        ...

    def search_text(
        self,
        query: str,
        *,
        labels: Sequence[str] = (),
        properties: Mapping[str, str] | None = None,
        valid_us: int,
        tx_us: int,
        limit: int,
    ) -> list[tuple[str, float]]: ...

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> Mapping[str, NodeVersionView]: ...

    def edges_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int, *, direction: Direction = "out"
    ) -> Sequence[EdgeView]: ...

    def span_kinds(self, keys: Iterable[SpanKey]) -> Mapping[SpanKey, str]: ...

    def canonical_slices(self, keys: Iterable[SpanKey]) -> Mapping[SpanKey, str]: ...


class VectorHitView(Protocol):
    """One candidate of a vector search: a live node version and its stored unit vector.

    ``score`` is the index's own similarity (for ranking candidates only: it may differ in its
    last bits between processes); ``vector`` is float32 ``(dim,)``.
    """

    @property
    def node_id(self) -> str: ...
    @property
    def version_id(self) -> int: ...
    @property
    def score(self) -> float: ...
    @property
    def vector(self) -> npt.NDArray[np.float32]: ...


class VectorSearch(Protocol):
    """As-of nearest-neighbour candidates over node-version vectors."""

    def search(
        self,
        query: npt.ArrayLike,
        k: int,
        *,
        valid_us: int,
        tx_us: int,
        source: Any,
    ) -> Sequence[VectorHitView]: ...


class QueryEmbedder(Protocol):
    """Embeds query text into unit vectors of dimension ``dim``."""

    @property
    def dim(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]: ...


class TokenCounter(Protocol):
    """Exact token counts and context windows per model (None = unknown)."""

    def count(self, model: str, text: str) -> int | None: ...

    def context_window(self, model: str) -> int | None: ...


__all__ = [
    "Collection",
    "EdgeView",
    "NodeVersionView",
    "QueryEmbedder",
    "RecallStore",
    "SpanKey",
    "TokenCounter",
    "VectorHitView",
    "VectorSearch",
]
