"""Scale: a synthetic corpus of about a million passages through the normal ingest path, then
Plan over gRPC on it.

Generates :mod:`bench.synthetic` documents (seeded; about three passages each), streams them
to a ``planner-svc serve`` on a fresh data directory over ``MemoryService.IngestSources`` in
``--streams`` consecutive streams of equal size (each stream committed and indexed in batches
of 256 by the server), timing each stream. Then restarts the server on the finished data
directory and measures its start-up, the first plan (which builds the recall catalog from the
store's change feed), resident memory, and Plan latency over gRPC on distinct generated
questions. Last, it opens the vector index in this process and measures its search latency and
its recall against an exact scan of the same live vectors.

Prints one JSON object: ingest seconds and documents/s overall and over the first and last
tenth of the streams (and their ratio), also per second of the server's CPU time (on a shared
machine the wall-clock rate follows the other load), store and index size on disk, server
RSS, catalog build time, Plan p50/p90/p99, the vector index's layout, search latency and
recall@k, the git revision. Generation time is excluded from ingest time.

Not run in CI at full size (about 20 minutes on 2 cores, more when a slow disk holds up the
restarted server's load); ``--passages 3000`` is a smoke run.

Usage: python -m bench.bench_scale [--passages 1000000] [--data DIR] [--keep]
       python -m bench.bench_scale --reuse DIR   (skip ingest, measure an existing directory)
"""

from __future__ import annotations

import argparse
import contextlib
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import numpy as np

from bench._server import ROOT, git_revision
from bench.synthetic import document, question
from planner_svc.api.planner.v1 import memory_pb2, memory_pb2_grpc, plan_pb2_grpc
from planner_svc.client.common import NotServing, question_request, wait_serving

PASSAGES_PER_DOC = 3.04
"""Measured mean of :func:`bench.synthetic.document` under the default passage rules."""


@contextlib.contextmanager
def server_process(data: str, port: int, *, timeout_s: float = 120.0
                   ) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """Start ``planner-svc serve`` on 127.0.0.1:``port`` over ``data`` (created when missing);
    yields its address and process once SERVING (the process, to read its CPU time and RSS);
    SIGTERM at exit.

    Raises:
        SystemExit: the server exited, or it never became SERVING.
    """
    address = f"127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-m", "planner_svc.cli", "serve", "--data", data, "--port", str(port),
         "--log-level", "warning"],
        cwd=ROOT,
    )
    try:
        try:
            wait_serving(address, proc, timeout_s)
        except NotServing as exc:
            raise SystemExit(str(exc)) from None
        yield address, proc
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=60)


def percentile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[rank]


def rss_mb(pid: int) -> dict[str, float]:
    """Resident memory of a process from /proc (MB): total, anonymous, file-backed."""
    fields: dict[str, float] = {}
    with open(f"/proc/{pid}/status", encoding="ascii") as fh:
        for line in fh:
            key, _, value = line.partition(":")
            if key in ("VmRSS", "RssAnon", "RssFile", "VmHWM"):
                fields[key] = round(int(value.split()[0]) / 1024, 1)
    return fields


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of a process so far (all its threads), seconds."""
    import os

    with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
        fields = fh.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def du_mb(path: Path) -> float:
    """Bytes under ``path`` in MB (apparent size of regular files)."""
    if path.is_file():
        return round(path.stat().st_size / 2**20, 1)
    return round(sum(p.stat().st_size for p in path.rglob("*") if p.is_file()) / 2**20, 1)


def requests_for(seed: int, start: int, stop: int, total: int
                 ) -> list[memory_pb2.IngestSourcesRequest]:
    out = []
    for number in range(start, stop):
        doc = document(seed, number, total)
        out.append(memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
            source_id=doc.source_id, title=doc.title, media_type="text/markdown", text=doc.text,
            properties={"topic": str(doc.topic)})))
    return out


def ingest(address: str, pid: int, seed: int, docs: int, streams: int) -> dict[str, Any]:
    """Stream the corpus in ``streams`` parts; per-part seconds, server CPU seconds, documents
    and passages. The CPU time makes the rates comparable on a shared machine."""
    parts: list[dict[str, float]] = []
    bounds = [round(i * docs / streams) for i in range(streams + 1)]
    gen_s = 0.0
    with grpc.insecure_channel(address, options=[("grpc.max_send_message_length", 1 << 26)]
                               ) as channel:
        stub = memory_pb2_grpc.MemoryServiceStub(channel)
        for i in range(streams):
            g0 = time.perf_counter()
            batch = requests_for(seed, bounds[i], bounds[i + 1], docs)
            gen_s += time.perf_counter() - g0
            t0, c0 = time.perf_counter(), cpu_seconds(pid)
            response = stub.IngestSources(iter(batch), timeout=3600)
            seconds, cpu = time.perf_counter() - t0, cpu_seconds(pid) - c0
            if response.failed:
                raise SystemExit(f"ingest failed: {list(response.errors)[:3]}")
            parts.append({"seconds": seconds, "cpu": cpu, "docs": response.ingested,
                          "passages": response.nodes - response.ingested,
                          "edges": response.edges})
            done = bounds[i + 1]
            print(f"bench_scale: {done}/{docs} documents, stream {i + 1}/{streams} "
                  f"{response.ingested / seconds:.0f} docs/s, "
                  f"{response.ingested / max(cpu, 1e-9):.0f} docs per server CPU second",
                  file=sys.stderr, flush=True)
    tenth = max(1, streams // 10)

    def rate(chunk: list[dict[str, float]], key: str = "seconds") -> float:
        return sum(p["docs"] for p in chunk) / sum(p[key] for p in chunk)

    first, last = rate(parts[:tenth]), rate(parts[-tenth:])
    first_cpu, last_cpu = rate(parts[:tenth], "cpu"), rate(parts[-tenth:], "cpu")
    total_s = sum(p["seconds"] for p in parts)
    return {
        "documents": int(sum(p["docs"] for p in parts)),
        "passages": int(sum(p["passages"] for p in parts)),
        "edges": int(sum(p["edges"] for p in parts)),
        "seconds": round(total_s, 1),
        "docs_per_s": round(sum(p["docs"] for p in parts) / total_s, 1),
        "first_tenth_docs_per_s": round(first, 1),
        "last_tenth_docs_per_s": round(last, 1),
        "last_over_first": round(last / first, 3),
        "server_cpu_seconds": round(sum(p["cpu"] for p in parts), 1),
        "first_tenth_docs_per_cpu_s": round(first_cpu, 1),
        "last_tenth_docs_per_cpu_s": round(last_cpu, 1),
        "cpu_last_over_first": round(last_cpu / first_cpu, 3),
        "per_stream_docs_per_s": [round(p["docs"] / p["seconds"], 1) for p in parts],
        "per_stream_docs_per_cpu_s": [round(p["docs"] / p["cpu"], 1) for p in parts],
        "generation_seconds": round(gen_s, 1),
    }


def plan_latency(address: str, seed: int, docs: int, count: int, budget: int
                 ) -> dict[str, Any]:
    """Serial Plan latency on ``count`` distinct questions about documents spread over the
    corpus (after a warm-up on other questions)."""
    step = max(1, docs // (count + 20))
    questions = [question(seed, (i * step + 1) % docs, variant=0) for i in range(count + 20)]
    requests = [question_request(q, budget_tokens=budget) for q in questions]
    samples: list[float] = []
    declined = 0
    with grpc.insecure_channel(address) as channel:
        stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        for r in requests[count:]:  # warm-up on the 20 questions not measured
            with contextlib.suppress(grpc.RpcError):
                stub.Plan(r, timeout=60)
        for r in requests[:count]:
            t0 = time.perf_counter()
            try:
                stub.Plan(r, timeout=60)
            except grpc.RpcError as exc:
                if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:
                    raise
                declined += 1
            samples.append((time.perf_counter() - t0) * 1000)
    return {
        "n": len(samples),
        "declined": declined,
        "p50_ms": round(statistics.median(samples), 2),
        "p90_ms": round(percentile(samples, 0.90), 2),
        "p99_ms": round(percentile(samples, 0.99), 2),
    }


def first_plan_ms(address: str, seed: int) -> float:
    """One plan on a fresh server: the recall catalog is built from the store first."""
    with grpc.insecure_channel(address) as channel:
        stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        t0 = time.perf_counter()
        try:
            stub.Plan(question_request(question(seed, 0, variant=1), budget_tokens=1500),
                      timeout=1800)
        except grpc.RpcError as exc:
            if exc.code() != grpc.StatusCode.FAILED_PRECONDITION:
                raise
        return round((time.perf_counter() - t0) * 1000, 1)


def index_quality(data: Path, seed: int, docs: int, queries: int, k: int) -> dict[str, Any]:
    """The vector index's layout, search latency and recall@k against an exact scan of the
    same live vectors, for ``queries`` embedded questions, as of now."""
    from planner_svc.clock import wall_clock_us
    from planner_svc.embed import default_embedder
    from planner_svc.index import VectorIndex
    from planner_svc.store import Store

    embedder = default_embedder()
    step = max(1, docs // queries)
    texts = [question(seed, (i * step + 3) % docs, variant=2) for i in range(queries)]
    vectors = embedder.embed(texts)
    with Store.open(data) as store:
        t0 = time.perf_counter()
        index = VectorIndex.open_or_build(data, store, embedder_name=embedder.name,
                                          dim=embedder.dim)
        open_s = time.perf_counter() - t0
        now = wall_clock_us()
        search_ms: list[float] = []
        exact_ms: list[float] = []
        recalls: list[float] = []
        for vec in vectors:
            if not np.any(vec):
                continue
            t0 = time.perf_counter()
            hits = index.search(vec, k, valid_us=now, tx_us=now, live=store)
            search_ms.append((time.perf_counter() - t0) * 1000)
            t0 = time.perf_counter()
            exact = index.search(vec, k, valid_us=now, tx_us=now, live=store, exact=True)
            exact_ms.append((time.perf_counter() - t0) * 1000)
            want = {h.node_id for h in exact}
            recalls.append(len(want & {h.node_id for h in hits}) / max(1, len(want)))
        return {
            "open_s": round(open_s, 2),
            "vectors": index.size,
            "layout": index.describe(),
            "k": k,
            "queries": len(recalls),
            "search_p50_ms": round(statistics.median(search_ms), 3),
            "search_p99_ms": round(percentile(search_ms, 0.99), 3),
            "exact_scan_p50_ms": round(statistics.median(exact_ms), 3),
            "recall_at_k_mean": round(statistics.fmean(recalls), 4),
            "recall_at_k_min": round(min(recalls), 4),
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--passages", type=int, default=1_000_000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--streams", type=int, default=100)
    parser.add_argument("--questions", type=int, default=300)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--port", type=int, default=50171)
    parser.add_argument("--data", help="data directory to create (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the data directory")
    parser.add_argument("--reuse", help="measure an existing data directory (no ingest)")
    parser.add_argument("--skip-index", action="store_true",
                        help="skip the in-process vector index measurement")
    parser.add_argument("--recall-queries", type=int, default=200)
    parser.add_argument("--k", type=int, default=100, help="neighbours for recall@k (the "
                        "semantic leg fetches 2 x its default k of 50)")
    args = parser.parse_args()
    docs = max(10, round(args.passages / PASSAGES_PER_DOC))
    result: dict[str, Any] = {"bench": "scale", "git": git_revision(), "seed": args.seed}

    temporary = None
    if args.reuse:
        data = Path(args.reuse)
        meta_file = data / "bench_scale.json"
        if meta_file.exists():  # written when this bench's ingest finished
            meta = json.loads(meta_file.read_text(encoding="utf-8"))
            docs, result["ingest"] = int(meta["documents"]), meta.get("ingest")
        else:  # an ingest cut short: the documents it committed
            from planner_svc.store import Store

            with Store.open(data) as store:
                docs = store.count_sources()
    elif args.data:
        data = Path(args.data)
        if data.exists() and any(data.iterdir()):
            raise SystemExit(f"{data} is not empty (use --reuse to measure it)")
    else:
        temporary = tempfile.mkdtemp(prefix="bench-scale-", dir=ROOT / "data"
                                     if (ROOT / "data").is_dir() else None)
        data = Path(temporary)
    try:
        if not args.reuse:
            with server_process(str(data), args.port) as (address, proc):
                result["ingest"] = ingest(address, proc.pid, args.seed, docs, args.streams)
            (data / "bench_scale.json").write_text(json.dumps(
                {"documents": docs, "ingest": result["ingest"]}), encoding="utf-8")
        result["disk_mb"] = {
            "store": du_mb(data / "store.sqlite") + (du_mb(data / "store.sqlite-wal")
                                                     if (data / "store.sqlite-wal").exists()
                                                     else 0.0),
            "index": du_mb(data / "index"),
        }
        t0 = time.perf_counter()
        with server_process(str(data), args.port, timeout_s=1800) as (address, proc):
            result["server_start_s"] = round(time.perf_counter() - t0, 2)
            rss_start = rss_mb(proc.pid)
            result["first_plan_ms"] = first_plan_ms(address, args.seed)
            rss_catalog = rss_mb(proc.pid)
            result["plan"] = plan_latency(address, args.seed, docs, args.questions, args.budget)
            result["rss_mb"] = {"after_start": rss_start, "after_catalog": rss_catalog,
                                "after_plans": rss_mb(proc.pid)}
        if not args.skip_index:
            result["vector_index"] = index_quality(data, args.seed, docs, args.recall_queries,
                                                   args.k)
    finally:
        if temporary and not args.keep:
            shutil.rmtree(temporary, ignore_errors=True)
    print(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
