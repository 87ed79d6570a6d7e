"""What the vector index needs from the store: its vectors and a liveness check.

The embedded store satisfies :class:`VectorSource`; tests use an in-memory fake.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

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


class VectorHits:
    """A search's hits as columns, in the search's order (score descending, ties by node id):
    what recall reads of them without building one object per hit.

    Each hit's node id and vector are given either as they are (``node_ids``, ``vectors``) or
    as the index holds them (``encoded_node_ids``: UTF-8 bytes, or a numpy bytes array of
    them; ``matrix`` and ``rows``: the hit's vector is ``matrix[rows[i]]``), and then
    decoded or copied on first read.

    Attributes:
        node_ids: each hit's node.
        version_ids: int64 ``(n,)``, its live version whose vector matched.
        scores: float32 ``(n,)``, the index's inner products (they rank candidates only; see
            :class:`VectorHit`).
        vectors: float32 ``(n, dim)``, each version's indexed unit vector, bit for bit
            (made read-only here: pass a copy of an array that must stay writable).
    """

    __slots__ = ("_encoded", "_matrix", "_node_ids", "_rows", "_vectors", "scores",
                 "version_ids")

    def __init__(self, *, version_ids: npt.NDArray[np.int64], scores: npt.NDArray[np.float32],
                 node_ids: Sequence[str] | None = None,
                 encoded_node_ids: Sequence[bytes] | npt.NDArray[np.bytes_] | None = None,
                 vectors: npt.NDArray[np.float32] | None = None,
                 matrix: npt.NDArray[np.float32] | None = None,
                 rows: npt.NDArray[np.int64] | None = None) -> None:
        if (node_ids is None) == (encoded_node_ids is None):
            raise TypeError("VectorHits needs one of node_ids and encoded_node_ids")
        if (vectors is None) == (matrix is None or rows is None):
            raise TypeError("VectorHits needs vectors, or a matrix and rows")
        self.version_ids = version_ids
        self.scores = scores
        self._node_ids = None if node_ids is None else tuple(node_ids)
        self._encoded = encoded_node_ids
        if vectors is not None:
            vectors.setflags(write=False)  # the index's rows: read, never written
        self._vectors = vectors
        self._matrix = matrix
        self._rows = rows

    @property
    def node_ids(self) -> tuple[str, ...]:
        """Each hit's node."""
        found = self._node_ids
        if found is None:
            encoded = self._encoded
            if isinstance(encoded, np.ndarray):
                encoded = encoded.tolist()
            found = self._node_ids = tuple(map(bytes.decode,  # UTF-8, strict
                                               cast("Sequence[bytes]", encoded)))
        return found

    @property
    def vectors(self) -> npt.NDArray[np.float32]:
        """float32 ``(n, dim)``, each hit's indexed unit vector (read-only)."""
        found = self._vectors
        if found is None:
            found = cast("npt.NDArray[np.float32]", self._matrix)[
                cast("npt.NDArray[np.int64]", self._rows)]
            found.setflags(write=False)
            self._vectors = found
        return found

    def located(self) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.int64]]:
        """``(matrix, rows)``: hit ``i``'s vector is ``matrix[rows[i]]``, bit for bit (the
        index's own matrix when the search gave it, else :attr:`vectors`)."""
        if self._matrix is not None and self._rows is not None:
            return self._matrix, self._rows
        return self.vectors, np.arange(len(self), dtype=np.int64)

    def __len__(self) -> int:
        return int(self.version_ids.shape[0])

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
