"""One vector partition: the node versions whose valid_from falls in one time bucket (and the
rows read from the store to build partitions).

A partition is immutable once built. Its rows are sorted by ``(valid_from_us, version_id)``, so
the rows with ``valid_from_us <= t`` form a prefix ``[0, n)`` and a FAISS ``IDSelectorRange(0, n)``
on a plain ``IndexFlatIP`` scans exactly that slice (measured: the range selector keeps the
flat scan's fast path; bitmap selectors and ``IndexIDMap`` lose it). Catching up with new
vectors builds a new partition (old rows plus new rows, re-sorted) rather than appending in
place: a memory-mapped FAISS index cannot grow, and readers keep using the old object meanwhile.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import faiss
import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import ConfigError
from planner_svc.embed.base import normalize_rows
from planner_svc.index.source import VectorSource

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


@dataclass(frozen=True, slots=True, kw_only=True)
class Rows:
    """New rows read from the store, not yet partitioned (parallel arrays, ``skipped`` zero or
    non-finite vectors left out)."""

    version_ids: Int64s
    valid_from_us: Int64s
    node_ids: NodeIds
    vectors: Float32s
    skipped: int


def read_rows(source: VectorSource, after: int, target: int, *, dim: int,
              progress: Callable[[int], None] | None = None) -> Rows:
    """The store's vectors with version ids in ``(after, target]``, L2-normalised, ready to
    partition; zero (or non-finite) vectors are left out and counted. ``progress`` is called
    with each row's version id as it is read.

    Raises:
        ConfigError: (``index.dim``) a vector's dimension is not ``dim``.
    """
    version_ids: list[int] = []
    valid_from: list[int] = []
    node_ids: list[str] = []
    vectors: list[npt.NDArray[np.float32]] = []
    for version_id, node_id, valid_from_us, vector in source.iter_vectors(after):
        if version_id > target:
            break
        if progress is not None:
            progress(version_id)
        row = np.asarray(vector, dtype=np.float32).reshape(-1)
        if row.shape[0] != dim:
            raise ConfigError(
                "index.dim",
                f"store vector of version {version_id} has {row.shape[0]} dimensions, "
                f"the index expects {dim}",
            )
        version_ids.append(int(version_id))
        valid_from.append(int(valid_from_us))
        node_ids.append(node_id)
        vectors.append(row)
    matrix = (
        normalize_rows(np.stack(vectors))
        if vectors
        else np.zeros((0, dim), dtype=np.float32)
    )
    good = np.any(matrix != 0.0, axis=1)
    return Rows(
        version_ids=np.asarray(version_ids, dtype=np.int64)[good],
        valid_from_us=np.asarray(valid_from, dtype=np.int64)[good],
        node_ids=encode_node_ids(node_ids)[good] if node_ids else np.zeros(0, np.bytes_),
        vectors=matrix[good],
        skipped=int((~good).sum()),
    )
