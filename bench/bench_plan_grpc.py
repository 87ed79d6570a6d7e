"""Plan RPC latency over gRPC against a server on a loopback port.

Starts ``planner-svc serve`` on an existing data directory (run ``make demo`` first for the full
corpus), sends the questions of a JSONL file (``question`` field) round-robin — first
sequentially (latency), then from several client threads (throughput) — and prints one JSON
object: p50/p90/p99 in milliseconds per phase, requests per second, the git revision.

Usage: python -m bench.bench_plan_grpc [--data data/demo] [--requests 300] [--clients 4]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import threading
import time

import grpc

from bench._server import ROOT, git_revision, running_server
from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import question_request

DEFAULT_QUESTIONS = ROOT / "bench" / "eval" / "dev.jsonl"


def percentile(samples: list[float], q: float) -> float:
    """The q-quantile (0..1) by nearest rank."""
    ordered = sorted(samples)
    rank = max(0, min(len(ordered) - 1, round(q * (len(ordered) - 1))))
    return ordered[rank]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data" / "demo"))
    parser.add_argument("--questions", default=str(DEFAULT_QUESTIONS))
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--clients", type=int, default=4)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--port", type=int, default=50161)
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    requests = [question_request(q, budget_tokens=args.budget) for q in questions]

    with (
        running_server(args.data, args.port, workers=args.workers) as address,
        grpc.insecure_channel(address) as channel,
    ):
        stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        for r in requests[:20]:  # warm-up
            stub.Plan(r, timeout=30)
        seq: list[float] = []
        for i in range(args.requests):
            t0 = time.perf_counter()
            stub.Plan(requests[i % len(requests)], timeout=30)
            seq.append((time.perf_counter() - t0) * 1000)

        conc: list[float] = []
        lock = threading.Lock()
        per_client = args.requests // args.clients

        def worker(offset: int) -> None:
            # One connection per client (a local subchannel pool), so SO_REUSEPORT can
            # spread clients over worker processes.
            local: list[float] = []
            with grpc.insecure_channel(
                address, options=[("grpc.use_local_subchannel_pool", 1)]
            ) as own:
                own_stub = plan_pb2_grpc.EvidencePlannerServiceStub(own)
                own_stub.Plan(requests[offset % len(requests)], timeout=30)
                for i in range(per_client):
                    t0 = time.perf_counter()
                    own_stub.Plan(requests[(offset + i) % len(requests)], timeout=30)
                    local.append((time.perf_counter() - t0) * 1000)
            with lock:
                conc.extend(local)

        threads = [threading.Thread(target=worker, args=(c * 7,))
                   for c in range(args.clients)]
        t_start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - t_start

    def summary(samples: list[float]) -> dict[str, float]:
        return {
            "n": len(samples),
            "p50_ms": round(statistics.median(samples), 2),
            "p90_ms": round(percentile(samples, 0.90), 2),
            "p99_ms": round(percentile(samples, 0.99), 2),
        }

    print(json.dumps({
        "bench": "plan_grpc",
        "git": git_revision(),
        "budget": args.budget,
        "workers": args.workers,
        "sequential": summary(seq),
        "concurrent": {**summary(conc), "clients": args.clients,
                       "rps": round(len(conc) / wall, 1)},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
