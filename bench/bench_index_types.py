"""FAISS index types compared on the vectors of a scale-benchmark data directory.

Loads the float32 unit vectors the vector index persisted (``<data>/index/*.f32.npy``, the
same rows the service searches; ``--rows`` takes an evenly spaced subset), embeds ``--queries``
generated questions about the corpus (:func:`bench.synthetic.question`), and for each index type
reports build seconds, bytes of codes, median and p99 search milliseconds (one query at a time,
one thread, including the float32 re-scoring of the candidates) and recall@k of the re-scored
top k against an exact float32 scan. Each type fetches ``--fetch`` candidates (the service
fetches 2 x 50 at its default k) and keeps the best ``k`` after re-scoring.

Types: ``flat-f32`` (IndexFlatIP, the exact scan), ``flat-fp16`` and ``flat-sq8``
(IndexScalarQuantizer), ``ivf-fp16/16`` and ``ivf-fp16/32`` (IndexIVFScalarQuantizer with
``round(2 sqrt(n))`` lists, probing one in 16 or 32: the service's approximate segments probe
one in 24), ``pq-fastscan`` (IndexPQFastScan, dim/2 4-bit sub-quantisers, fetching 4 x as
many), ``hnsw32`` (IndexHNSWFlat, M 32, efSearch 256; only up to ``--hnsw-rows`` rows: its
build is slow).

Usage: python -m bench.bench_index_types --data DIR [--rows N] [--queries 100]
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")  # as planner_svc.index does, before faiss loads

import argparse
import json
import math
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import faiss
import numpy as np

from bench._server import git_revision
from bench.synthetic import question


def load_vectors(data: Path, rows: int | None) -> np.ndarray:
    """The index's float32 vectors in manifest order (an evenly spaced subset of ``rows``)."""
    manifest = json.loads((data / "index" / "manifest.json").read_text(encoding="utf-8"))
    parts = [np.load(data / "index" / f"{p['stem']}.f32.npy", mmap_mode="r")
             for p in manifest["partitions"]]
    matrix = np.concatenate([np.asarray(p) for p in parts])
    if rows is not None and rows < matrix.shape[0]:
        matrix = matrix[np.linspace(0, matrix.shape[0] - 1, rows).astype(np.int64)]
    return np.ascontiguousarray(matrix, dtype=np.float32)


def measure(name: str, build: Callable[[], Any], vectors: np.ndarray, queries: np.ndarray,
            truth: list[set[int]], k: int, fetch: int) -> dict[str, Any]:
    t0 = time.perf_counter()
    index = build()
    build_s = time.perf_counter() - t0
    code_bytes = int(faiss.serialize_index(index).nbytes)
    times: list[float] = []
    recalls: list[float] = []
    for q, want in zip(queries, truth, strict=True):
        t0 = time.perf_counter()
        _d, ids = index.search(q[None], fetch)
        found = ids[0][ids[0] >= 0]
        sims = vectors[found] @ q
        top = found[np.argsort(-sims)[:k]]
        times.append((time.perf_counter() - t0) * 1000)
        recalls.append(len(want & set(top.tolist())) / len(want))
    print(f"bench_index_types: {name} done", file=sys.stderr, flush=True)
    return {"type": name, "build_s": round(build_s, 2), "code_mb": round(code_bytes / 2**20, 1),
            "search_p50_ms": round(statistics.median(times), 3),
            "search_p99_ms": round(sorted(times)[int(0.99 * (len(times) - 1))], 3),
            f"recall_at_{k}": round(statistics.fmean(recalls), 4),
            f"recall_at_{k}_min": round(min(recalls), 3)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", required=True)
    parser.add_argument("--rows", type=int)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--k", type=int, default=50)
    parser.add_argument("--fetch", type=int, default=100)
    parser.add_argument("--hnsw-rows", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    data = Path(args.data)
    from planner_svc.embed import default_embedder

    vectors = load_vectors(data, args.rows)
    n, dim = vectors.shape
    docs = max(1, round(n / 3.04))
    embedder = default_embedder()
    texts = [question(args.seed, (i * 7919 + 5) % docs, variant=3) for i in range(args.queries)]
    queries = np.asarray([v for v in embedder.embed(texts) if np.any(v)], dtype=np.float32)
    t0 = time.perf_counter()
    truth: list[set[int]] = []
    for q in queries:
        sims = vectors @ q
        top = np.argpartition(-sims, args.k)[:args.k]
        truth.append(set(top.tolist()))
    exact_ms = (time.perf_counter() - t0) * 1000 / len(queries)
    lists = max(1, round(2 * math.sqrt(n)))

    def sq(qt: int) -> Any:
        index = faiss.IndexScalarQuantizer(dim, qt, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.add(vectors)
        return index

    def ivf(probe_share: int) -> Callable[[], Any]:
        def build() -> Any:
            index = faiss.IndexIVFScalarQuantizer(
                faiss.IndexFlatIP(dim), dim, lists, faiss.ScalarQuantizer.QT_fp16,
                faiss.METRIC_INNER_PRODUCT)
            index.by_residual = False
            index.cp.niter = 10
            index.train(vectors[::max(1, n // (lists * 40))])
            index.add(vectors)
            index.nprobe = max(8, lists // probe_share)
            return index
        return build

    def flat() -> Any:
        index = faiss.IndexFlatIP(dim)
        index.add(vectors)
        return index

    def pq() -> Any:
        index = faiss.IndexPQFastScan(dim, dim // 2, 4, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors[::max(1, n // 32_768)])
        index.add(vectors)
        return index

    def hnsw() -> Any:
        index = faiss.IndexHNSWFlat(dim, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = 40
        index.add(vectors)
        index.hnsw.efSearch = 256
        return index

    results = [
        measure("flat-f32", flat, vectors, queries, truth, args.k, args.fetch),
        measure("flat-fp16", lambda: sq(faiss.ScalarQuantizer.QT_fp16), vectors, queries, truth,
                args.k, args.fetch),
        measure("flat-sq8", lambda: sq(faiss.ScalarQuantizer.QT_8bit), vectors, queries, truth,
                args.k, args.fetch),
        measure("ivf-fp16/16", ivf(16), vectors, queries, truth, args.k, args.fetch),
        measure("ivf-fp16/32", ivf(32), vectors, queries, truth, args.k, args.fetch),
        measure("pq-fastscan", pq, vectors, queries, truth, args.k, 4 * args.fetch),
    ]
    if n <= args.hnsw_rows:
        results.append(measure("hnsw32", hnsw, vectors, queries, truth, args.k, args.fetch))
    print(json.dumps({"bench": "index_types", "git": git_revision(), "rows": n, "dim": dim,
                      "lists": lists, "queries": len(queries), "k": args.k,
                      "fetch": args.fetch, "numpy_exact_scan_ms": round(exact_ms, 2),
                      "types": results}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
