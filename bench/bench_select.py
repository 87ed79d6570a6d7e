"""Micro-benchmark of Phase B selection (``planner_svc.core.select.select``).

Usage: python -m bench.bench_select [--sizes 1000,10000,100000] [--runs 21] [--runs-large 11]
       [--profile N]

Prints one JSON object: git revision, Python version and, per pool size, the median wall time
of ``select`` over several runs (milliseconds, ``time.perf_counter``), plus the selection counts
so a change in behaviour is visible next to a change in speed. Next to it, the median time of a
bare ``sorted()`` of the same pool by (density descending, source_id, source_version_tx, start,
end), the floor any density-ordered selection pays, and ``ratio``: select median over sorted
median. Runs of the two alternate, so both see the same load on a shared machine; medians are
reported because other processes may be running. ``--profile N`` also writes a cProfile summary
of one run at size N to stderr.

Pools are synthetic and seeded (the same pool every run and on every machine): one source per
20 spans, each source a canonical text of consecutive structural spans plus windows that
overlap them (so dedup has real work), a second version for one source in eight, tokens 20-400
at about 4 UTF-8 bytes per token, weights uniform in [0, 1). Budget 6000 tokens, per-source cap
0.4, dedup overlap 0.5 (the server defaults).
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import platform
import pstats
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from planner_svc.core.model import PlannedSpan, SpanClass, SpanRef
from planner_svc.core.select import select

BUDGET_TOKENS = 6000
MAX_FRAC_PER_SOURCE = 0.4
DEDUP_OVERLAP = 0.5
SPANS_PER_SOURCE = 20
BYTES_PER_TOKEN = 4
KINDS = ("paragraph", "paragraph", "paragraph", "heading", "cell", "code", "body")
ROOT = Path(__file__).resolve().parent.parent


def synthetic_pool(size: int, seed: int = 0) -> list[PlannedSpan]:
    """A seeded pool of ``size`` candidates (see the module docstring for its shape)."""
    rnd = random.Random(seed)
    pool: list[PlannedSpan] = []
    n_sources = max(1, size // SPANS_PER_SOURCE)
    base_tx = 1_751_500_000_000_000
    for s in range(n_sources):
        source_id = f"source-{s:06d}"
        count = SPANS_PER_SOURCE if s < n_sources - 1 else size - len(pool)
        versions = [base_tx + s]
        if s % 8 == 0:
            versions.append(base_tx + s + 86_400_000_000)
        # Structural spans laid end to end, then windows straddling two neighbours.
        structural = max(1, count * 2 // 3)
        offsets: list[tuple[int, int]] = []
        cursor = 0
        for _ in range(structural):
            length = rnd.randrange(20, 401) * BYTES_PER_TOKEN
            offsets.append((cursor, cursor + length))
            cursor += length
        while len(offsets) < count:
            a, b = offsets[rnd.randrange(len(offsets))]
            start = rnd.randrange(a, b)
            length = rnd.randrange(20, 401) * BYTES_PER_TOKEN
            offsets.append((start, start + length))
        for start, end in offsets:
            pool.append(
                PlannedSpan(
                    span=SpanRef(source_id, rnd.choice(versions), start, end),
                    kind=rnd.choice(KINDS),
                    span_class=SpanClass.CACHE if rnd.random() < 0.05 else SpanClass.TRUTH,
                    weight=rnd.random(),
                    tokens=(end - start) // BYTES_PER_TOKEN,
                )
            )
    rnd.shuffle(pool)
    return pool


def bare_sort(pool: Sequence[PlannedSpan]) -> list[PlannedSpan]:
    """The pool sorted by (density descending, source_id, source_version_tx, start, end)."""
    return sorted(
        pool,
        key=lambda c: (
            -(c.weight / max(1, c.tokens)),
            c.span.source_id,
            c.span.source_version_tx,
            c.span.start,
            c.span.end,
        ),
    )


def time_select(pool: Sequence[PlannedSpan], runs: int) -> dict[str, Any]:
    """Median/min wall time of ``select`` and of :func:`bare_sort` on ``pool``, alternating
    over ``runs`` runs each, their ratio, and the selection counts."""
    times_ms: list[float] = []
    sort_ms: list[float] = []
    result = None
    for _ in range(runs):
        t0 = time.perf_counter()
        result = select(pool, BUDGET_TOKENS, MAX_FRAC_PER_SOURCE, DEDUP_OVERLAP)
        t1 = time.perf_counter()
        bare_sort(pool)
        t2 = time.perf_counter()
        times_ms.append((t1 - t0) * 1000.0)
        sort_ms.append((t2 - t1) * 1000.0)
    assert result is not None
    s = result.stats
    median_ms = statistics.median(times_ms)
    sorted_median_ms = statistics.median(sort_ms)
    return {
        "median_ms": round(median_ms, 3),
        "min_ms": round(min(times_ms), 3),
        "sorted_median_ms": round(sorted_median_ms, 3),
        "sorted_min_ms": round(min(sort_ms), 3),
        "ratio": round(median_ms / sorted_median_ms, 2),
        "runs": runs,
        "selected": s.selected_spans,
        "used": result.used,
        "deduped": s.deduped,
        "skipped_budget_full": s.skipped_budget_full,
        "cap_skipped": s.cap_skipped,
    }


def git_revision() -> str:
    """Short revision of the working tree, with ``-dirty`` when it has changes."""
    try:
        rev = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev or "unknown"


def profile(size: int, seed: int, top: int = 15) -> str:
    """cProfile summary (cumulative time) of one ``select`` on a pool of ``size``."""
    pool = synthetic_pool(size, seed)
    profiler = cProfile.Profile()
    profiler.enable()
    select(pool, BUDGET_TOKENS, MAX_FRAC_PER_SOURCE, DEDUP_OVERLAP)
    profiler.disable()
    out = io.StringIO()
    stats = pstats.Stats(profiler, stream=out)
    stats.sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark and print its JSON report; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--sizes", default="1000,10000,100000", help="comma-separated pool sizes")
    parser.add_argument("--runs", type=int, default=21, help="runs per size (>= 5 recommended)")
    parser.add_argument(
        "--runs-large", type=int, default=11, help="runs for sizes of 100,000 and more"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--profile", type=int, default=0, help="profile one run at this size")
    args = parser.parse_args(argv)

    results: dict[str, dict[str, Any]] = {}
    for size in (int(x) for x in args.sizes.split(",") if x):
        pool = synthetic_pool(size, args.seed)
        select(pool, BUDGET_TOKENS, MAX_FRAC_PER_SOURCE, DEDUP_OVERLAP)  # warm-up
        bare_sort(pool)
        runs = args.runs_large if size >= 100_000 else args.runs
        results[str(size)] = time_select(pool, runs)
    report = {
        "bench": "select",
        "git": git_revision(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "params": {
            "budget_tokens": BUDGET_TOKENS,
            "max_frac_per_source": MAX_FRAC_PER_SOURCE,
            "dedup_overlap": DEDUP_OVERLAP,
            "spans_per_source": SPANS_PER_SOURCE,
            "seed": args.seed,
        },
        "results": results,
    }
    print(json.dumps(report))
    if args.profile:
        print(profile(args.profile, args.seed), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
