"""Index catch-up: vector search that first brings the index up to the store.

Writes can come from elsewhere (``planner-svc ingest`` on the same data directory, another
worker process), so the index compares the store's newest node version with its coverage (one
indexed SQL lookup) and catches up, forward only, when it lags. Every process and worker
therefore answers from the same data. A plan checks once, at its start
(:meth:`FreshIndex.current`), and then searches that pinned state as often as it needs.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import structlog

from planner_svc.index.source import (
    LiveVersions,
    VectorHit,
    VectorHits,
    VectorRows,
    VectorSource,
    VersionIds,
)
from planner_svc.index.vector_index import IndexView, VectorIndex

_log = structlog.get_logger("planner_svc.index")


class PinnedIndex:
    """One state of a :class:`FreshIndex`, caught up once and then fixed (for one plan).

    Satisfies :class:`planner_svc.recall.ports.VectorSearch`. Searches and vector reads
    through it neither ask the store whether the index is current nor see a catch-up that runs
    meanwhile, so every search of a plan reads the same segments.

    Args:
        view: the index state.
        source: the store, for liveness when a search is given none.
    """

    __slots__ = ("_source", "_view")

    def __init__(self, view: IndexView, source: VectorSource) -> None:
        self._view = view
        self._source = source

    @property
    def covered_version_id(self) -> int:
        """Every store version with an id <= this is in the pinned state."""
        return self._view.covered_version_id

    def current(self) -> PinnedIndex:
        """This pinned state itself (it is already current for its plan)."""
        return self

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """:meth:`IndexView.vector_rows` of the pinned state."""
        return self._view.vector_rows(version_ids)

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> list[VectorHit]:
        """:meth:`IndexView.search` of the pinned state.

        Args:
            query: ``(dim,)`` numbers, checked and normalised first unless ``unit``.
            live: which versions are live (default: the store); a version it does not know
                is not live.
            unit: ``query`` is a float32 ``(dim,)`` unit vector already (an embedder's row,
                or a caller's vector once validated and normalised): used as it is.

        Raises:
            InvalidRequest: as :meth:`IndexView.search`.
        """
        return self._view.search(query, k, valid_us=valid_us, tx_us=tx_us,
                                 live=self._source if live is None else live, unit=unit)

    def search_columns(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> VectorHits:
        """:meth:`search` as columns (:meth:`IndexView.search_columns`)."""
        return self._view.search_columns(query, k, valid_us=valid_us, tx_us=tx_us,
                                         live=self._source if live is None else live,
                                         unit=unit)


class FreshIndex:
    """A :class:`VectorIndex` bound to the store it is derived from, caught up before use.

    Satisfies :class:`planner_svc.recall.ports.VectorSearch`.

    Args:
        index: the index (persisted or in memory).
        source: the store it indexes, also asked for liveness when a search is given none.
    """

    def __init__(self, index: VectorIndex, source: VectorSource) -> None:
        self._index = index
        self._source = source

    @property
    def index(self) -> VectorIndex:
        """The wrapped index."""
        return self._index

    @property
    def size(self) -> int:
        """Vectors indexed."""
        return self._index.size

    def sync(self) -> int:
        """Catch up now (forward only); returns the number of vectors added.

        Raises:
            ConfigError: (``index.dim``) a store vector has another dimension.
        """
        return self._index.sync(self._source, catch_up_only=True)

    def current(self) -> PinnedIndex:
        """Catch up (one store lookup; a sync only when the index lags), then the index as it
        stands, pinned.

        Call it inside the plan's store snapshot: the catch-up then only ever moves forward to
        what that snapshot sees. When it fails the index is used as it is (and the failure is
        logged).
        """
        self._catch_up()
        return PinnedIndex(self._index.view(), self._source)

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """:meth:`PinnedIndex.vector_rows` of an up-to-date index."""
        return self.current().vector_rows(version_ids)

    def _catch_up(self) -> None:
        if self._source.max_version_id() > self._index.covered_version_id:
            try:
                self._index.sync(self._source, catch_up_only=True)
            except Exception:
                _log.exception("vector_index.catch_up_failed")

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> list[VectorHit]:
        """:meth:`PinnedIndex.search` of an up-to-date index (see :meth:`current`).

        Raises:
            InvalidRequest: as :meth:`IndexView.search`.
        """
        return self.current().search(query, k, valid_us=valid_us, tx_us=tx_us, live=live,
                                     unit=unit)

    def search_columns(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
        live: LiveVersions | None = None, unit: bool = False,
    ) -> VectorHits:
        """:meth:`PinnedIndex.search_columns` of an up-to-date index."""
        return self.current().search_columns(query, k, valid_us=valid_us, tx_us=tx_us,
                                              live=live, unit=unit)
