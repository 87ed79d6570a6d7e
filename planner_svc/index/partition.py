"""Vector segments: immutable runs of node-version vectors of one valid-from bucket (and the rows
read from the store to build them).

A bucket (one partition of the index) holds one or more segments. Each segment's rows are
sorted by ``(valid_from_us, version_id)``, so the rows with ``valid_from_us <= t`` form a prefix
``[0, n)``. A segment keeps:

- its unit vectors as float32, bit for bit as the store's normalised vectors (a memory-mapped
  ``.npy`` file once persisted): candidates are re-scored and recall re-ranks from these;
- a compressed copy FAISS scans for candidates, of one of two kinds:

  * ``fp16`` (:data:`KIND_EXACT`): ``IndexScalarQuantizer`` with half-precision codes, half the
    bytes of float32, scanned with ``IDSelectorRange(0, n)`` for the eligible prefix. Its
    scores differ from the float32 ones by at most the segment's ``error`` (the largest
    reconstruction error of a row, plus float32 summation slack), so a search that re-scores
    its candidates from the float32 vectors can prove that no unfetched row beats them: exact.
  * ``ivf`` (:data:`KIND_APPROXIMATE`): ``IndexIVFScalarQuantizer`` with the same half-precision
    codes in ``round(2 * sqrt(n))`` inverted lists (k-means, 10 iterations, on at most 40 rows
    per list), of which a search scans the :func:`nprobe` nearest, for segments of at least
    :data:`APPROXIMATE_MIN_ROWS` rows. The eligible prefix is still an exact
    ``IDSelectorRange``; only rows in lists that are not scanned can be missed, so results are
    approximate (recall against an exact scan is measured by ``bench/bench_scale.py``).

Segments are never modified: catching up adds a new segment, and small segments are merged into
larger new ones (:mod:`planner_svc.index.vector_index`); readers keep using the old objects.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
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

KIND_EXACT = "fp16"
"""Half-precision codes; searches over them are exact after re-scoring."""
KIND_APPROXIMATE = "ivf"
"""Half-precision codes in inverted lists; searches over them are approximate."""
APPROXIMATE_MIN_ROWS = 32_768
"""Segments with at least this many rows get inverted lists; smaller ones are scanned whole
(exact). The demo corpus (about 20k vectors) stays exact."""
TRAIN_ROWS_PER_LIST = 40
"""Rows (evenly spaced) the list centroids are trained on, per list."""
PROBE_SHARE = 24
"""A search scans one list in this many (at least :data:`MIN_PROBE`). Chosen on the million-passage
synthetic corpus (seven segments of 390-780 lists, 100 questions, k 100): one in 16 gave recall
0.9957 against an exact scan in 10.9-11.5 ms a search, one in 24 0.9934 in 8.3-8.6 ms, one in 32
0.9884 in 7.6 ms."""
MIN_PROBE = 8
"""Lists a search scans, at least."""
_SUM_SLACK_ULPS = 4.0
"""Float32 summation slack per dimension, in units of 2**-24, added to a segment's error."""
SCAN_SLACK = 1e-4
"""Bound on the difference between a float32 matrix-product score and the re-scored one."""


def _sequence_sorted(version_ids: Int64s) -> tuple[Int64s, Int64s]:
    order = np.argsort(version_ids, kind="stable").astype(np.int64)
    return np.ascontiguousarray(version_ids[order]), order


@dataclass(frozen=True, slots=True, kw_only=True)
class Partition:
    """One segment of the vectors of one valid-from bucket ``[start_us, start_us + bucket_us)``.

    Attributes:
        bucket: bucket number, ``floor(valid_from_us / bucket_us)``.
        start_us: first microsecond of the bucket (``bucket * bucket_us``).
        index: the FAISS index of the codes (``fp16`` or ``ivf``, see the module docstring);
            row ``i`` is position ``i`` below.
        kind: :data:`KIND_EXACT` or :data:`KIND_APPROXIMATE`.
        error: a bound on ``|code score - float32 score|`` of any row for a unit query.
        stored: float32 ``(n, dim)`` unit vectors, read-only (an ndarray over a memory map
            when loaded).
        version_ids: int64 ``(n,)``, the node version of each row.
        valid_from_us: int64 ``(n,)``, ascending (ties by version id).
        node_ids: UTF-8 bytes ``(n,)``, the node of each row.
        stem: file stem of the persisted files, or ``""`` while not persisted.
    """

    bucket: int
    start_us: int
    index: Any
    kind: str
    error: float
    stored: Float32s
    version_ids: Int64s
    valid_from_us: Int64s
    node_ids: NodeIds
    stem: str = ""
    _by_version: tuple[Int64s, Int64s] = field(init=False, repr=False, compare=False)
    _rows: int = field(init=False, repr=False, compare=False)
    _latest_us: int | None = field(init=False, repr=False, compare=False)
    _node_codes: Int64s | None = field(init=False, repr=False, compare=False)
    _distinct: bool = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_by_version", _sequence_sorted(self.version_ids))
        rows = int(self.valid_from_us.shape[0])
        object.__setattr__(self, "_rows", rows)
        # the last row's valid-from (the largest): from it on, every row is eligible
        object.__setattr__(self, "_latest_us", int(self.valid_from_us[-1]) if rows else None)
        object.__setattr__(self, "_node_codes", None)
        object.__setattr__(self, "_distinct", False)

    @property
    def size(self) -> int:
        """Number of rows."""
        return self._rows

    @property
    def exact(self) -> bool:
        """Whether searches of this segment are exact after re-scoring."""
        return self.kind == KIND_EXACT

    def eligible(self, valid_us: int) -> int:
        """Number of leading rows with ``valid_from_us <= valid_us`` (a prefix, rows sorted)."""
        latest = self._latest_us
        if latest is None:
            return 0
        if valid_us >= latest:  # the usual as-of, now: every row
            return self._rows
        return int(self.valid_from_us.searchsorted(valid_us, side="right"))

    def search(self, query: Float32s, fetch: int, prefix: int) -> tuple[Float32s, Int64s]:
        """Top ``fetch`` rows by code score among rows ``[0, prefix)``.

        Args:
            query: float32 ``(1, dim)``, unit norm.
            fetch: rows wanted, ``1 <= fetch <= prefix``.
            prefix: rows eligible, ``1 <= prefix <= size``.

        Returns:
            ``(code scores, rows)``: float32 and int64 arrays of length ``fetch`` (fewer when
            FAISS reports missing results, or for ``ivf`` when the scanned lists hold fewer
            eligible rows), code score descending.
        """
        if prefix >= self._rows:
            sims, rows = self.index.search(query, fetch)
        else:
            selector = faiss.IDSelectorRange(0, prefix)  # referenced until the search returns
            if self.exact:
                params = faiss.SearchParameters()
            else:
                params = faiss.SearchParametersIVF()
                params.nprobe = int(self.index.nprobe)
            params.sel = selector
            sims, rows = self.index.search(query, fetch, params=params)
        # FAISS lays the rows it found first, then -1 for each one it did not find
        if rows.dtype == np.int64 and rows.shape[1] and rows[0, -1] >= 0:  # all found
            return sims[0], rows[0]
        keep = rows[0] >= 0
        return sims[0][keep], rows[0][keep].astype(np.int64)

    def scan(self, query: Float32s, fetch: int, prefix: int) -> tuple[Float32s, Int64s]:
        """Like :meth:`search`, but scoring every row of ``[0, prefix)`` from its float32
        vector (a brute-force scan, for measuring recall); scores within :data:`SCAN_SLACK` of
        the re-scored ones."""
        sims = np.asarray(self.stored[:prefix]) @ query[0]
        top = np.argpartition(-sims, fetch - 1)[:fetch] if fetch < prefix else np.arange(prefix)
        rows = top[np.argsort(-sims[top], kind="stable")].astype(np.int64)
        return sims[rows], rows

    def vectors(self) -> Float32s:
        """All rows as float32 ``(n, dim)`` (a copy)."""
        return np.array(self.stored, dtype=np.float32)

    def row_vectors(self, rows: Int64s) -> Float32s:
        """The stored vectors of ``rows`` (int64 ``(m,)``), float32 ``(m, dim)``, bit for bit."""
        return np.asarray(self.stored[np.asarray(rows, dtype=np.int64)], dtype=np.float32)

    def node_codes(self) -> Int64s:
        """int64 ``(n,)``: each row's node as a number, equal for two rows exactly when their
        nodes are (the node's rank among the segment's node ids). Computed when the index
        publishes a state whose only segment it is (or on first use) and kept (8 bytes a row; about
        0.6 s per million rows); computing it twice (two threads at once) gives the same."""
        codes = self._node_codes
        if codes is None:
            unique, inverse = np.unique(self.node_ids, return_inverse=True)
            codes = inverse.astype(np.int64).reshape(-1)
            codes.setflags(write=False)
            object.__setattr__(self, "_distinct", int(unique.shape[0]) == self._rows)
            object.__setattr__(self, "_node_codes", codes)  # set last: read as "computed"
        return codes

    def distinct_nodes(self) -> bool:
        """Whether no two rows hold the same node (known with :meth:`node_codes`, computed
        now if they were not yet)."""
        self.node_codes()
        return self._distinct

    def version_extent(self) -> tuple[int, int]:
        """The smallest and the largest version id of the rows (the segment is not empty)."""
        ordered = self._by_version[0]
        return int(ordered[0]), int(ordered[-1])

    def rows_of(self, version_ids: Int64s) -> tuple[Int64s, Int64s]:
        """``(positions in version_ids, rows)`` of the given versions held by this segment."""
        ordered, order = self._by_version
        if ordered.shape[0] == 0 or version_ids.shape[0] == 0:
            empty = np.zeros(0, dtype=np.int64)
            return empty, empty
        at = ordered.searchsorted(version_ids)
        at_clipped = np.minimum(at, ordered.shape[0] - 1)
        hit = ordered[at_clipped] == version_ids
        return np.flatnonzero(hit).astype(np.int64), order[at_clipped[hit]]


def encode_node_ids(node_ids: Sequence[str]) -> NodeIds:
    """Node ids as a fixed-width UTF-8 bytes array (byte order equals code point order)."""
    return np.array([node_id.encode("utf-8") for node_id in node_ids], dtype=np.bytes_)


def choose_kind(rows: int) -> str:
    """The code kind of a segment of ``rows`` vectors."""
    return KIND_APPROXIMATE if rows >= APPROXIMATE_MIN_ROWS else KIND_EXACT


def lists_for(rows: int) -> int:
    """Inverted lists of an ``ivf`` segment of ``rows`` vectors: ``round(2 * sqrt(rows))``."""
    return max(1, round(2.0 * math.sqrt(rows)))


def nprobe(lists: int) -> int:
    """Lists an ``ivf`` search scans: one in :data:`PROBE_SHARE`, at least :data:`MIN_PROBE`."""
    return min(lists, max(MIN_PROBE, lists // PROBE_SHARE))


def build_codes(kind: str, vectors: Float32s) -> tuple[Any, float]:
    """The FAISS index of ``vectors`` (float32 ``(n, dim)``, unit rows, sorted) for ``kind``,
    and its code error bound (:func:`code_error`)."""
    n, dim = vectors.shape
    index: Any
    if kind == KIND_APPROXIMATE:
        lists = lists_for(n)
        index = faiss.IndexIVFScalarQuantizer(
            faiss.IndexFlatIP(dim), dim, lists, faiss.ScalarQuantizer.QT_fp16,
            faiss.METRIC_INNER_PRODUCT,
        )
        index.by_residual = False  # the same half-precision codes (and error) as ``fp16``
        index.cp.niter = 10
        index.cp.seed = 1234
        step = max(1, n // (lists * TRAIN_ROWS_PER_LIST))
        index.train(np.ascontiguousarray(vectors[::step]))
        index.add(vectors)
        index.nprobe = nprobe(lists)
    else:
        index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16,
                                           faiss.METRIC_INNER_PRODUCT)
        index.add(vectors)
    return index, fp16_error(vectors)


def fp16_error(vectors: Float32s) -> float:
    """A bound on ``|q . fp16(x) - q . x|`` over the rows ``x`` of ``vectors`` for any unit
    ``q`` (Cauchy-Schwarz: the largest half-precision rounding error of a row), plus float32
    summation slack."""
    dim = int(vectors.shape[1])
    codec = faiss.ScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16)
    worst = 0.0
    for start in range(0, vectors.shape[0], 65_536):
        chunk = np.ascontiguousarray(vectors[start:start + 65_536])
        decoded = codec.decode(codec.compute_codes(chunk))
        diff = decoded.astype(np.float64) - chunk.astype(np.float64)
        worst = max(worst, float(np.sqrt(np.max(np.einsum("ij,ij->i", diff, diff)))))
    return worst + dim * _SUM_SLACK_ULPS * 2.0**-24


def build_partition(
    *,
    bucket: int,
    bucket_us: int,
    dim: int,
    version_ids: Int64s,
    valid_from_us: Int64s,
    node_ids: NodeIds,
    vectors: Float32s,
    kind: str | None = None,
) -> Partition:
    """Build a segment from unsorted rows (all in ``bucket``), sorting by
    ``(valid_from_us, version_id)``.

    Args:
        vectors: float32 ``(n, dim)``, unit rows, ``n >= 1``.
        kind: the code kind (default: :func:`choose_kind` by size).
    """
    order = np.lexsort((version_ids, valid_from_us))
    stored = np.ascontiguousarray(vectors[order], dtype=np.float32)
    chosen = kind or choose_kind(int(stored.shape[0]))
    index, error = build_codes(chosen, stored)
    stored.setflags(write=False)
    return Partition(
        bucket=bucket,
        start_us=bucket * bucket_us,
        index=index,
        kind=chosen,
        error=error,
        stored=stored,
        version_ids=np.ascontiguousarray(version_ids[order], dtype=np.int64),
        valid_from_us=np.ascontiguousarray(valid_from_us[order], dtype=np.int64),
        node_ids=np.ascontiguousarray(node_ids[order]),
    )


def merge_partitions(parts: Sequence[Partition], *, bucket_us: int, dim: int) -> Partition:
    """One segment holding the rows of ``parts`` (segments of one bucket)."""
    return build_partition(
        bucket=parts[0].bucket,
        bucket_us=bucket_us,
        dim=dim,
        version_ids=np.concatenate([p.version_ids for p in parts]),
        valid_from_us=np.concatenate([p.valid_from_us for p in parts]),
        node_ids=np.concatenate([p.node_ids for p in parts]),
        vectors=np.concatenate([np.asarray(p.stored) for p in parts]),
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
