"""An in-memory :class:`VectorSource` with bitemporal liveness, for tests and tools.

Each node version has a valid interval ``[valid_from_us, valid_to_us)`` and a transaction
interval ``[tx_from_us, tx_to_us)``; ``None`` as an upper bound means open-ended. A version is
live at ``(valid_us, tx_us)`` when both intervals contain the respective instant
(docs/architecture.md, "Store").
"""

from __future__ import annotations

import threading
from collections.abc import Collection, Iterator
from dataclasses import dataclass, replace

import numpy as np
import numpy.typing as npt

from planner_svc.index.source import VectorRecord


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryVersion:
    """One node version held by :class:`MemoryVectorSource` (times in microseconds)."""

    version_id: int
    node_id: str
    valid_from_us: int
    valid_to_us: int | None
    tx_from_us: int
    tx_to_us: int | None
    vector: npt.NDArray[np.float32]

    def live_at(self, valid_us: int, tx_us: int) -> bool:
        """Whether both intervals contain the given instants."""
        in_valid = self.valid_from_us <= valid_us and (
            self.valid_to_us is None or valid_us < self.valid_to_us
        )
        in_tx = self.tx_from_us <= tx_us and (self.tx_to_us is None or tx_us < self.tx_to_us)
        return in_valid and in_tx


class MemoryVectorSource:
    """Node versions in a dict; version ids are assigned 1, 2, 3, ... in insertion order.

    Thread-safe. ``live_calls`` counts :meth:`live_version_ids` calls (for tests of widening).
    """

    def __init__(self) -> None:
        self._versions: dict[int, MemoryVersion] = {}
        self._lock = threading.Lock()
        self.live_calls = 0

    def add(
        self,
        node_id: str,
        vector: npt.ArrayLike,
        *,
        valid_from_us: int,
        tx_from_us: int,
        valid_to_us: int | None = None,
        tx_to_us: int | None = None,
    ) -> int:
        """Add a version and return its id."""
        with self._lock:
            version_id = len(self._versions) + 1
            self._versions[version_id] = MemoryVersion(
                version_id=version_id,
                node_id=node_id,
                valid_from_us=valid_from_us,
                valid_to_us=valid_to_us,
                tx_from_us=tx_from_us,
                tx_to_us=tx_to_us,
                vector=np.asarray(vector, dtype=np.float32).reshape(-1),
            )
            return version_id

    def close_tx(self, version_id: int, tx_to_us: int) -> None:
        """End a version's transaction interval (it was superseded or deleted at ``tx_to_us``)."""
        with self._lock:
            self._versions[version_id] = replace(self._versions[version_id], tx_to_us=tx_to_us)

    def versions(self) -> list[MemoryVersion]:
        """All versions, ascending version id."""
        with self._lock:
            return [self._versions[v] for v in sorted(self._versions)]

    def iter_vectors(self, after_version_id: int = 0) -> Iterator[VectorRecord]:
        """Versions with ``version_id > after_version_id``, ascending."""
        for version in self.versions():
            if version.version_id > after_version_id:
                yield version.version_id, version.node_id, version.valid_from_us, version.vector

    def live_version_ids(self, version_ids: Collection[int], valid_us: int, tx_us: int) -> set[int]:
        """The ids among ``version_ids`` live at ``(valid_us, tx_us)``; unknown ids are not."""
        with self._lock:
            self.live_calls += 1
            return {
                v
                for v in version_ids
                if v in self._versions and self._versions[v].live_at(valid_us, tx_us)
            }

    def max_version_id(self) -> int:
        """Largest version id (0 when empty)."""
        with self._lock:
            return len(self._versions)
