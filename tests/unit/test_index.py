"""Vector index: exactness against brute force, persistence, catch-up, validation."""

from __future__ import annotations

import itertools
import json
import os
import subprocess
import sys
import threading
from collections.abc import Collection, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from planner_svc.core.errors import ConfigError, InvalidRequest
from planner_svc.embed.base import normalize_rows
from planner_svc.index import (
    INDEX_DIRNAME,
    FreshIndex,
    VectorHit,
    VectorHits,
    VectorIndex,
    VectorRecord,
    persist,
    vector_index,
)
from planner_svc.index.memory_source import MemoryVectorSource

DIM = 16
BUCKET = 1_000  # microseconds; small so the data spans many partitions
TOL = 1e-5


class CountingSource:
    """Wraps a source and records every ``iter_vectors`` call's ``after_version_id``."""

    def __init__(self, inner: MemoryVectorSource) -> None:
        self.inner = inner
        self.iter_calls: list[int] = []

    def iter_vectors(self, after_version_id: int = 0) -> Iterator[VectorRecord]:
        self.iter_calls.append(after_version_id)
        return self.inner.iter_vectors(after_version_id)

    def live_version_ids(self, version_ids: Collection[int], valid_us: int, tx_us: int) -> set[int]:
        return self.inner.live_version_ids(version_ids, valid_us, tx_us)

    def max_version_id(self) -> int:
        return self.inner.max_version_id()


def pairs(hits: list[VectorHit]) -> list[tuple[str, float]]:
    """A search result as ``(node_id, index score)`` pairs, after checking each hit's vector
    is the indexed unit vector of its version."""
    for hit in hits:
        assert hit.vector.dtype == np.float32 and not hit.vector.flags.writeable
        assert abs(float(np.dot(hit.vector, hit.vector)) - 1.0) < 1e-5
    return [(hit.node_id, hit.score) for hit in hits]


def brute_force(
    source: MemoryVectorSource, query: np.ndarray, valid_us: int, tx_us: int
) -> dict[str, float]:
    """Best cosine similarity per node over its versions live at (valid_us, tx_us)."""
    q = query / np.linalg.norm(query)
    best: dict[str, float] = {}
    for version in source.versions():
        norm = float(np.linalg.norm(version.vector))
        if norm == 0.0 or not version.live_at(valid_us, tx_us):
            continue
        sim = float(np.dot(version.vector.astype(np.float64) / norm, q))
        best[version.node_id] = max(sim, best.get(version.node_id, -np.inf))
    return best


def assert_exact(result: list[tuple[str, float]], truth: dict[str, float], k: int) -> None:
    """Tie-aware comparison of a search result with brute force (tolerance ``TOL``)."""
    assert len(result) == min(k, len(truth))
    nodes = [n for n, _ in result]
    assert len(set(nodes)) == len(nodes)
    for node, sim in result:
        assert node in truth, f"{node} is not live"
        assert abs(sim - truth[node]) <= TOL
    for (n1, s1), (n2, s2) in itertools.pairwise(result):
        assert s1 > s2 or (s1 == s2 and n1 < n2), (n1, s1, n2, s2)
    if result and len(result) == k:
        floor = result[-1][1]
        for node, sim in truth.items():
            if node not in nodes:
                assert sim <= floor + TOL, (node, sim, floor)


def synthetic_source(seed: int, *, nodes: int = 150, versions: int = 600) -> MemoryVectorSource:
    """Seeded bitemporal data: superseded versions, closed valid intervals, valid_from spread
    over ~20 partitions (some before 0), duplicated vectors (exact ties), a few zero vectors."""
    rng = np.random.default_rng(seed)
    src = MemoryVectorSource()
    tx_clock = {f"n{i:03d}": 0 for i in range(nodes)}
    current: dict[str, int] = {}
    pool: list[np.ndarray] = []
    for _ in range(versions):
        node = f"n{int(rng.integers(nodes)):03d}"
        tx_from = tx_clock[node] + int(rng.integers(1, 50))
        tx_clock[node] = tx_from
        roll = rng.random()
        if roll < 0.08 and pool:
            vector = pool[int(rng.integers(len(pool)))].copy()
        elif roll < 0.10:
            vector = np.zeros(DIM, dtype=np.float32)
        else:
            vector = rng.standard_normal(DIM).astype(np.float32)
        pool.append(vector)
        valid_from = int(rng.integers(-3 * BUCKET, 17 * BUCKET))
        valid_to = valid_from + int(rng.integers(1, 8 * BUCKET)) if rng.random() < 0.3 else None
        if node in current:
            src.close_tx(current[node], tx_from)
        current[node] = src.add(
            node, vector, valid_from_us=valid_from, valid_to_us=valid_to, tx_from_us=tx_from
        )
    return src


def test_search_columns_are_exact_with_each_hits_live_version_and_vector() -> None:
    """The columnar hits recall reads: the exact nearest live nodes in order (brute force),
    each with the version whose vector matched and that vector bit for bit (read-only)."""
    src = synthetic_source(3)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    view = index.view()
    assert len(index.partition_buckets) > 1
    rng = np.random.default_rng(4)
    versions = {v.version_id: v for v in src.versions()}
    for _ in range(10):
        query = rng.standard_normal(DIM)
        valid_us = int(rng.integers(0, 16 * BUCKET))
        columns = view.search_columns(query, 10, valid_us=valid_us, tx_us=10**9, live=src)
        truth = brute_force(src, query, valid_us, 10**9)
        assert_exact(list(zip(columns.node_ids, columns.scores.tolist(), strict=True)), truth,
                     10)
        assert not columns.vectors.flags.writeable
        for node, version_id, row in zip(columns.node_ids, columns.version_ids.tolist(),
                                         columns.vectors, strict=True):
            version = versions[version_id]
            assert version.node_id == node and version.live_at(valid_us, 10**9)
            expected = normalize_rows(np.asarray([version.vector], dtype=np.float32))[0]
            assert np.array_equal(row, expected)
        matrix, rows = columns.located()  # where the vectors sit: the same bits
        assert np.array_equal(matrix[rows], columns.vectors)


def test_search_columns_of_one_segment_read_vectors_in_place() -> None:
    """Over one segment, the hits name the segment's own matrix and rows; node ids are
    decoded and vectors copied when first read, the same as given outright."""
    src = MemoryVectorSource()
    rng = np.random.default_rng(8)
    for i in range(40):  # some nodes with two live versions
        src.add(f"n{i % 25:02d}\u00e9", rng.standard_normal(DIM), valid_from_us=i, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert index.segment_count == 1
    view = index.view()
    query = rng.standard_normal(DIM)
    columns = view.search_columns(query, 7, valid_us=10**12, tx_us=10**9, live=src)
    matrix, rows = columns.located()
    assert matrix is view._partitions[0].stored
    given = VectorHits(node_ids=columns.node_ids, version_ids=columns.version_ids,
                       scores=columns.scores, vectors=np.array(matrix[rows]))
    assert given.node_ids == columns.node_ids and len(given) == len(columns) == 7
    assert np.array_equal(given.vectors, columns.vectors)
    assert not columns.vectors.flags.writeable
    given_matrix, given_rows = given.located()
    assert given_rows.tolist() == list(range(7)) and given_matrix is given.vectors
    with pytest.raises(TypeError):
        VectorHits(version_ids=columns.version_ids, scores=columns.scores,
                   vectors=columns.vectors)


# ---------------------------------------------------------------- exactness


def test_a_segment_knows_whether_a_node_has_two_rows() -> None:
    from planner_svc.index.partition import build_partition, encode_node_ids

    vectors = normalize_rows(np.random.default_rng(3).standard_normal((4, DIM)))

    def segment(nodes: list[str]) -> Any:
        return build_partition(bucket=0, bucket_us=BUCKET, dim=DIM,
                               version_ids=np.arange(1, 5, dtype=np.int64),
                               valid_from_us=np.zeros(4, dtype=np.int64),
                               node_ids=encode_node_ids(nodes), vectors=vectors)

    assert segment(["a", "b", "c", "d"]).distinct_nodes()
    repeated = segment(["a", "b", "a", "d"])
    assert not repeated.distinct_nodes()
    assert repeated.node_codes().tolist() == [0, 1, 0, 2]


@pytest.mark.parametrize(("seed", "bucket_us"), [(3, BUCKET), (11, BUCKET), (12, 8 * BUCKET)])
def test_search_equals_brute_force_at_random_as_of_points(seed: int, bucket_us: int) -> None:
    # Narrow buckets: 20 small partitions; wide ones: 4, most larger than the first fetch,
    # so the widening rule and its threshold decide the answer.
    src = synthetic_source(seed)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=bucket_us)
    assert len(index.partition_buckets) == (20 if bucket_us == BUCKET else 4)
    rng = np.random.default_rng(seed + 1000)
    max_tx = max(v.tx_from_us for v in src.versions())
    filtered_mattered = 0
    for _ in range(60):
        query = rng.standard_normal(DIM)
        valid_us = int(rng.integers(-4 * BUCKET, 18 * BUCKET))
        tx_us = int(rng.integers(0, max_tx + 10))
        k = int(rng.choice([1, 3, 10, 40]))
        result = pairs(index.search(query, k, valid_us=valid_us, tx_us=tx_us, live=src))
        truth = brute_force(src, query, valid_us, tx_us)
        assert_exact(result, truth, k)
        everything = brute_force(src, query, 10**9, max_tx + 10)
        top_all = sorted(everything, key=lambda n: (-everything[n], n))[:k]
        if top_all != [n for n, _ in result]:
            filtered_mattered += 1
    assert filtered_mattered > 30  # the as-of filter changed most answers


def test_exact_ties_are_broken_by_node_id() -> None:
    src = MemoryVectorSource()
    direction = np.ones(DIM, dtype=np.float32)
    for node in ["c", "a", "d", "b"]:  # inserted out of order, same vector
        src.add(node, direction, valid_from_us=5, tx_from_us=0)
    src.add("z", -direction, valid_from_us=5, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    result = pairs(index.search(direction, 3, valid_us=10, tx_us=10, live=src))
    assert [n for n, _ in result] == ["a", "b", "c"]
    assert all(abs(s - 1.0) < TOL for _, s in result)


def test_boundary_partition_uses_exact_valid_from_prefix() -> None:
    src = MemoryVectorSource()
    q = np.zeros(DIM, dtype=np.float32)
    q[0] = 1.0
    # One bucket [0, 1000): the best vectors start later within it than the as-of point.
    src.add("early", q + 0.5, valid_from_us=100, tx_from_us=0)
    src.add("late-best", q, valid_from_us=501, tx_from_us=0)
    src.add("exactly-at", q + 0.2, valid_from_us=500, tx_from_us=0)
    src.add("next-bucket", q, valid_from_us=1000, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    result = pairs(index.search(q, 10, valid_us=500, tx_us=1, live=src))
    assert [n for n, _ in result] == ["exactly-at", "early"]
    assert pairs(index.search(q, 10, valid_us=99, tx_us=1, live=src)) == []
    later = [n for n, _ in pairs(index.search(q, 10, valid_us=1000, tx_us=1, live=src))]
    assert later == ["late-best", "next-bucket", "exactly-at", "early"]


def test_widening_finds_live_vectors_behind_many_superseded_ones() -> None:
    src = MemoryVectorSource()
    rng = np.random.default_rng(5)
    q = rng.standard_normal(DIM).astype(np.float32)
    previous = None
    for tx in range(1, 301):  # 300 versions of one node, each close to the query
        if previous is not None:
            src.close_tx(previous, tx)
        previous = src.add(
            "hot", q + 0.01 * rng.standard_normal(DIM), valid_from_us=0, tx_from_us=tx
        )
    for i in range(20):
        src.add(f"cold{i:02d}", rng.standard_normal(DIM), valid_from_us=0, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    # At tx 150 only version 150 of "hot" is live: the other 299 near-duplicates are not.
    result = pairs(index.search(q, 5, valid_us=1, tx_us=150, live=src))
    assert_exact(result, brute_force(src, q, 1, 150), 5)
    assert result[0][0] == "hot"
    assert len(result) == 5


def test_nothing_live_or_nothing_eligible_returns_empty() -> None:
    src = MemoryVectorSource()
    v = src.add("a", np.ones(DIM), valid_from_us=50, tx_from_us=10)
    src.close_tx(v, 20)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    q = np.ones(DIM)
    assert pairs(index.search(q, 3, valid_us=100, tx_us=5, live=src)) == []  # before tx_from
    assert pairs(index.search(q, 3, valid_us=100, tx_us=25, live=src)) == []  # after tx_to
    assert pairs(index.search(q, 3, valid_us=10, tx_us=15, live=src)) == []  # before valid_from
    assert [n for n, _ in pairs(index.search(q, 3, valid_us=100, tx_us=15, live=src))] == ["a"]
    empty = VectorIndex.build_in_memory(
        MemoryVectorSource(), embedder_name="t", dim=DIM, bucket_us=BUCKET
    )
    assert empty.size == 0
    assert pairs(empty.search(q, 3, valid_us=0, tx_us=0, live=src)) == []


class OnlyVersions:
    """Liveness that knows only the given version ids (a read model narrower than the store)."""

    def __init__(self, *version_ids: int) -> None:
        self.version_ids = set(version_ids)

    def live_version_ids(self, version_ids: Collection[int], valid_us: int, tx_us: int) -> set[int]:
        return self.version_ids & set(version_ids)


def test_liveness_comes_from_live_not_from_the_indexed_source() -> None:
    src = MemoryVectorSource()
    src.add("a", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    src.add("b", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    q = np.ones(DIM)
    assert sorted(n for n, _ in pairs(index.search(q, 5, valid_us=0, tx_us=0, live=src))) == [
        "a", "b"]
    assert [n for n, _ in pairs(index.search(q, 5, valid_us=0, tx_us=0,
                                             live=OnlyVersions(2)))] == ["b"]
    assert pairs(index.view().search(q, 5, valid_us=0, tx_us=0, live=OnlyVersions())) == []


def test_zero_vectors_are_not_indexed_and_others_are_normalised() -> None:
    src = MemoryVectorSource()
    src.add("zero", np.zeros(DIM), valid_from_us=0, tx_from_us=0)
    src.add("long", 7.0 * np.ones(DIM), valid_from_us=0, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert index.size == 1
    assert index.covered_version_id == 2
    [(node, sim)] = pairs(index.search(np.ones(DIM), 5, valid_us=0, tx_us=0, live=src))
    assert node == "long"
    assert abs(sim - 1.0) < TOL


# ---------------------------------------------------------------- validation


@pytest.mark.parametrize(
    ("query", "fragment"),
    [
        (np.ones(DIM + 1), "shape (17,)"),
        (np.ones((1, DIM)), "shape (1, 16)"),
        (np.full(DIM, np.nan), "NaN or infinite"),
        (np.r_[np.inf, np.ones(DIM - 1)], "NaN or infinite"),
        (np.zeros(DIM), "norm 0.0"),
        (["a"] * DIM, "not a vector of numbers"),
    ],
)
def test_invalid_query_vector_is_rejected(query: object, fragment: str) -> None:
    src = MemoryVectorSource()
    src.add("a", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    with pytest.raises(InvalidRequest) as info:
        pairs(index.search(query, 3, valid_us=0, tx_us=0, live=src))  # type: ignore[arg-type]
    assert info.value.field == "semantic.vector"
    assert fragment in info.value.reason


def test_invalid_k_and_settings_are_rejected() -> None:
    src = MemoryVectorSource()
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    with pytest.raises(InvalidRequest) as info:
        pairs(index.search(np.ones(DIM), 0, valid_us=0, tx_us=0, live=src))
    assert info.value.field == "semantic.k"
    with pytest.raises(ConfigError, match=r"index\.bucket_us: 0"):
        VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=0)
    src.add("a", np.ones(DIM + 2), valid_from_us=0, tx_from_us=0)
    with pytest.raises(ConfigError, match="version 1 has 18 dimensions"):
        VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)


# ---------------------------------------------------------------- persistence and catch-up


def _queries(n: int) -> list[np.ndarray]:
    rng = np.random.default_rng(99)
    return [rng.standard_normal(DIM) for _ in range(n)]


def _answers(index: VectorIndex, src: MemoryVectorSource) -> list[list[tuple[str, float]]]:
    return [
        pairs(index.search(q, 7, valid_us=8 * BUCKET, tx_us=10**6, live=src))
        for q in _queries(10)
    ]


def _segments(data_dir: Path) -> dict[str, tuple[int, int]]:
    """Stem -> (bucket, rows) of every segment the manifest lists."""
    parts: list[dict[str, object]] = _manifest(data_dir)["partitions"]  # type: ignore[assignment]
    return {str(p["stem"]): (int(p["bucket"]), int(p["rows"])) for p in parts}  # type: ignore[call-overload]


def _manifest(data_dir: Path) -> dict[str, object]:
    body: dict[str, object] = json.loads((data_dir / INDEX_DIRNAME / "manifest.json").read_text())
    return body


def test_persistence_round_trip_without_rebuild(tmp_path: Path) -> None:
    src = CountingSource(synthetic_source(1))
    built = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert src.iter_calls == [0]
    manifest = _manifest(tmp_path)
    assert manifest["embedder_name"] == "t"
    assert manifest["dim"] == DIM
    assert manifest["covered_version_id"] == src.max_version_id()
    files = sorted(os.listdir(tmp_path / INDEX_DIRNAME))
    assert not [f for f in files if f.startswith(".tmp-")]

    reopened = VectorIndex.open_or_build(
        tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET
    )
    assert src.iter_calls == [0]  # loaded from disk, nothing read from the store
    assert reopened.size == built.size
    assert reopened.partition_buckets == built.partition_buckets
    assert _answers(reopened, src.inner) == _answers(built, src.inner)
    # Loaded with IO_FLAG_MMAP_IFC: the partition files are mapped, not copied.
    maps = Path("/proc/self/maps").read_text()
    assert sum(1 for f in files if f.endswith(".faiss") and f in maps) == len(
        built.partition_buckets
    )
    plain = VectorIndex.open_or_build(
        tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET, mmap=False
    )
    assert _answers(plain, src.inner) == _answers(built, src.inner)


def test_an_open_asked_to_read_ahead_reads_the_settled_segments_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    inner = synthetic_source(3, versions=200)
    VectorIndex.open_or_build(tmp_path, inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    asked: list[list[str]] = []
    real = persist.read_ahead

    def recording(paths: list[Path]) -> threading.Thread | None:
        asked.append(sorted(p.name for p in paths))
        return real(paths)

    monkeypatch.setattr(persist, "read_ahead", recording)
    inner.add("late", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    reader = VectorIndex.open_or_build(  # catches up first: the new segment is read too
        tmp_path, inner, embedder_name="t", dim=DIM, bucket_us=BUCKET, read_ahead=True
    )
    stems = _segments(tmp_path)
    assert asked == [sorted(f"{s}{ext}" for s in stems for ext in (".faiss", ".f32.npy"))]
    assert all((tmp_path / INDEX_DIRNAME / name).exists() for name in asked[0])
    asked.clear()
    writer = VectorIndex.open_or_build(tmp_path, inner, embedder_name="t", dim=DIM,
                                       bucket_us=BUCKET)
    inner.add("later", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    assert writer.sync(inner) == 1
    assert reader.sync(inner) == 0  # adopts the writer's segments: no second read-ahead
    assert asked == []
    plain = VectorIndex.open_or_build(tmp_path, inner, embedder_name="t", dim=DIM,
                                      bucket_us=BUCKET, mmap=False, read_ahead=True)
    assert asked == []  # read into memory: nothing to read ahead
    assert plain.read_ahead() is None


def test_read_ahead_reads_every_file_and_skips_one_it_cannot_open(tmp_path: Path) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(3 * persist.READ_AHEAD_CHUNK + 5))
    small = tmp_path / "small.bin"
    small.write_bytes(b"abc")
    files = [tmp_path / "missing.bin", big, tmp_path, small]
    assert persist.read_through(files) == 3 * persist.READ_AHEAD_CHUNK + 8
    thread = persist.read_ahead(files)
    assert thread is not None
    thread.join(timeout=30)
    assert not thread.is_alive()
    assert thread.daemon


def test_memory_bytes_is_the_lower_of_physical_memory_and_a_container_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    physical = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    v2, v1 = tmp_path / "memory.max", tmp_path / "limit_in_bytes"
    monkeypatch.setattr(persist, "_CGROUP_LIMITS", (v2, v1))
    assert persist.memory_bytes() == physical  # neither file
    v2.write_text("max\n")  # cgroup v2 without a limit
    v1.write_text(f"{physical * 4}\n")  # v1's "no limit" is a huge number
    assert persist.memory_bytes() == physical
    v2.write_text("1073741824\n")
    assert persist.memory_bytes() == min(physical, 1 << 30)


def test_read_ahead_reads_nothing_when_the_files_exceed_its_share_of_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = tmp_path / "big.bin"
    big.write_bytes(b"x" * 10_000)
    monkeypatch.setattr(persist, "READ_AHEAD_MEMORY_SHARE", 9_999 / persist.memory_bytes())
    assert persist.read_ahead([big]) is None
    monkeypatch.setattr(persist, "READ_AHEAD_MEMORY_SHARE", 10_001 / persist.memory_bytes())
    thread = persist.read_ahead([big])
    assert thread is not None
    thread.join(timeout=30)


def test_lagging_index_catches_up_by_appending(tmp_path: Path) -> None:
    inner = synthetic_source(2)
    src = CountingSource(inner)
    first = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    covered = first.covered_version_id
    segments_before = _segments(tmp_path)
    rng = np.random.default_rng(8)
    special = rng.standard_normal(DIM).astype(np.float32)
    inner.add("fresh", special, valid_from_us=2 * BUCKET + 5, tx_from_us=0)
    inner.add("fresh2", rng.standard_normal(DIM), valid_from_us=2 * BUCKET + 1, tx_from_us=0)

    reopened = VectorIndex.open_or_build(
        tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET
    )
    assert src.iter_calls == [0, covered]  # appended, not rebuilt
    assert reopened.covered_version_id == covered + 2
    assert reopened.size == first.size + 2
    [(node, sim)] = pairs(reopened.search(special, 1, valid_us=3 * BUCKET, tx_us=1, live=inner))
    assert node == "fresh"
    assert abs(sim - 1.0) < TOL
    segments_after = _segments(tmp_path)
    # Every earlier segment keeps its files; the catch-up wrote one new segment of two rows.
    assert set(segments_before) < set(segments_after)
    assert [segments_after[s] for s in set(segments_after) - set(segments_before)] == [(2, 2)]
    on_disk = {f for f in os.listdir(tmp_path / INDEX_DIRNAME) if not f.startswith(".")}
    assert on_disk == {"manifest.json"} | {
        f"{stem}{ext}" for stem in segments_after for ext in (".faiss", ".npz", ".f32.npy")
    }
    # Segments are searched together, so results equal a fresh build.
    fresh = VectorIndex.build_in_memory(inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert _answers(reopened, inner) == _answers(fresh, inner)


def test_sync_in_place_and_adopting_another_writer(tmp_path: Path) -> None:
    inner = synthetic_source(4, versions=200)
    a = VectorIndex.open_or_build(tmp_path, inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    b = VectorIndex.open_or_build(tmp_path, inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert a.sync(inner) == 0
    inner.add("late", np.ones(DIM), valid_from_us=0, tx_from_us=0)
    assert a.sync(inner) == 1
    counting = CountingSource(inner)
    assert b.sync(counting) == 0  # another index object already persisted the catch-up
    assert counting.iter_calls == []
    assert b.covered_version_id == a.covered_version_id
    assert _answers(b, inner) == _answers(a, inner)


@pytest.mark.parametrize(
    ("name", "dim", "bucket"), [("other-embedder", DIM, BUCKET), ("t", DIM, 2 * BUCKET)]
)
def test_incompatible_index_is_rebuilt(tmp_path: Path, name: str, dim: int, bucket: int) -> None:
    src = CountingSource(synthetic_source(5, versions=100))
    VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    rebuilt = VectorIndex.open_or_build(
        tmp_path, src, embedder_name=name, dim=dim, bucket_us=bucket
    )
    assert src.iter_calls == [0, 0]
    assert _manifest(tmp_path)["embedder_name"] == name
    assert _manifest(tmp_path)["bucket_us"] == bucket
    fresh = VectorIndex.build_in_memory(src.inner, embedder_name=name, dim=dim, bucket_us=bucket)
    assert _answers(rebuilt, src.inner) == _answers(fresh, src.inner)


def test_other_dimension_rebuilds(tmp_path: Path) -> None:
    src = synthetic_source(6, versions=50)
    VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    other = MemoryVectorSource()
    other.add("x", np.ones(8), valid_from_us=0, tx_from_us=0)
    index = VectorIndex.open_or_build(tmp_path, other, embedder_name="t", dim=8, bucket_us=BUCKET)
    assert index.size == 1
    assert _manifest(tmp_path)["dim"] == 8


@pytest.mark.parametrize("damage", ["manifest", "partition", "store-behind"])
def test_damaged_or_stale_index_is_rebuilt(tmp_path: Path, damage: str) -> None:
    src = synthetic_source(7, versions=120)
    VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    directory = tmp_path / INDEX_DIRNAME
    if damage == "manifest":
        (directory / "manifest.json").write_text("{not json")
    elif damage == "partition":
        victim = sorted(directory.glob("*.faiss"))[0]
        victim.write_bytes(b"garbage")
    else:
        src = synthetic_source(8, versions=60)  # a replaced, smaller store
    counting = CountingSource(src)
    index = VectorIndex.open_or_build(
        tmp_path, counting, embedder_name="t", dim=DIM, bucket_us=BUCKET
    )
    assert counting.iter_calls == [0]
    fresh = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert index.size == fresh.size
    assert _answers(index, src) == _answers(fresh, src)


def test_concurrent_searches_during_catch_up() -> None:
    inner = synthetic_source(9, versions=300)
    index = VectorIndex.build_in_memory(inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    failures: list[BaseException] = []
    stop = threading.Event()

    def searcher() -> None:
        rng = np.random.default_rng(threading.get_ident() % 1000)
        try:
            while not stop.is_set():
                result = pairs(index.search(
                    rng.standard_normal(DIM), 5, valid_us=20 * BUCKET, tx_us=10**6, live=inner
                ))
                assert len(result) == 5
        except BaseException as exc:
            failures.append(exc)

    threads = [threading.Thread(target=searcher) for _ in range(3)]
    for t in threads:
        t.start()
    rng = np.random.default_rng(10)
    for round_ in range(10):
        for i in range(20):
            inner.add(
                f"new{round_}-{i}", rng.standard_normal(DIM), valid_from_us=i * 100, tx_from_us=0
            )
        assert index.sync(inner) == 20
    stop.set()
    for t in threads:
        t.join()
    assert failures == []
    fresh = VectorIndex.build_in_memory(inner, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert _answers(index, inner) == _answers(fresh, inner)


# ---------------------------------------------------------------- OpenMP pinning


def test_import_pins_openmp_to_one_thread_in_every_thread() -> None:
    code = (
        "import threading, os\n"
        "import planner_svc.index\n"
        "import faiss\n"
        "seen = []\n"
        "t = threading.Thread(target=lambda: seen.append(faiss.omp_get_max_threads()))\n"
        "t.start(); t.join()\n"
        "print(os.environ['OMP_NUM_THREADS'], faiss.omp_get_max_threads(), seen[0])\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "OMP_NUM_THREADS"}
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True
    )
    assert out.stdout.split() == ["1", "1", "1"]


class _OlderView:
    """The source as a reader inside an older store snapshot sees it."""

    def __init__(self, source: MemoryVectorSource, max_version_id: int) -> None:
        self._source = source
        self._max = max_version_id

    def iter_vectors(self, after_version_id: int = 0):  # type: ignore[no-untyped-def]
        return (r for r in self._source.iter_vectors(after_version_id) if r[0] <= self._max)

    def live_version_ids(self, version_ids, valid_us, tx_us):  # type: ignore[no-untyped-def]
        return self._source.live_version_ids(version_ids, valid_us, tx_us)

    def max_version_id(self) -> int:
        return self._max


@pytest.mark.parametrize("persisted", [False, True])
def test_catch_up_only_never_moves_the_index_backwards(tmp_path: Path, persisted: bool) -> None:
    rng = np.random.default_rng(3)
    src = MemoryVectorSource()
    for i in range(6):
        src.add(f"n{i}", rng.standard_normal(8).astype(np.float32), valid_from_us=5,
                tx_from_us=0)
    index = (
        VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=8)
        if persisted
        else VectorIndex.build_in_memory(src, embedder_name="t", dim=8)
    )
    newest = src.max_version_id()
    assert index.covered_version_id == newest
    stale = _OlderView(src, newest - 2)
    assert index.sync(stale, catch_up_only=True) == 0
    assert index.covered_version_id == newest  # a stale reader leaves the index alone
    index.sync(stale)  # without the flag the index follows the source it is given
    assert index.covered_version_id == newest - 2


class _CountingChecks(CountingSource):
    """A source that also counts how often the index asks for its newest version id."""

    def __init__(self, inner: MemoryVectorSource) -> None:
        super().__init__(inner)
        self.checks = 0

    def max_version_id(self) -> int:
        self.checks += 1
        return super().max_version_id()


class _Only:
    """Liveness that holds only the given versions live (a read model that lags the store)."""

    def __init__(self, version_ids: set[int]) -> None:
        self.version_ids = version_ids
        self.asked: list[int] = []

    def live_version_ids(self, version_ids: Collection[int], valid_us: int, tx_us: int
                         ) -> set[int]:
        self.asked.extend(version_ids)
        return {v for v in version_ids if v in self.version_ids}


def test_a_pinned_index_checks_the_store_once_and_keeps_its_state() -> None:
    inner = synthetic_source(5, versions=200)
    source = _CountingChecks(inner)
    fresh = FreshIndex(VectorIndex.build_in_memory(source, embedder_name="t", dim=DIM,
                                                   bucket_us=BUCKET), source)
    source.checks = 0
    pinned = fresh.current()
    assert source.checks == 1
    rng = np.random.default_rng(6)
    queries = [normalize_rows(rng.standard_normal((1, DIM)))[0] for _ in range(5)]
    at = {"valid_us": 20 * BUCKET, "tx_us": 10**6}
    before = [pairs(pinned.search(q, 5, **at)) for q in queries]
    # a write the pinned state does not see, however often it is searched
    added = inner.add("late", queries[0] * 3.0, valid_from_us=0, tx_from_us=0)
    assert [pairs(pinned.search(q, 5, **at)) for q in queries] == before
    assert not pinned.vector_rows([added]).held.any()
    assert source.checks == 1 and pinned.covered_version_id == added - 1
    # the next plan's state has it: one more check, and the catch-up reads its target
    again = fresh.current()
    assert source.checks == 3 and again.covered_version_id == added
    assert pairs(again.search(queries[0], 1, **at))[0][0] == "late"
    np.testing.assert_array_equal(again.vector_rows([added]).matrix[0],
                                  normalize_rows(queries[0][None, :] * 3.0)[0])


def test_a_pinned_search_asks_the_liveness_it_is_given_not_the_store() -> None:
    src = synthetic_source(8, versions=200)
    fresh = FreshIndex(VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM,
                                                   bucket_us=BUCKET), src)
    pinned = fresh.current()
    at = {"valid_us": 20 * BUCKET, "tx_us": 10**6}
    query = normalize_rows(np.random.default_rng(9).standard_normal((1, DIM)))[0]
    full = fresh.index.search(query, 20, live=src, **at)
    assert len(full) == 20
    # the read model holds every other hit live: those are dropped, the store is not asked
    keep = {h.version_id for h in full[::2]}
    only = _Only(keep)
    calls = src.live_calls
    hits = pinned.search(query, 20, live=only, **at)
    assert src.live_calls == calls and only.asked
    assert [h.version_id for h in hits][:10] == [h.version_id for h in full[::2]]
    assert all(h.version_id in keep for h in hits)
    # without one, the store answers, as VectorIndex.search does
    assert pairs(pinned.search(query, 20, **at)) == pairs(full)
    assert src.live_calls > calls


@pytest.mark.parametrize(
    ("query", "fragment"),
    [(np.ones(DIM + 1, dtype=np.float32), "shape"), (np.array([np.nan] * DIM), "NaN"),
     (np.ones((1, DIM), dtype=np.float32), "shape"), (np.zeros(DIM), "norm"),
     (np.full(DIM, np.nan, dtype=np.float32), "NaN"),
     (np.zeros(DIM, dtype=np.float32), "norm")],
)
def test_a_pinned_search_checks_a_query_that_is_not_a_float32_vector_of_the_dimension(
    query: np.ndarray, fragment: str
) -> None:
    src = synthetic_source(2, versions=50)
    fresh = FreshIndex(VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM,
                                                   bucket_us=BUCKET), src)
    with pytest.raises(InvalidRequest, match=fragment) as info:
        fresh.current().search(query, 3, valid_us=20 * BUCKET, tx_us=10**6)
    assert info.value.field == "semantic.vector"


def test_a_float32_unit_query_is_searched_as_given() -> None:
    src = synthetic_source(4, versions=300)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    fresh = FreshIndex(index, src)
    rng = np.random.default_rng(4)
    for _ in range(20):
        query = normalize_rows(rng.standard_normal((1, DIM)))[0]
        at = {"valid_us": int(rng.integers(-3 * BUCKET, 20 * BUCKET)), "tx_us": 10**6}
        assert_exact(pairs(fresh.search(query, 7, unit=True, **at)),
                     brute_force(src, query, **at), 7)
        assert [h.node_id for h in fresh.search(query, 7, unit=True, **at)] == [
            h.node_id for h in fresh.search(query, 7, **at)]


# ---------------------------------------------------------------- segments


def _small_tiers(monkeypatch: pytest.MonkeyPatch, *, approximate_min: int = 10**9) -> None:
    """Tiny segment tiers (tier 0 below 8 rows, sealed at 64) so a few hundred vectors make
    many segments and merges; approximate codes from ``approximate_min`` rows."""
    from planner_svc.index import partition as partition_module

    monkeypatch.setattr(vector_index, "BASE_ROWS", 2)
    monkeypatch.setattr(vector_index, "SEAL_ROWS", 64)
    monkeypatch.setattr(partition_module, "APPROXIMATE_MIN_ROWS", approximate_min)


def _grow(src: MemoryVectorSource, index: VectorIndex, rng: np.random.Generator, rounds: int,
          per_round: int) -> None:
    """Append ``per_round`` vectors to one bucket, then catch the index up, ``rounds`` times."""
    for _ in range(rounds):
        for _ in range(per_round):
            src.add(f"g{src.max_version_id():04d}", rng.standard_normal(DIM),
                    valid_from_us=int(rng.integers(0, BUCKET)), tx_from_us=0)
        index.sync(src)


def test_catch_up_appends_segments_and_merges_by_tier(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _small_tiers(monkeypatch)
    src = MemoryVectorSource()
    index = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    rng = np.random.default_rng(21)
    sizes_seen: list[list[int]] = []
    for _ in range(30):
        _grow(src, index, rng, 1, 7)
        sizes = [int(p["rows"]) for p in _manifest(tmp_path)["partitions"]]  # type: ignore[attr-defined]
        sizes_seen.append(sizes)
        # never MERGE_RUN unsealed segments of one tier in a row; sealed ones come first
        tiers = [vector_index._tier(s) for s in sizes if s < 64]
        assert all(len(set(tiers[i:i + 4])) > 1 for i in range(len(tiers) - 3))
        assert sum(sizes) == index.size == src.max_version_id()
    assert max(len(s) for s in sizes_seen) <= 8
    assert any(s >= 64 for s in sizes_seen[-1])  # a merge reached the sealed size
    truth_index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert truth_index.segment_count == -(-index.size // 64)  # a fresh build: sealed runs
    assert _answers(index, src) == _answers(truth_index, src)  # any layout answers alike
    for q in _queries(10):
        assert_exact(pairs(index.search(q, 25, valid_us=BUCKET, tx_us=1, live=src)),
                     brute_force(src, q, BUCKET, 1), 25)
    # only the files of listed segments are left, and a reopened index equals the live one
    files = {f for f in os.listdir(tmp_path / INDEX_DIRNAME) if f.startswith("p")}
    assert files == {stem + ext for stem in _segments(tmp_path)
                     for ext in (".faiss", ".npz", ".f32.npy")}
    reopened = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM,
                                         bucket_us=BUCKET)
    assert _answers(reopened, src) == _answers(index, src)


def test_fresh_build_is_cut_into_sealed_segments(monkeypatch: pytest.MonkeyPatch) -> None:
    _small_tiers(monkeypatch)
    src = MemoryVectorSource()
    rng = np.random.default_rng(4)
    for i in range(150):
        src.add(f"n{i:03d}", rng.standard_normal(DIM), valid_from_us=5, tx_from_us=0)
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    assert index.describe()["segments"] == 3  # 64 + 64 + 22
    q = rng.standard_normal(DIM)
    assert_exact(pairs(index.search(q, 30, valid_us=5, tx_us=0, live=src)),
                 brute_force(src, q, 5, 0), 30)


def _segmented(monkeypatch: pytest.MonkeyPatch) -> tuple[MemoryVectorSource, VectorIndex]:
    """A source and an index over it that holds its vectors in more than one segment."""
    _small_tiers(monkeypatch)
    src = MemoryVectorSource()
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    rng = np.random.default_rng(6)
    _grow(src, index, rng, 12, 5)
    assert index.segment_count > 1
    return src, index


def test_vector_rows_reads_every_segment_bit_for_bit_in_the_order_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    src, index = _segmented(monkeypatch)
    wanted = [60, 999, 1, 33, 7, 1]
    rows = index.vector_rows(wanted)
    assert rows.held.tolist() == [True, False, True, True, True, True]
    assert rows.matrix.shape == (6, DIM) and rows.matrix.dtype == np.float32
    assert not rows.matrix[1].any()
    by_id = {version.version_id: version.vector for version in src.versions()}
    for i, version_id in enumerate(wanted):
        if version_id == 999:
            continue
        vector = by_id[version_id]
        assert np.array_equal(rows.matrix[i], normalize_rows(
            np.asarray([vector], dtype=np.float32))[0])
        assert np.allclose(rows.matrix[i], vector / np.linalg.norm(vector), atol=1e-6)
    assert index.vector_rows([]).matrix.shape == (0, DIM)


def test_approximate_segments_keep_the_as_of_filter_exact(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner_svc.index import partition as partition_module

    _small_tiers(monkeypatch, approximate_min=48)
    src = synthetic_source(13, nodes=400, versions=900)
    index = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM,
                                      bucket_us=40 * BUCKET)
    kinds = index.describe()["kinds"]
    assert "ivf" in kinds and not index.describe()["exact"]  # type: ignore[operator]
    rng = np.random.default_rng(14)
    max_tx = max(v.tx_from_us for v in src.versions())
    recalls = []
    for _ in range(40):
        q = rng.standard_normal(DIM)
        valid_us = int(rng.integers(-4 * BUCKET, 18 * BUCKET))
        tx_us = int(rng.integers(0, max_tx + 10))
        truth = brute_force(src, q, valid_us, tx_us)
        got = pairs(index.search(q, 10, valid_us=valid_us, tx_us=tx_us, live=src))
        assert all(node in truth for node, _ in got)  # never a version not live as of then
        assert len({n for n, _ in got}) == len(got) == min(10, len(truth))
        exact = pairs(index.search(q, 10, valid_us=valid_us, tx_us=tx_us, live=src,
                                   exact=True))
        assert_exact(exact, truth, 10)
        if exact:
            recalls.append(len({n for n, _ in got} & {n for n, _ in exact}) / len(exact))
    assert np.mean(recalls) > 0.5
    # probing every list makes the inverted lists exhaustive: the answers are exact again
    monkeypatch.setattr(partition_module, "MIN_PROBE", 10**6)
    reopened = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM,
                                         bucket_us=40 * BUCKET)
    assert reopened.describe()["kinds"] == kinds
    for _ in range(20):
        q = rng.standard_normal(DIM)
        valid_us = int(rng.integers(-4 * BUCKET, 18 * BUCKET))
        tx_us = int(rng.integers(0, max_tx + 10))
        assert_exact(pairs(reopened.search(q, 10, valid_us=valid_us, tx_us=tx_us, live=src)),
                     brute_force(src, q, valid_us, tx_us), 10)


class _Events:
    """Stands in for a module's structlog logger and keeps what it was asked to log."""

    def __init__(self) -> None:
        self.events: list[dict[str, object]] = []

    def _keep(self, event: str, **fields: object) -> None:
        self.events.append({"event": event, **fields})

    info = debug = warning = _keep


def test_a_large_build_logs_its_progress_and_a_small_catch_up_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner_svc.index import vector_index

    src = MemoryVectorSource()
    rng = np.random.default_rng(5)
    for i in range(10_000):
        src.add(f"n{i}", rng.standard_normal(DIM), valid_from_us=i, tx_from_us=0)
    log = _Events()
    monkeypatch.setattr(vector_index, "_log", log)
    built = VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM)
    steps = [e for e in log.events if e["event"] == "vector_index.progress"]
    assert [e["at"] for e in steps] == [1_000 * k for k in range(1, 11)]
    assert steps[-1]["share"] == 1.0 and steps[-1]["target"] == built.covered_version_id
    src.add("late", rng.standard_normal(DIM), valid_from_us=0, tx_from_us=1)
    log.events.clear()
    VectorIndex.open_or_build(tmp_path, src, embedder_name="t", dim=DIM)
    assert not [e for e in log.events if e["event"] == "vector_index.progress"]


@pytest.mark.parametrize("approximate_min", [10**9, 16])
def test_segments_scanned_side_by_side_answer_as_one_thread_does(
    monkeypatch: pytest.MonkeyPatch, approximate_min: int
) -> None:
    _small_tiers(monkeypatch, approximate_min=approximate_min)
    src = MemoryVectorSource()
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=BUCKET)
    _grow(src, index, np.random.default_rng(8), 12, 9)
    assert index.segment_count > 2
    kinds = index.describe()["kinds"]
    assert ("ivf" in kinds) == (approximate_min == 16)
    calls: list[str] = []
    real_map = ThreadPoolExecutor.map

    def counted(pool: ThreadPoolExecutor, *args: Any, **kwargs: Any) -> Any:
        calls.append(threading.current_thread().name)
        return real_map(pool, *args, **kwargs)

    monkeypatch.setattr(ThreadPoolExecutor, "map", counted)
    monkeypatch.setattr(vector_index, "SEARCH_THREADS", 1)
    serial = [_answers(index, src), [
        pairs(index.search(q, 9, valid_us=BUCKET, tx_us=1, live=src, exact=True))
        for q in _queries(5)]]
    assert calls == []
    monkeypatch.setattr(vector_index, "SEARCH_THREADS", 2)
    monkeypatch.setattr(vector_index, "PARALLEL_MIN_ROWS", 1)
    side_by_side = [_answers(index, src), [
        pairs(index.search(q, 9, valid_us=BUCKET, tx_us=1, live=src, exact=True))
        for q in _queries(5)]]
    assert len(calls) >= 15  # every search ran its segments on the pool
    assert side_by_side == serial
    monkeypatch.setattr(vector_index, "PARALLEL_MIN_ROWS", 10**9)
    calls.clear()
    assert _answers(index, src) == serial[0] and calls == []  # small searches stay serial


def test_search_threads_follow_the_cores_this_process_may_use(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert min(4, len(os.sched_getaffinity(0))) == vector_index.SEARCH_THREADS  # Linux
    monkeypatch.setattr(os, "cpu_count", lambda: 64)
    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: {3, 5}, raising=False)
    assert vector_index.usable_cores() == 2  # a container allowing 2 of the machine's 64
    monkeypatch.delattr(os, "sched_getaffinity")  # a platform without affinity: all cores
    assert vector_index.usable_cores() == 64
    monkeypatch.setattr(os, "cpu_count", lambda: None)
    assert vector_index.usable_cores() == 1


def test_a_published_state_has_its_version_map_and_a_lone_segments_node_codes_built(
        tmp_path: Path) -> None:
    # built by the sync (not by the first plan that reads the state): in memory, on a fresh
    # build, and when another process's saved state is adopted
    def readied(index: VectorIndex) -> bool:
        state = index._state
        lone = len(state.partitions) != 1 or state.partitions[0]._node_codes is not None
        return state.rows._built and lone

    many = synthetic_source(1)
    one = MemoryVectorSource()
    rng = np.random.default_rng(2)
    for i in range(40):
        one.add(f"n{i % 20:03d}", rng.standard_normal(DIM).astype(np.float32),
                valid_from_us=10 * i, valid_to_us=None, tx_from_us=i + 1)
    one_index = VectorIndex.build_in_memory(one, embedder_name="t", dim=DIM, bucket_us=10**15)
    assert len(one_index._state.partitions) == 1 and readied(one_index)
    assert readied(VectorIndex.build_in_memory(many, embedder_name="t", dim=DIM,
                                               bucket_us=BUCKET))
    built = VectorIndex.open_or_build(tmp_path, many, embedder_name="t", dim=DIM,
                                      bucket_us=BUCKET)
    assert readied(built)
    adopted = VectorIndex.open_or_build(tmp_path, many, embedder_name="t", dim=DIM,
                                        bucket_us=BUCKET)
    assert readied(adopted)
