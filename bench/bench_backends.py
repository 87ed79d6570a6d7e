"""The two store backends side by side, in one run: the demo corpus ingested into a fresh
SQLite store and into a fresh PostgreSQL store (a server started for the run from Debian's
``postgresql`` package, durable defaults), then Plan latency over gRPC from a server on each,
requests alternating between the two so both see the same machine load, and every plan hash
compared.

Prints one JSON object: per backend the ingest time (median of ``--runs``) and documents per
second, the sequential Plan p50/p90/p99 in milliseconds, and whether every plan hash agreed;
the git revision.

Usage: python -m bench.bench_backends [--runs 1] [--requests 280] [--budget 1500]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import grpc

from bench._server import ROOT, git_revision, running_server
from bench.bench_plan_grpc import DEFAULT_QUESTIONS, percentile
from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import question_request
from tests.pgserver import PostgresServer, free_port


def _ingest(corpus: Path, where: list[str]) -> float:
    """Seconds ``planner-svc ingest`` takes (a process of its own, as a user runs it)."""
    t0 = time.perf_counter()
    subprocess.run([sys.executable, "-m", "planner_svc.cli", "ingest", str(corpus), "--quiet",
                    *where], check=True, cwd=ROOT, stdout=subprocess.DEVNULL)
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=1, help="ingest runs per backend")
    parser.add_argument("--requests", type=int, default=280, help="plans per backend")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--corpus", default=str(ROOT / ".cache" / "corpus" / "wiki_en.jsonl"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.exists():
        subprocess.run([sys.executable, "-m", "planner_svc.cli", "fetch-corpus"], check=True,
                       cwd=ROOT)
    with corpus.open(encoding="utf-8") as fh:
        documents = sum(1 for line in fh if line.strip())
    with open(DEFAULT_QUESTIONS, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    requests = [question_request(q, budget_tokens=args.budget, allow_ungrounded=True)
                for q in questions]

    with tempfile.TemporaryDirectory() as tmp, PostgresServer() as pg:
        ingest: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        for run in range(args.runs):
            ingest["sqlite"].append(_ingest(corpus, ["--data", f"{tmp}/sqlite{run}"]))
            url = pg.create_database(f"run{run}")
            ingest["postgresql"].append(_ingest(corpus, ["--store", url]))
        latency: dict[str, list[float]] = {"sqlite": [], "postgresql": []}
        hashes: dict[str, list[str]] = {"sqlite": [], "postgresql": []}
        with (
            running_server(f"{tmp}/sqlite0", free_port()) as lite,
            running_server(f"{tmp}/replica", free_port(), store=pg.url("run0")) as shared,
            grpc.insecure_channel(lite) as lite_channel,
            grpc.insecure_channel(shared) as shared_channel,
        ):
            stubs = {"sqlite": plan_pb2_grpc.EvidencePlannerServiceStub(lite_channel),
                     "postgresql": plan_pb2_grpc.EvidencePlannerServiceStub(shared_channel)}
            for request in requests[:20]:  # warm-up
                for stub in stubs.values():
                    stub.Plan(request, timeout=60)
            for i in range(args.requests):
                for name in (("sqlite", "postgresql") if i % 2 else ("postgresql", "sqlite")):
                    t0 = time.perf_counter()
                    plan = stubs[name].Plan(requests[i % len(requests)], timeout=60).plan
                    latency[name].append((time.perf_counter() - t0) * 1000)
                    hashes[name].append(plan.plan_hash)

    def backend(name: str) -> dict[str, object]:
        samples = latency[name]
        return {
            "ingest_median_s": round(statistics.median(ingest[name]), 1),
            "ingest_docs_per_s": round(documents / statistics.median(ingest[name]), 1),
            "plan_p50_ms": round(statistics.median(samples), 2),
            "plan_p90_ms": round(percentile(samples, 0.90), 2),
            "plan_p99_ms": round(percentile(samples, 0.99), 2),
        }

    print(json.dumps({
        "bench": "backends",
        "git": git_revision(),
        "documents": documents,
        "runs": args.runs,
        "requests": args.requests,
        "budget": args.budget,
        "sqlite": backend("sqlite"),
        "postgresql": backend("postgresql"),
        "plan_hashes_equal": hashes["sqlite"] == hashes["postgresql"],
    }))
    return 0 if hashes["sqlite"] == hashes["postgresql"] else 1


if __name__ == "__main__":
    sys.exit(main())
