"""What the vector index needs from the store: its vectors and a liveness check.

The embedded store satisfies :class:`VectorSource`; tests use an in-memory fake.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import numpy.typing as npt

#: One node version's vector: (version_id, node_id, valid_from_us, vector of shape (dim,)).
VectorRecord = tuple[int, str, int, npt.NDArray[np.float32]]
#: Node version ids, as a sequence or an int64 array.
VersionIds = Sequence[int] | npt.NDArray[np.int64]


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
class VectorHits:
    """A search's hits as columns, in the search's order (score descending, ties by node id):
    what recall reads of them without building one object per hit.

    Attributes:
        node_ids: each hit's node.
        version_ids: int64 ``(n,)``, its live version whose vector matched.
        scores: float32 ``(n,)``, the index's inner products (they rank candidates only; see
            :class:`VectorHit`).
        vectors: float32 ``(n, dim)``, each version's indexed unit vector, bit for bit
            (made read-only here: pass a copy of an array that must stay writable).
    """

    node_ids: tuple[str, ...]
    version_ids: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float32]
    vectors: npt.NDArray[np.float32]

    def __post_init__(self) -> None:
        self.vectors.setflags(write=False)  # the index's rows: read, never written

    def __len__(self) -> int:
        return len(self.node_ids)

    def hits(self) -> list[VectorHit]:
        """One :class:`VectorHit` per hit, in order."""
        return [VectorHit(node_id=node, version_id=version, score=score, vector=vector)
                for node, version, score, vector in zip(
                    self.node_ids, self.version_ids.tolist(), self.scores.tolist(),
                    self.vectors, strict=True)]

    @classmethod
    def of(cls, hits: Sequence[VectorHit], dim: int) -> VectorHits:
        """The columns of ``hits`` (vectors of ``dim`` values)."""
        return cls(node_ids=tuple(h.node_id for h in hits),
                   version_ids=np.asarray([h.version_id for h in hits], dtype=np.int64),
                   scores=np.asarray([h.score for h in hits], dtype=np.float32),
                   vectors=(np.stack([h.vector for h in hits]).astype(np.float32) if hits
                            else np.zeros((0, dim), dtype=np.float32)))


@dataclass(frozen=True, slots=True)
class VectorRows:
    """Where the indexed vectors of some node versions sit, one entry each, in the order asked:
    rows of the index's own matrices, read in place (a plan scores a few thousand passages; a
    copy of their vectors would be megabytes per plan).

    Attributes:
        held: bool ``(n,)``, whether each version has an indexed vector.
        blocks: float32 ``(m, dim)`` matrices (the index's segments), each row a unit vector
            bit for bit as searched.
        block: int64 ``(n,)``, the block holding each version's vector (-1 where ``held`` is
            False).
        rows: int64 ``(n,)``, its row in that block (0 where ``held`` is False).
        dim: the vector dimension.
    """

    held: npt.NDArray[np.bool_]
    blocks: tuple[npt.NDArray[np.float32], ...]
    block: npt.NDArray[np.int64]
    rows: npt.NDArray[np.int64]
    dim: int

    @classmethod
    def of_matrix(cls, held: npt.NDArray[np.bool_], matrix: npt.NDArray[np.float32]
                  ) -> VectorRows:
        """The rows of one float32 ``(n, dim)`` matrix, row ``i`` for version ``i`` (its
        rows where ``held`` is False are never read)."""
        n = held.shape[0]
        return cls(held=held, blocks=(matrix,),
                   block=np.where(held, 0, -1).astype(np.int64),
                   rows=np.where(held, np.arange(n, dtype=np.int64), 0), dim=matrix.shape[1])

    @property
    def matrix(self) -> npt.NDArray[np.float32]:
        """The vectors as one float32 ``(n, dim)`` matrix, a copy (zeros where ``held`` is
        False)."""
        out = np.zeros((self.held.shape[0], self.dim), dtype=np.float32)
        for b, block in enumerate(self.blocks):
            at = np.flatnonzero(self.block == b)
            out[at] = block[self.rows[at]]
        return out


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
