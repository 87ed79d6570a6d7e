"""Index catch-up: vector search that first brings the index up to the store.

Writes can come from elsewhere (``planner-svc ingest`` on the same data directory, another
worker process), so every search compares the store's newest node version with the index's
coverage (one indexed SQL lookup) and catches up, forward only, when it lags. Every process and
worker therefore answers from the same data.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt
import structlog

from planner_svc.index.source import VectorHit, VectorSource
from planner_svc.index.vector_index import VectorIndex

_log = structlog.get_logger("planner_svc.index")


class FreshIndex:
    """A :class:`VectorIndex` bound to the store it is derived from, caught up before each search.

    Satisfies :class:`planner_svc.recall.ports.VectorSearch`.

    Args:
        index: the index (persisted or in memory).
        source: the store it indexes, also asked for liveness on every search.
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

    def vectors(self, version_ids: Sequence[int]) -> dict[int, npt.NDArray[np.float32]]:
        """:meth:`VectorIndex.vectors_of` on an up-to-date index."""
        self._catch_up()
        return self._index.vectors_of(version_ids)

    def _catch_up(self) -> None:
        if self._source.max_version_id() > self._index.covered_version_id:
            try:
                self._index.sync(self._source, catch_up_only=True)
            except Exception:
                _log.exception("vector_index.catch_up_failed")

    def search(
        self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int
    ) -> list[VectorHit]:
        """:meth:`VectorIndex.search` against the bound store, on an up-to-date index.

        Runs inside the plan's store snapshot, so the catch-up only ever moves forward to what
        that snapshot sees; when it fails the search uses the index as it is (and logs why).

        Raises:
            InvalidRequest: as :meth:`VectorIndex.search`.
        """
        self._catch_up()
        return self._index.search(query, k, valid_us=valid_us, tx_us=tx_us, source=self._source)
