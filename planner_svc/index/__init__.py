"""Vector index over node-version embeddings: FAISS flat partitions keyed by valid-from bucket.

The index is derived data (docs/architecture.md, "Store"): it is built from the store's vectors,
persisted under ``<data_dir>/index/``, and rebuilt or caught up whenever it lags the store. Searches
are exact and as-of aware (see :class:`VectorIndex`).

OpenMP: FAISS parallelises a search over OpenMP threads. On the 2-core machines this service
runs on, a single-query search with two OpenMP threads was 2-8x slower than with one (p99 up to
479 ms): OpenMP's hand-offs cost more than one query's scan of a segment gains, and under load
the gRPC threads keep the cores busy anyway (docs/architecture.md, "Processes and threads"). The
thread count must be fixed before libgomp initialises, i.e. before ``faiss`` is first imported, and
``faiss.omp_set_num_threads`` only affects the calling thread, not the gRPC worker threads. So
this package sets ``OMP_NUM_THREADS=1`` (unless the environment already says otherwise) before it
imports faiss, and also calls ``faiss.omp_set_num_threads(1)`` for the importing thread. Import
``planner_svc.index`` before anything else that imports faiss.

A search parallelises instead by scanning its segments side by side, whole segments spread over
a small per-process pool (:data:`~planner_svc.index.vector_index.SEARCH_THREADS` threads, each
FAISS call on them still on one OpenMP thread: ``OMP_NUM_THREADS`` covers every thread), and
only for searches over at least
:data:`~planner_svc.index.vector_index.PARALLEL_MIN_ROWS` eligible vectors, where a segment's
scan is long enough to pay for the hand-off; single-segment and small searches stay on the
calling thread.
"""

from __future__ import annotations

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")

import faiss

faiss.omp_set_num_threads(1)

from planner_svc.index.fresh import FreshIndex  # noqa: E402
from planner_svc.index.source import (  # noqa: E402
    VectorHit,
    VectorHits,
    VectorRecord,
    VectorRows,
    VectorSource,
)
from planner_svc.index.vector_index import (  # noqa: E402
    DEFAULT_BUCKET_US,
    INDEX_DIRNAME,
    VectorIndex,
)

__all__ = [
    "DEFAULT_BUCKET_US",
    "INDEX_DIRNAME",
    "FreshIndex",
    "VectorHit",
    "VectorHits",
    "VectorIndex",
    "VectorRecord",
    "VectorRows",
    "VectorSource",
]
