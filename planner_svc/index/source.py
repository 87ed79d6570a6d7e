"""What the vector index needs from the store: its vectors and a liveness check.

The embedded store satisfies :class:`VectorSource`; tests use an in-memory fake.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

#: One node version's vector: (version_id, node_id, valid_from_us, vector of shape (dim,)).
VectorRecord = tuple[int, str, int, npt.NDArray[np.float32]]


@dataclass(frozen=True, slots=True)
class VectorHit:
    """One live node version a search chose.

    Attributes:
        node_id: the node.
        version_id: its live version whose vector matched.
        score: the index's inner product with the query, computed by FAISS in float32 in an
            order that depends on its code path and thread count: it ranks candidates, and
            must not enter a weight.
        vector: the indexed unit vector of that version, float32 ``(dim,)`` (read-only), for
            computing the similarity exactly.
    """

    node_id: str
    version_id: int
    score: float
    vector: npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True)
class VectorRows:
    """The indexed vectors of some node versions, one row each, in the order asked.

    Attributes:
        held: bool ``(n,)``, whether each version has an indexed vector.
        matrix: float32 ``(n, dim)``, each held version's unit vector bit for bit as searched
            (zeros where ``held`` is False).
    """

    held: npt.NDArray[np.bool_]
    matrix: npt.NDArray[np.float32]


class LiveVersions(Protocol):
    """Which node versions are live as of a bitemporal point (the store, or a read model of
    it such as the recall catalog)."""

    def live_version_ids(self, version_ids: Collection[int], valid_us: int, tx_us: int) -> set[int]:
        """Return the subset of ``version_ids`` whose valid interval contains ``valid_us`` and
        whose transaction interval contains ``tx_us`` (both microseconds since the epoch);
        unknown ids are not live."""
        ...


class VectorSource(LiveVersions, Protocol):
    """Read access to node-version vectors and their bitemporal liveness."""

    def iter_vectors(self, after_version_id: int = 0) -> Iterator[VectorRecord]:
        """Yield every node version with a vector and ``version_id > after_version_id``.

        Yields:
            ``(version_id, node_id, valid_from_us, vector)`` in ascending ``version_id``;
            ``valid_from_us`` in microseconds since the Unix epoch; ``vector`` float32 ``(dim,)``.
        """
        ...

    def max_version_id(self) -> int:
        """Largest version id written so far (0 when there is none)."""
        ...
