"""One vector partition: the node versions whose valid_from falls in one time bucket.

A partition is immutable once built. Its rows are sorted by ``(valid_from_us, version_id)``, so
the rows with ``valid_from_us <= t`` form a prefix ``[0, n)`` and a FAISS ``IDSelectorRange(0, n)``
on a plain ``IndexFlatIP`` scans exactly that slice (DESIGN section 4: the range selector keeps
the flat scan's fast path; bitmap selectors and ``IndexIDMap`` lose it). Catching up with new
vectors builds a new partition (old rows plus new rows, re-sorted) rather than appending in
place: a memory-mapped FAISS index cannot grow, and readers keep using the old object meanwhile.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

NodeIds = npt.NDArray[np.bytes_]
Int64s = npt.NDArray[np.int64]
Float32s = npt.NDArray[np.float32]


@dataclass(frozen=True, slots=True, kw_only=True)
class Partition:
    """Vectors of one valid-from bucket ``[start_us, start_us + bucket_us)``.

    Attributes:
        bucket: bucket number, ``floor(valid_from_us / bucket_us)``.
        start_us: first microsecond of the bucket (``bucket * bucket_us``).
        index: ``faiss.IndexFlatIP`` of unit vectors; row ``i`` is position ``i`` below.
        version_ids: int64 ``(n,)``, the node version of each row.
        valid_from_us: int64 ``(n,)``, ascending (ties by version id).
        node_ids: UTF-8 bytes ``(n,)``, the node of each row.
        stem: file stem of the persisted files, or ``""`` while not persisted.
    """

    bucket: int
    start_us: int
    index: Any
    version_ids: Int64s
    valid_from_us: Int64s
    node_ids: NodeIds
    stem: str = ""

    @property
    def size(self) -> int:
        """Number of rows."""
        return int(self.version_ids.shape[0])

    def eligible(self, valid_us: int) -> int:
        """Number of leading rows with ``valid_from_us <= valid_us`` (a prefix, rows sorted)."""
        return int(np.searchsorted(self.valid_from_us, valid_us, side="right"))

    def search(self, query: Float32s, fetch: int, prefix: int) -> tuple[Float32s, Int64s]:
        """Top ``fetch`` rows by inner product among rows ``[0, prefix)``.

        Args:
            query: float32 ``(1, dim)``, unit norm.
            fetch: rows wanted, ``1 <= fetch <= prefix``.
            prefix: rows eligible, ``1 <= prefix <= size``.

        Returns:
            ``(similarities, rows)``: float32 and int64 arrays of length ``fetch`` (fewer only if
            FAISS reports missing results), similarity descending.
        """
        if prefix >= self.size:
            sims, rows = self.index.search(query, fetch)
        else:
            selector = faiss.IDSelectorRange(0, prefix)  # referenced until the search returns
            params = faiss.SearchParameters()
            params.sel = selector
            sims, rows = self.index.search(query, fetch, params=params)
        keep = rows[0] >= 0
        return sims[0][keep], rows[0][keep].astype(np.int64)

    def vectors(self) -> Float32s:
        """All rows as float32 ``(n, dim)`` (a copy)."""
        return np.asarray(self.index.reconstruct_n(0, self.size), dtype=np.float32)

    def row_vectors(self, rows: Int64s) -> Float32s:
        """The stored vectors of ``rows`` (int64 ``(m,)``), float32 ``(m, dim)``, bit for bit."""
        if rows.shape[0] == 0:
            return np.zeros((0, int(self.index.d)), dtype=np.float32)
        return np.asarray(
            self.index.reconstruct_batch(np.ascontiguousarray(rows, dtype=np.int64)),
            dtype=np.float32,
        )


def encode_node_ids(node_ids: Sequence[str]) -> NodeIds:
    """Node ids as a fixed-width UTF-8 bytes array (byte order equals code point order)."""
    return np.array([node_id.encode("utf-8") for node_id in node_ids], dtype=np.bytes_)


def build_partition(
    *,
    bucket: int,
    bucket_us: int,
    dim: int,
    version_ids: Int64s,
    valid_from_us: Int64s,
    node_ids: NodeIds,
    vectors: Float32s,
) -> Partition:
    """Build a partition from unsorted rows (all in ``bucket``), sorting by
    ``(valid_from_us, version_id)``.

    Args:
        vectors: float32 ``(n, dim)``, unit rows, ``n >= 1``.
    """
    order = np.lexsort((version_ids, valid_from_us))
    index = faiss.IndexFlatIP(dim)
    index.add(np.ascontiguousarray(vectors[order], dtype=np.float32))
    return Partition(
        bucket=bucket,
        start_us=bucket * bucket_us,
        index=index,
        version_ids=np.ascontiguousarray(version_ids[order], dtype=np.int64),
        valid_from_us=np.ascontiguousarray(valid_from_us[order], dtype=np.int64),
        node_ids=np.ascontiguousarray(node_ids[order]),
    )
