"""As-of aware nearest-neighbour search over node-version vectors (see docs/architecture.md,
"Store").

Rows are partitioned by valid-from bucket, and a bucket's rows are held in immutable segments
(:mod:`planner_svc.index.partition`). A search at ``(valid_us, tx_us)`` skips buckets that start
after ``valid_us``, scans each segment's rows with ``valid_from_us <= valid_us`` (a sorted
prefix), re-scores the candidates from their float32 vectors, then keeps only versions the
store reports live at ``(valid_us, tx_us)``. Because liveness is checked after the scan, the
scan fetches more than ``k`` and widens until the answer is settled. Over segments of exact
(half-precision) codes the answer is provably that of a float32 brute-force scan; segments of
:data:`~planner_svc.index.partition.APPROXIMATE_MIN_ROWS` rows or more are searched through
inverted lists, and a row in a list not scanned can be missed (approximate).

Catching up appends the new vectors as a new segment per bucket and merges a bucket's newest
segments when :data:`MERGE_RUN` of them fall in one size tier (``BASE_ROWS * MERGE_RUN**t``), so
each vector is rewritten about ``log4(n / BASE_ROWS)`` times and a catch-up's cost follows what
it adds, not the index size. Segments of :data:`SEAL_ROWS` rows or more are never merged again.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import numpy.typing as npt
import structlog

from planner_svc.core.errors import ConfigError, InvalidRequest
from planner_svc.index import persist
from planner_svc.index.packed_rows import ROW_BITS, unpacked_rows
from planner_svc.index.partition import (
    SCAN_SLACK,
    Float32s,
    Int64s,
    Partition,
    build_partition,
    merge_partitions,
    read_rows,
)
from planner_svc.index.source import (
    LiveVersions,
    VectorHit,
    VectorHits,
    VectorRows,
    VectorSource,
    VersionIds,
)

#: Default partition width: 30 days in microseconds.
DEFAULT_BUCKET_US = 30 * 86_400 * 1_000_000
#: Subdirectory of the data directory that holds the index files.
INDEX_DIRNAME = "index"
#: Candidates fetched per partition on the first round, at least (then doubled while widening).
_MIN_FETCH = 32
#: Version ids in the first liveness query of a round, at least (k; doubled per query). Which
#: versions a round settles on never depends on it: only how many are asked about.
_MIN_LIVE_CHUNK = 16
#: Candidates fetched from approximate segments, per candidate of an exact segment (spread over
#: those segments in proportion to their eligible rows).
APPROXIMATE_FETCH_FACTOR = 2
BASE_ROWS = 2048
"""Size tier 0 holds segments below ``BASE_ROWS * MERGE_RUN`` rows."""
MERGE_RUN = 4
"""A bucket's newest segments are merged when this many of them share a size tier."""
SEAL_ROWS = 131_072
"""Segments of at least this many rows are never merged (a fresh build is cut into runs of this
size), so no catch-up rewrites more than about ``MERGE_RUN * SEAL_ROWS`` rows."""



def usable_cores() -> int:
    """Cores this process may run on: its CPU affinity set where the platform has one (a
    container or ``taskset`` may allow fewer than the machine has), else ``os.cpu_count()``;
    at least 1."""
    if hasattr(os, "sched_getaffinity"):
        return max(1, len(os.sched_getaffinity(0)))
    return max(1, os.cpu_count() or 1)


SEARCH_THREADS = min(4, usable_cores())
"""Threads that scan one search's segments side by side (FAISS and numpy release the GIL while
they scan), up to the cores this process may use (:func:`usable_cores`), at most 4. One pool
per process, shared by all its requests, created on first use (docs/architecture.md,
"Processes and threads")."""
PARALLEL_MIN_ROWS = 65_536
"""Eligible rows, summed over at least two segments, from which a search scans its segments
side by side; smaller searches (the demo corpus: one exact segment of about 20k rows) stay on
the calling thread."""
_segment_pool: ThreadPoolExecutor | None = None
_segment_pool_lock = threading.Lock()


def _pool() -> ThreadPoolExecutor:
    global _segment_pool
    with _segment_pool_lock:
        if _segment_pool is None:
            _segment_pool = ThreadPoolExecutor(max_workers=SEARCH_THREADS,
                                               thread_name_prefix="segment-search")
        return _segment_pool


_Scan = tuple[Partition, int, int, bool]
"""One segment's part of a search round: the segment, rows wanted, eligible prefix, and whether
it is scanned whole from float32 (else searched through its codes)."""


def _scan_segments(q: Float32s, scans: list[_Scan]) -> list[tuple[Float32s, Int64s]]:
    """``(scores, rows)`` of each scan, in order; side by side on :func:`_pool` when at least
    two segments hold :data:`PARALLEL_MIN_ROWS` eligible rows between them."""

    def one(scan: _Scan) -> tuple[Float32s, Int64s]:
        part, n, prefix, whole = scan
        return part.scan(q, n, prefix) if whole else part.search(q, n, prefix)

    if (SEARCH_THREADS > 1 and len(scans) > 1
            and sum(prefix for _p, _n, prefix, _w in scans) >= PARALLEL_MIN_ROWS):
        return list(_pool().map(one, scans))
    return [one(scan) for scan in scans]


#: A build or catch-up over at least this many version ids logs its progress.
_PROGRESS_MIN_IDS = 10_000
#: It logs each time it passes another tenth of them.
_PROGRESS_STEPS = 10

_log = structlog.get_logger(__name__)


def _tier(rows: int) -> int:
    """Size tier of a segment: 0 below ``BASE_ROWS * MERGE_RUN`` rows, then one per factor of
    ``MERGE_RUN``."""
    tier, bound = 0, BASE_ROWS * MERGE_RUN
    while rows >= bound:
        tier, bound = tier + 1, bound * MERGE_RUN
    return tier


def _merged(segments: list[Partition], *, bucket_us: int, dim: int) -> list[Partition]:
    """A bucket's segments (oldest first) after merging: while the newest :data:`MERGE_RUN`
    unsealed segments share a size tier, they become one segment."""
    out = list(segments)
    while len(out) >= MERGE_RUN:
        run = out[-MERGE_RUN:]
        tiers = {_tier(p.size) for p in run}
        if len(tiers) != 1 or any(p.size >= SEAL_ROWS for p in run):
            break
        out[-MERGE_RUN:] = [merge_partitions(run, bucket_us=bucket_us, dim=dim)]
    return out


def _progress_log(after: int, target: int) -> Callable[[int], None] | None:
    """A ``read_rows`` progress callback that logs ``vector_index.progress`` (version id
    reached, target, share, seconds) each tenth of ``(after, target]``; None when the range
    is too small to be worth reporting."""
    span = target - after
    if span < _PROGRESS_MIN_IDS:
        return None
    started = time.perf_counter()
    step = [1]  # the next tenth to report

    def report(version_id: int) -> None:
        done = version_id - after
        if step[0] <= _PROGRESS_STEPS and done * _PROGRESS_STEPS >= span * step[0]:
            while step[0] <= _PROGRESS_STEPS and done * _PROGRESS_STEPS >= span * step[0]:
                step[0] += 1
            _log.info("vector_index.progress", at=version_id, target=target,
                      share=round(done / span, 2), seconds=round(time.perf_counter() - started, 2))

    return report


DENSE_ROWS_FACTOR = 4
"""A state's version map (:class:`VersionRows`) is a dense array when its largest version id
is below this many times its rows (plus :data:`DENSE_ROWS_SLACK`); else vector reads search
each segment's sorted version ids."""
DENSE_ROWS_SLACK = 65_536
_ROW_BITS = ROW_BITS
"""A packed entry of the version map: ``segment << _ROW_BITS | row``."""
_ABSENT = -(1 << _ROW_BITS)
"""The packed entry of a version without a vector: segment -1, row 0."""


class VersionRows:
    """Where each version's vector sits in one index state: a dense int64 array indexed by
    version id, entry ``segment << 32 | row`` (segment: the position in the state's
    segments; a later segment's copy wins), :data:`_ABSENT` (segment -1, row 0) for a version
    without a vector, with an absent entry at id 0 and one past the largest id (so any id,
    clipped into the array, reads an absent entry when it is not indexed).

    Built once per state, by the sync that publishes it (:func:`_readied`), else on first use
    (:meth:`packed`): 8 bytes per version id up to the
    largest indexed one (about 0.24 MB for the demo corpus's 30k ids, 12 MB for 1.5M ids at
    a million passages); None (and nothing held) when the ids are too sparse for that
    (:data:`DENSE_ROWS_FACTOR`), or a segment holds an id below 1. Thread-safe."""

    __slots__ = ("_built", "_lock", "_packed")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._built = False
        self._packed: tuple[Int64s, tuple[Float32s, ...]] | None = None

    def packed(self, partitions: tuple[Partition, ...]
               ) -> tuple[Int64s, tuple[Float32s, ...]] | None:
        """The map of ``partitions`` (the same segments on every call) and their float32
        vectors (``stored``), in segment order; None when the map would be sparse."""
        if self._built:
            return self._packed
        with self._lock:
            if not self._built:
                packed = _pack_rows(partitions)
                self._packed = (None if packed is None
                                else (packed, tuple(part.stored for part in partitions)))
                self._built = True
        return self._packed


def _pack_rows(partitions: tuple[Partition, ...]) -> Int64s | None:
    """The dense map :class:`VersionRows` describes, or None when it would be sparse."""
    rows = sum(part.size for part in partitions)
    if rows == 0 or len(partitions) >= 1 << 30:
        return None
    ends = [part.version_extent() for part in partitions if part.size]
    if min(low for low, _high in ends) < 1:
        return None
    top = max(high for _low, high in ends)
    if top >= DENSE_ROWS_FACTOR * rows + DENSE_ROWS_SLACK:
        return None
    packed = np.full(top + 2, _ABSENT, dtype=np.int64)
    for segment, part in enumerate(partitions):  # a later segment's copy wins
        packed[part.version_ids] = np.arange(part.size, dtype=np.int64) + (segment << _ROW_BITS)
    return packed


@dataclass(frozen=True, slots=True, kw_only=True)
class _State:
    """An immutable snapshot that searches read without locking."""

    partitions: tuple[Partition, ...]
    covered_version_id: int
    generation: int
    rows: VersionRows = field(default_factory=VersionRows, compare=False, repr=False)


def _readied(state: _State) -> _State:
    """``state`` with what its searches read built by the sync that publishes it (a writer's,
    start-up's, or a plan's catch-up), so that the plans reading it later do not: its version
    map (:class:`VersionRows`; about 7.5 ms at a million rows) and, when it holds one segment
    (the only case a search reads them), that segment's node codes
    (:meth:`Partition.node_codes`, kept by the segment)."""
    state.rows.packed(state.partitions)
    if len(state.partitions) == 1:
        state.partitions[0].node_codes()
    return state


class VectorIndex:
    """Partitioned FAISS index over the store's node-version vectors.

    Construct with :meth:`open_or_build` (persisted under ``<data_dir>/index/``) or
    :meth:`build_in_memory`. Thread-safety: :meth:`search` may run from many threads at once; it
    reads an immutable snapshot. :meth:`sync` (catch-up) is serialised by a lock and swaps the
    snapshot atomically when done; between processes, a file lock serialises writers.

    Vectors whose norm is 0 (the embedder's "no text" sentinel) or that are not finite are not
    indexed (their count is logged); the others are L2-normalised, so similarity = cosine.
    """

    def __init__(
        self,
        *,
        directory: Path | None,
        embedder_name: str,
        dim: int,
        bucket_us: int,
        mmap: bool,
    ) -> None:
        if dim < 1:
            raise ConfigError("index.dim", f"{dim} is outside the allowed range >= 1")
        if bucket_us < 1:
            raise ConfigError("index.bucket_us", f"{bucket_us} is outside the allowed range >= 1")
        self._directory = directory
        self.embedder_name = embedder_name
        self.dim = dim
        self.bucket_us = bucket_us
        self._mmap = mmap
        self._lock = threading.Lock()
        self._state = _State(partitions=(), covered_version_id=0, generation=0)

    # ------------------------------------------------------------------ construction

    @classmethod
    def open_or_build(
        cls,
        data_dir: str | Path,
        source: VectorSource,
        *,
        embedder_name: str,
        dim: int,
        bucket_us: int = DEFAULT_BUCKET_US,
        mmap: bool = True,
        read_ahead: bool = False,
    ) -> VectorIndex:
        """Open the index persisted under ``<data_dir>/index/`` and bring it up to date.

        Rebuilds from ``source`` when the index is missing, unreadable, or was built with another
        embedder name, dimension or bucket width, or covers more versions than the store has (the
        store was replaced); appends the missing vectors when it lags ``source.max_version_id()``.
        The result is persisted atomically before this returns.

        Args:
            data_dir: the service's data directory.
            source: the store (or any :class:`VectorSource`).
            embedder_name: name of the embedder that produced the store's vectors.
            dim: their dimension.
            bucket_us: partition width in microseconds (default 30 days).
            mmap: map index files with ``IO_FLAG_MMAP_IFC`` instead of reading them into memory.
            read_ahead: with ``mmap``, once the index is current, read its segment files into
                the page cache in the background (:meth:`read_ahead`; a serving process).

        Raises:
            ConfigError: ``dim`` or ``bucket_us`` < 1, or a store vector has another dimension.
        """
        index = cls(
            directory=Path(data_dir) / INDEX_DIRNAME,
            embedder_name=embedder_name,
            dim=dim,
            bucket_us=bucket_us,
            mmap=mmap,
        )
        index.sync(source)
        if read_ahead:
            index.read_ahead()
        return index

    def read_ahead(self) -> threading.Thread | None:
        """Start reading the current segments' mapped files into the page cache on a daemon
        thread (:func:`planner_svc.index.persist.read_ahead`); None when nothing is read (an
        index read into memory or never persisted, or files too large for memory)."""
        if self._directory is None or not self._mmap:
            return None
        stems = [part.stem for part in self._state.partitions if part.stem]
        return persist.read_ahead([self._directory / f"{stem}{suffix}" for stem in stems
                                   for suffix in (".faiss", ".f32.npy")])

    @classmethod
    def build_in_memory(
        cls,
        source: VectorSource,
        *,
        embedder_name: str,
        dim: int,
        bucket_us: int = DEFAULT_BUCKET_US,
    ) -> VectorIndex:
        """Build an index from ``source`` that is never persisted (tests, one-off tools).

        Raises:
            ConfigError: as :meth:`open_or_build`.
        """
        index = cls(
            directory=None, embedder_name=embedder_name, dim=dim, bucket_us=bucket_us, mmap=False
        )
        index.sync(source)
        return index

    # ------------------------------------------------------------------ introspection

    @property
    def covered_version_id(self) -> int:
        """Every store version with an id <= this is indexed (or skipped as a zero vector)."""
        return self._state.covered_version_id

    @property
    def size(self) -> int:
        """Number of indexed vectors."""
        return sum(p.size for p in self._state.partitions)

    @property
    def partition_buckets(self) -> tuple[int, ...]:
        """Bucket numbers of the partitions (each one or more segments), ascending."""
        return tuple(sorted({p.bucket for p in self._state.partitions}))

    @property
    def segment_count(self) -> int:
        """Number of segments over every bucket."""
        return len(self._state.partitions)

    def describe(self) -> dict[str, object]:
        """The layout: segments per code kind, their rows, and whether searches are exact."""
        parts = self._state.partitions
        kinds: dict[str, dict[str, int]] = {}
        for p in parts:
            entry = kinds.setdefault(p.kind, {"segments": 0, "rows": 0})
            entry["segments"] += 1
            entry["rows"] += p.size
        return {
            "buckets": len({p.bucket for p in parts}),
            "segments": len(parts),
            "kinds": kinds,
            "exact": all(p.exact for p in parts),
            "largest_segment": max((p.size for p in parts), default=0),
        }

    # ------------------------------------------------------------------ catch-up

    def sync(self, source: VectorSource, *, catch_up_only: bool = False) -> int:
        """Bring the index up to ``source.max_version_id()`` and persist it (when persisted).

        Adopts a newer index another process persisted, appends vectors with larger version ids
        (re-sorting the partitions they land in), or rebuilds everything when the persisted index
        is incompatible or ahead of the store. Searches keep running on the previous snapshot.

        Args:
            catch_up_only: never move backwards. A reader inside a store snapshot sees an older
                ``max_version_id`` than a concurrent writer already indexed; with this flag an
                index at or past that target is left as it is (no rebuild, no lost vectors).

        Returns:
            Number of vectors added to the index (0 when it was up to date).

        Raises:
            ConfigError: (``index.dim``) a store vector's dimension differs from ``dim``.
        """
        with self._lock:
            target = int(source.max_version_id())
            state = self._state
            if state.covered_version_id == target and state.generation > 0:
                return 0  # up to date: no disk access
            if catch_up_only and state.covered_version_id >= target and state.generation > 0:
                return 0
            if self._directory is None:
                rebuild = state.covered_version_id > target
                advanced, added = self._advance(state, source, target, rebuild=rebuild)
                self._state = _readied(advanced)
                return added
            with persist.file_lock(self._directory, exclusive=True):
                base, loaded = self._best_base(state, target)
                if loaded and (
                    base.covered_version_id == target
                    or (catch_up_only and base.covered_version_id > target)
                ):
                    self._state = _readied(base)
                    return 0
                rebuild = base.covered_version_id > target or not loaded
                new_state, added = self._advance(base, source, target, rebuild=rebuild)
                self._state = _readied(self._persist(base, new_state))
                return added

    def _best_base(self, state: _State, target: int) -> tuple[_State, bool]:
        """The snapshot to advance from: the persisted one when it is compatible and at least
        as fresh as ours. The flag says whether the base is a usable, persisted starting point.
        """
        assert self._directory is not None
        reason = ""
        try:
            manifest = persist.read_manifest(self._directory)
            if manifest is None:
                reason = "missing"
            elif (manifest.embedder_name, manifest.dim, manifest.bucket_us) != (
                self.embedder_name,
                self.dim,
                self.bucket_us,
            ):
                reason = f"built for {manifest.embedder_name}/{manifest.dim}/{manifest.bucket_us}"
            elif manifest.covered_version_id > target:
                reason = "ahead of the store"
            elif (
                manifest.generation == state.generation
                and manifest.covered_version_id == state.covered_version_id
                and state.generation > 0
            ):
                return state, True
            else:
                parts = persist.load_partitions(self._directory, manifest, mmap=self._mmap)
                return (
                    _State(
                        partitions=tuple(sorted(parts, key=lambda p: p.bucket)),
                        covered_version_id=manifest.covered_version_id,
                        generation=manifest.generation,
                    ),
                    True,
                )
        except persist.ManifestError as exc:
            reason = str(exc)
        _log.info("vector_index.rebuild", directory=str(self._directory), reason=reason)
        return state, False

    def _advance(
        self, base: _State, source: VectorSource, target: int, *, rebuild: bool
    ) -> tuple[_State, int]:
        """Add the store's vectors in ``(after, target]`` to ``base`` (``after`` = 0 on rebuild)
        as new segments, then merge each touched bucket's newest segments (:func:`_merged`)."""
        after = 0 if rebuild else base.covered_version_id
        rows = read_rows(source, after, target, dim=self.dim,
                         progress=_progress_log(after, target))
        by_bucket: dict[int, list[Partition]] = {}
        if not rebuild:
            for p in base.partitions:
                by_bucket.setdefault(p.bucket, []).append(p)
        if rows.skipped:
            _log.debug("vector_index.zero_vectors_skipped", count=rows.skipped)
        if rows.version_ids.shape[0]:
            buckets = rows.valid_from_us // self.bucket_us
            for bucket in np.unique(buckets).tolist():
                picked = np.flatnonzero(buckets == bucket)
                segments = by_bucket.setdefault(int(bucket), [])
                for start in range(0, picked.shape[0], SEAL_ROWS):
                    run = picked[start:start + SEAL_ROWS]
                    segments.append(build_partition(
                        bucket=int(bucket),
                        bucket_us=self.bucket_us,
                        dim=self.dim,
                        version_ids=rows.version_ids[run],
                        valid_from_us=rows.valid_from_us[run],
                        node_ids=rows.node_ids[run],
                        vectors=rows.vectors[run],
                    ))
                by_bucket[int(bucket)] = _merged(segments, bucket_us=self.bucket_us,
                                                 dim=self.dim)
        partitions = tuple(p for b in sorted(by_bucket) for p in by_bucket[b])
        new_state = _State(
            partitions=partitions,
            covered_version_id=target,
            generation=base.generation + 1,
        )
        return new_state, int(rows.version_ids.shape[0])

    def _persist(self, base: _State, new_state: _State) -> _State:
        """Write the partitions that changed, then the manifest (rename last); return the
        snapshot with the file stems filled in."""
        assert self._directory is not None
        stamped = persist.write_state(
            self._directory,
            persist.Manifest(
                embedder_name=self.embedder_name,
                dim=self.dim,
                bucket_us=self.bucket_us,
                covered_version_id=new_state.covered_version_id,
                generation=new_state.generation,
                partitions=(),
            ),
            new_state.partitions,
            unchanged=[p for p in base.partitions if p.stem],
        )
        return _State(
            partitions=stamped,
            covered_version_id=new_state.covered_version_id,
            generation=new_state.generation,
        )

    # ------------------------------------------------------------------ search

    def view(self) -> IndexView:
        """The index as it stands now, fixed: searches and reads through the view keep seeing
        these segments whatever catch-up runs meanwhile (one index state for a whole plan)."""
        state = self._state
        return IndexView(state.partitions, dim=self.dim,
                         covered_version_id=state.covered_version_id, rows=state.rows)

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """:meth:`IndexView.vector_rows` over the current segments."""
        return self.view().vector_rows(version_ids)

    def search(
        self,
        query: npt.ArrayLike,
        k: int,
        *,
        valid_us: int,
        tx_us: int,
        live: LiveVersions,
        exact: bool = False,
    ) -> list[VectorHit]:
        """:meth:`IndexView.search` over the current segments; ``live`` says which versions are
        live (the store, or any :class:`LiveVersions`).

        Raises:
            InvalidRequest: as :meth:`IndexView.search`.
        """
        return self.view().search(query, k, valid_us=valid_us, tx_us=tx_us, live=live,
                                  exact=exact)


class IndexView:
    """One state of a :class:`VectorIndex` (its segments and coverage), fixed; see
    :meth:`VectorIndex.view`. Immutable, so any number of threads may search it at once.

    Attributes:
        dim: vector dimension.
        covered_version_id: every store version with an id <= this is in the view (or was
            skipped as a zero vector).
    """

    __slots__ = ("_partitions", "_rows", "covered_version_id", "dim")

    def __init__(self, partitions: tuple[Partition, ...], *, dim: int,
                 covered_version_id: int, rows: VersionRows | None = None) -> None:
        self._partitions = partitions
        self.dim = dim
        self.covered_version_id = covered_version_id
        # the version map of these segments: the state's (built once for every view of
        # it), or this view's own
        self._rows = rows if rows is not None else VersionRows()

    def check_query(self, query: npt.ArrayLike | Sequence[float]) -> Float32s:
        """``query`` as a float32 ``(1, dim)`` unit vector (divided by its float64 norm).

        Raises:
            InvalidRequest: (``semantic.vector``) not numbers, another shape than ``(dim,)``,
                non-finite values or norm 0.
        """
        try:
            vector = np.asarray(query, dtype=np.float64)
        except (TypeError, ValueError) as exc:
            raise InvalidRequest("semantic.vector", f"not a vector of numbers: {exc}") from exc
        if vector.shape != (self.dim,):
            raise InvalidRequest(
                "semantic.vector",
                f"has shape {vector.shape}; the index expects ({self.dim},)",
            )
        if not np.all(np.isfinite(vector)):
            raise InvalidRequest("semantic.vector", "contains NaN or infinite values")
        norm = float(np.linalg.norm(vector))
        if not norm > 0.0 or not math.isfinite(norm):
            raise InvalidRequest("semantic.vector", f"has norm {norm}; a direction is needed")
        return (vector / norm).astype(np.float32).reshape(1, self.dim)

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """Where the indexed unit vectors of ``version_ids`` sit, in their order: each one's
        segment (its float32 vectors, bit for bit as searched) and row, and which versions
        are indexed. Nothing is copied."""
        wanted = np.asarray(version_ids, dtype=np.int64).reshape(-1)
        mapped = self._rows.packed(self._partitions)
        if mapped is not None:
            packed, stored = mapped
            # ids outside the map clip to its absent first or last entry; the entries split
            # into held, segment and row in one compiled pass
            held, segment, rows = unpacked_rows(packed, wanted)
            if len(stored) == 1:
                return VectorRows(held=held, blocks=stored, block=segment, rows=rows,
                                  dim=self.dim)
            # the segments that hold an asked version, numbered in segment order (as below)
            present = np.unique(segment[held])
            renumber = np.full(len(stored) + 1, -1, dtype=np.int64)  # [-1] stays -1
            renumber[present] = np.arange(present.shape[0], dtype=np.int64)
            return VectorRows(held=held, blocks=tuple(map(stored.__getitem__, present.tolist())),
                              block=renumber[segment], rows=rows, dim=self.dim)
        return self._searched_rows(wanted)

    def _searched_rows(self, wanted: Int64s) -> VectorRows:
        """:meth:`vector_rows` of int64 ``(n,)`` ids without the version map: a search of
        each segment's sorted version ids (:meth:`Partition.rows_of`)."""
        block = np.full(wanted.shape[0], -1, dtype=np.int64)
        rows = np.zeros(wanted.shape[0], dtype=np.int64)
        blocks: list[Float32s] = []
        if wanted.shape[0]:
            for part in self._partitions:  # a later segment's copy wins
                positions, found = part.rows_of(wanted)
                if found.shape[0]:
                    block[positions] = len(blocks)
                    rows[positions] = found
                    blocks.append(part.stored)
        return VectorRows(held=block >= 0, blocks=tuple(blocks), block=block, rows=rows,
                          dim=self.dim)

    def search(
        self,
        query: npt.ArrayLike,
        k: int,
        *,
        valid_us: int,
        tx_us: int,
        live: LiveVersions,
        exact: bool = False,
        unit: bool = False,
    ) -> list[VectorHit]:
        """:meth:`search_columns`, one :class:`VectorHit` per hit."""
        return self.search_columns(query, k, valid_us=valid_us, tx_us=tx_us, live=live,
                                   exact=exact, unit=unit).hits()

    def search_columns(
        self,
        query: npt.ArrayLike,
        k: int,
        *,
        valid_us: int,
        tx_us: int,
        live: LiveVersions,
        exact: bool = False,
        unit: bool = False,
    ) -> VectorHits:
        """The ``k`` nodes most similar to ``query`` among versions live at ``(valid_us, tx_us)``.

        Over exact segments, equal to a brute-force scan of every live version (inner product
        of the float32 unit vectors); rows of approximate segments (inverted lists) not in the
        lists a search scans can be missed, unless ``exact`` is set. Algorithm: for each segment
        whose bucket starts at or before ``valid_us``, take its top rows by code score among
        those with ``valid_from_us <= valid_us`` (``f`` from an exact segment; from approximate
        ones :data:`APPROXIMATE_FETCH_FACTOR` ``* f`` spread by eligible rows); re-score them
        from their float32 vectors; walk them by that score, asking
        ``live.live_version_ids`` in chunks, while it is strictly above ``T``, the largest
        ``f``-th code score plus code error bound of an exact segment that had more eligible
        rows than ``f`` (no unfetched row of an exact segment can beat such a candidate, ties
        included); double ``f`` and repeat when fewer than ``k`` nodes were settled, until every
        eligible row has been fetched (an approximate segment asked for all its eligible rows
        is scanned whole, so a search returns fewer than ``k`` only when fewer are live).

        The scores rank candidates only (float32, in an order that depends on the code path):
        each hit carries its stored vector for an exact, order-fixed similarity.

        Args:
            query: ``(dim,)`` finite, non-zero (normalised here; only its direction counts).
            k: number of nodes wanted, >= 1.
            valid_us: as-of valid time, microseconds since the Unix epoch.
            tx_us: as-of transaction time, microseconds since the Unix epoch.
            live: which versions are live (the store, or a read model of it taken in the same
                state); a version it does not know is not live.
            exact: score every eligible row from its float32 vector (a brute-force scan of
                every segment, exact like the search over exact segments; for measuring the
                recall of approximate segments).
            unit: ``query`` is a float32 ``(dim,)`` unit vector already (as an embedder
                returns it, or a caller's vector once validated and normalised): it is used as
                it is. A query of another dtype or shape is still checked and normalised.

        Returns:
            Up to ``k`` hits, score descending, ties by node id ascending; a node appears once
            (its best live version). Fewer than ``k`` when fewer nodes are live; none when
            none is.

        Raises:
            InvalidRequest: (``semantic.vector``) wrong shape, non-finite values or zero norm;
                (``semantic.k``) ``k < 1``.
        """
        if (unit and isinstance(query, np.ndarray) and query.dtype == np.float32
                and query.shape == (self.dim,)):
            q: Float32s = query.reshape(1, self.dim)
        else:
            q = self.check_query(query)
        if k < 1:
            raise InvalidRequest("semantic.k", f"{k} is outside the allowed range >= 1")
        eligible: list[tuple[Partition, int]] = []
        for part in self._partitions:
            if part.start_us > valid_us:
                break
            prefix = part.eligible(valid_us)
            if prefix > 0:
                eligible.append((part, prefix))
        if not eligible:
            return VectorHits(node_ids=(), version_ids=np.zeros(0, dtype=np.int64),
                              scores=np.zeros(0, dtype=np.float32),
                              vectors=np.zeros((0, self.dim), dtype=np.float32))
        largest = max(prefix for _, prefix in eligible)
        fetch = min(largest, max(_MIN_FETCH, 2 * k))
        known: dict[int, bool] = {}
        while True:
            found, exhausted = self._round(q, k, eligible, fetch, known, valid_us, tx_us, live,
                                           exact=exact)
            if len(found) >= k or exhausted:
                return found
            fetch = min(largest, fetch * 2)

    @staticmethod
    def _round(
        q: Float32s,
        k: int,
        eligible: list[tuple[Partition, int]],
        fetch: int,
        known: dict[int, bool],
        valid_us: int,
        tx_us: int,
        live: LiveVersions,
        *,
        exact: bool,
    ) -> tuple[VectorHits, bool]:
        """One widening round; returns (settled hits, whether every eligible row was seen).
        ``known`` caches liveness across rounds."""
        threshold = -math.inf
        complete = True
        approximate_rows = sum(prefix for part, prefix in eligible if not part.exact)
        scans: list[_Scan] = []
        for part, prefix in eligible:
            if exact or part.exact:
                scans.append((part, min(fetch, prefix), prefix, exact))
            else:
                share = -(-APPROXIMATE_FETCH_FACTOR * fetch * prefix // approximate_rows)
                n = min(prefix, max(fetch, share))
                # widened to every eligible row: the lists not probed are scanned too
                scans.append((part, n, prefix, n >= prefix))
                complete = complete and n >= prefix
        picked: list[Int64s] = []
        for (part, n, prefix, _whole), (codes, rows) in zip(
                scans, _scan_segments(q, scans), strict=True):
            if (exact or part.exact) and n < prefix and codes.shape[0]:
                slack = SCAN_SLACK if exact else part.error
                threshold = max(threshold, float(codes[-1]) + slack)
            picked.append(rows)
        # float32 products summed by one loop per row (einsum, no BLAS): equal vectors score
        # equal wherever they sit, so ties fall to the node id. A candidate's version and node
        # are versions[at] and nodes[at] for its entry of `at` (below).
        if len(eligible) == 1:
            part, rows = eligible[0][0], picked[0]
            sims = np.einsum("ij,j->i", part.stored[rows], q[0])
            versions, nodes = part.version_ids, part.node_ids
        else:
            sims = np.concatenate([np.einsum("ij,j->i", part.stored[rows], q[0])
                                   for (part, _prefix), rows in zip(eligible, picked,
                                                                    strict=True)])
            versions = np.concatenate([part.version_ids[rows]
                                       for (part, _prefix), rows in zip(eligible, picked,
                                                                        strict=True)])
            nodes = np.concatenate([part.node_ids[rows]
                                    for (part, _prefix), rows in zip(eligible, picked,
                                                                     strict=True)])
            where = np.repeat(np.arange(len(picked), dtype=np.int64),
                              [rows.shape[0] for rows in picked])
            rows = np.concatenate(picked)
        # settled: no unfetched exact row outranks them. Ranked by score (a stable sort of the
        # negated float32 scores, exact), then node id, then version id: those two are read
        # only when two candidates score the same
        order = (-sims).argsort(kind="stable")
        ranked = sims[order]
        kept = int(np.count_nonzero(ranked > threshold))  # a prefix: ranked descends
        if kept < order.shape[0]:
            order, ranked = order[:kept], ranked[:kept]
        single = len(eligible) == 1
        if kept > 1 and bool((ranked[1:] == ranked[:-1]).any()):
            at = rows[order] if single else order
            order = order[np.lexsort((versions[at], nodes[at], -ranked.astype(np.float64)))]
            ranked = sims[order]
        at = rows[order] if single else order
        # each node's first live version in score order, the first k of them; liveness asked
        # in chunks (the larger of k and _MIN_LIVE_CHUNK, then doubled) of the versions not
        # known from an earlier round
        chosen: list[int] = []
        seen: set[bytes] = set()
        asked: list[tuple[list[int], set[int]]] = []
        # one segment: its nodes as numbers, to tell a chunk's nodes apart without their ids
        # (and nothing to tell apart when no node has two rows in it: a search never returns
        # a row twice, flat or inverted lists, so a chunk's nodes then differ)
        node_codes = eligible[0][0].node_codes() if single else None
        distinct = single and eligible[0][0].distinct_nodes()
        stop, chunk = 0, max(k, _MIN_LIVE_CHUNK)
        while stop < kept and len(chosen) < k:
            start, stop = stop, min(stop + chunk, kept)
            chunk *= 2
            window = at[start:stop]
            part_ids: list[int] = versions[window].tolist()
            part_nodes: list[bytes] | None = None
            unknown = [v for v in part_ids if v not in known] if known else part_ids
            answer: set[int] = set()
            if unknown:
                answer = live.live_version_ids(unknown, valid_us, tx_us)
                asked.append((unknown, answer))
                if (unknown is part_ids and len(answer) >= len(part_ids)
                        and answer.issuperset(part_ids)):
                    if node_codes is not None and not seen:
                        fresh_nodes = distinct or (len(set(node_codes[window].tolist()))
                                                   == stop - start)
                    else:
                        part_nodes = nodes[window].tolist()
                        fresh_nodes = (len(fresh := set(part_nodes)) == stop - start
                                       and seen.isdisjoint(fresh))
                    if fresh_nodes:
                        # every version of the chunk live, each of a node not seen yet; the
                        # chunk holds the k - len(chosen) wanted (chunk >= k), or the last
                        # candidates
                        chosen += range(start, min(stop, start + k - len(chosen)))
                        break
            if part_nodes is None:
                part_nodes = nodes[window].tolist()
            for offset, version in enumerate(part_ids):
                if known.get(version, version in answer) and (
                        node := part_nodes[offset]) not in seen:
                    seen.add(node)
                    chosen.append(start + offset)
                    if len(chosen) == k:
                        break
        if len(chosen) < k:  # another round may follow: it asks only about new versions
            for unknown, answer in asked:
                known.update({v: v in answer for v in unknown})
        # the first candidates, as a slice (the usual case), else their positions
        picks: slice | Int64s = (slice(0, len(chosen)) if not chosen
                                 or chosen[-1] == len(chosen) - 1
                                 else np.asarray(chosen, dtype=np.int64))
        settled = at[picks]
        # node ids decoded, vectors copied only when read (recall reads the vectors in place)
        encoded = nodes[settled]
        if single:
            found = VectorHits(encoded_node_ids=encoded, version_ids=versions[settled],
                               scores=ranked[picks], matrix=eligible[0][0].stored, rows=settled)
        else:
            vectors = np.zeros((settled.shape[0], q.shape[1]), dtype=np.float32)
            segment = where[settled]
            for index in np.unique(segment).tolist():  # only the segments holding a hit
                mine = np.flatnonzero(segment == index)
                vectors[mine] = eligible[index][0].stored[rows[settled[mine]]]
            found = VectorHits(encoded_node_ids=encoded, version_ids=versions[settled],
                               scores=ranked[picks], vectors=vectors)
        if len(found) == k:
            return found, True
        return found, complete and threshold == -math.inf
