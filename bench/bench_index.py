"""Micro-benchmark of the vector index search (``planner_svc.index.VectorIndex.search``).

Usage: python -m bench.bench_index [--sizes 10000,100000] [--queries 200] [--k 10]

Prints one JSON object: git revision, faiss version, OpenMP threads and, per index size, the
build time and the median / p95 latency (milliseconds, ``time.perf_counter``, after a warm-up)
of one query for:

- ``flat_raw``: a single ``faiss.IndexFlatIP`` over every vector, no filter (the floor);
- ``no_filter``: ``VectorIndex.search`` at an as-of point after every valid_from (every
  partition scanned whole, liveness checked on the candidates);
- ``asof_half`` / ``asof_tenth``: as-of points at 50% and 10% of the valid-from range (later
  partitions skipped, the boundary one scanned as a sorted prefix).

Data is synthetic and seeded: unit vectors of dimension 256 from a normal distribution,
valid_from uniform over two years (30-day partitions, about 25), one version in ten superseded
in transaction time. Liveness comes from the in-memory source, so the figures exclude the
store's SQL liveness query (one query per 256 candidates).
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as planner_svc.index does, before faiss loads

import argparse
import json
import platform
import statistics
import subprocess
import time
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from planner_svc.index import DEFAULT_BUCKET_US, VectorHit, VectorIndex
from planner_svc.index.memory_source import MemoryVectorSource

ROOT = Path(__file__).resolve().parent.parent
DIM = 256
SPAN_US = 2 * 365 * 86_400 * 1_000_000
START_US = 1_700_000_000_000_000
WARMUP = 20


def git_revision() -> str:
    """Short git revision of the working tree, or "unknown"."""
    try:
        out = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def synthetic_source(size: int, seed: int) -> tuple[MemoryVectorSource, np.ndarray]:
    """A seeded source of ``size`` versions (see the module docstring) and its unit vectors."""
    rng = np.random.default_rng(seed)
    vectors = rng.standard_normal((size, DIM)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    valid_from = START_US + rng.integers(0, SPAN_US, size)
    src = MemoryVectorSource()
    for i in range(size):
        superseded = i % 10 == 0
        src.add(
            f"node-{i:07d}",
            vectors[i],
            valid_from_us=int(valid_from[i]),
            tx_from_us=0,
            tx_to_us=100 if superseded else None,
        )
    return src, vectors


def _timed(fn: Any, queries: np.ndarray) -> dict[str, float]:
    for q in queries[:WARMUP]:
        fn(q)
    samples = []
    for q in queries[WARMUP:]:
        t0 = time.perf_counter()
        fn(q)
        samples.append((time.perf_counter() - t0) * 1e3)
    samples.sort()
    return {
        "median_ms": round(statistics.median(samples), 3),
        "p95_ms": round(samples[int(0.95 * (len(samples) - 1))], 3),
    }


def bench_size(size: int, n_queries: int, k: int) -> dict[str, Any]:
    """Build an index of ``size`` vectors and time each search variant."""
    src, vectors = synthetic_source(size, seed=size)
    t0 = time.perf_counter()
    index = VectorIndex.build_in_memory(src, embedder_name="bench", dim=DIM)
    build_s = time.perf_counter() - t0
    flat = faiss.IndexFlatIP(DIM)
    flat.add(vectors)
    rng = np.random.default_rng(7)
    queries = rng.standard_normal((n_queries + WARMUP, DIM)).astype(np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    tx_now = 1_000

    def at(fraction: float) -> Any:
        valid_us = START_US + int(fraction * SPAN_US)

        def run(q: np.ndarray) -> list[VectorHit]:
            return index.search(q, k, valid_us=valid_us, tx_us=tx_now, live=src)

        return run

    return {
        "vectors": size,
        "partitions": len(index.partition_buckets),
        "build_s": round(build_s, 3),
        "flat_raw": _timed(lambda q: flat.search(q.reshape(1, DIM), k), queries),
        "no_filter": _timed(at(1.01), queries),
        "asof_half": _timed(at(0.5), queries),
        "asof_tenth": _timed(at(0.1), queries),
    }


def main() -> int:
    """Run the benchmark and print one JSON object."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=10)
    args = parser.parse_args()
    report = {
        "benchmark": "vector_index_search",
        "git_revision": git_revision(),
        "python": platform.python_version(),
        "faiss": faiss.__version__,
        "omp_threads": faiss.omp_get_max_threads(),
        "dim": DIM,
        "k": args.k,
        "queries": args.queries,
        "bucket_days": DEFAULT_BUCKET_US // (86_400 * 1_000_000),
        "results": [bench_size(int(s), args.queries, args.k) for s in args.sizes.split(",")],
    }
    print(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
