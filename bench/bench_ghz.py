"""Load test of the Plan RPC with ghz (github.com/bojand/ghz), against the transport's bound.

Uses the pinned ghz of :mod:`bench.gotools` (installed into .cache/bin on first use). In one
invocation it:

1. starts ``planner-svc serve`` on an existing data directory (``make demo`` first) with each
   worker count of ``--workers`` in turn, and loads it with Plan requests whose questions are
   the JSONL file's, each in turn (ghz sends the elements of its data array round-robin);
2. starts :mod:`bench._prebuilt_server`, a server built from the same stubs and transport
   settings that answers every Plan with one prebuilt ``PlanResponse`` (the real server's answer
   to one of the questions, the one of median serialized size), and loads it with the same
   requests at the same concurrency.

Each load uses one HTTP/2 connection per concurrent call (``--connections``): a ``--workers N``
server's processes share the port through SO_REUSEPORT, where the kernel hands out
connections, not calls, so with fewer connections some worker may get none and idle (with 2
connections and 2 workers, half the runs). Each load runs for ``--duration`` after a short
warm-up ghz run that is not counted. ghz reads the contract through server reflection: no proto
files. Prints one JSON object: per Plan run its requests/s, latency percentiles in ms and
status counts; the same for the prebuilt server; each Plan run's throughput as a share of the
prebuilt server's; each run's throughput relative to the first run's (worker scaling); the
response sizes; the git revision.

Usage: python -m bench.bench_ghz [--data data/demo] [--duration 15] [--concurrency 8]
       [--connections 8] [--workers 1,2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import grpc

from bench._server import ROOT, git_revision, running_process, running_server
from bench.bench_plan_grpc import DEFAULT_QUESTIONS
from bench.gotools import go_tool
from planner_svc.api.planner.v1 import plan_pb2, plan_pb2_grpc
from planner_svc.client.common import question_request

PLAN_CALL = "planner.v1.EvidencePlannerService.Plan"
"""The method ghz calls, resolved through server reflection."""
WARM_UP_S = 3
"""Seconds of load before each measured run (every worker builds its catalog, caches warm)."""


def ghz(binary: str, address: str, data_file: str, *, seconds: float, concurrency: int,
        connections: int) -> dict[str, Any]:
    """One ghz run of ``seconds`` at ``concurrency`` over ``connections`` HTTP/2 connections:
    requests/s, latency percentiles (ms) and status-code counts, and each error message's
    count."""
    out = subprocess.run(
        [binary, "--insecure", "--call", PLAN_CALL, "--data-file", data_file,
         "-z", f"{seconds}s", "-c", str(concurrency), "--connections", str(connections),
         "--timeout", "10s", "--connect-timeout", "30s", "--format", "json", address],
        check=False, capture_output=True, text=True,
    )
    # ghz exits non-zero when some calls failed (say, cancelled as the run ends) yet still
    # writes its report; only a run without a report is an error.
    if not out.stdout.strip():
        raise SystemExit(f"ghz failed ({out.returncode}): {out.stderr.strip()}")
    report = json.loads(out.stdout)
    lat = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    return {
        "total": report["count"],
        "rps": round(report["rps"], 1),
        "p50_ms": round(lat.get(50, 0.0), 2),
        "p90_ms": round(lat.get(90, 0.0), 2),
        "p99_ms": round(lat.get(99, 0.0), 2),
        "status": report.get("statusCodeDistribution"),
        # why calls failed: the few in flight when the run's time is up end as Unavailable,
        # on the prebuilt server too (ghz closes its own connections: "use of closed network
        # connection")
        "errors": report.get("errorDistribution") or {},
    }


def median_response(address: str, questions: list[str], budget: int) -> plan_pb2.PlanResponse:
    """The server's answer to each question; the one of median serialized size."""
    sized: list[tuple[int, int, plan_pb2.PlanResponse]] = []
    with grpc.insecure_channel(address) as channel:
        stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        for i, question in enumerate(questions):
            try:
                response = stub.Plan(question_request(question, budget_tokens=budget),
                                     timeout=60)
            except grpc.RpcError:
                continue  # a declined question has no plan to stand in for
            sized.append((response.ByteSize(), i, response))
    if not sized:
        raise SystemExit("the server planned none of the questions")
    sized.sort(key=lambda item: item[:2])
    return sized[len(sized) // 2][2]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data" / "demo"))
    parser.add_argument("--questions", default=str(DEFAULT_QUESTIONS))
    parser.add_argument("--duration", type=float, default=15.0,
                        help="seconds of measured load per server")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--connections", type=int, default=0,
                        help="HTTP/2 connections ghz opens, at most --concurrency (0: one "
                        "per concurrent call). The kernel spreads connections, not calls, over "
                        "the workers of a --workers N server: with 2 connections and 2 workers "
                        "both land on one worker half the time")
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--port", type=int, default=50162)
    parser.add_argument("--workers", default="1",
                        help="comma-separated worker counts of the Plan server, run in turn")
    args = parser.parse_args()
    if not 0 <= args.connections <= args.concurrency:
        # ghz refuses more connections than concurrent calls; say so before starting servers
        parser.error(f"--connections must be between 0 (one per call) and --concurrency "
                     f"({args.concurrency}), got {args.connections}")
    worker_counts = [int(w) for w in args.workers.split(",")]
    connections = args.connections or args.concurrency
    with open(args.questions, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    data = [
        {"question": q, "expandDepth": 1, "budgetTokens": str(args.budget)} for q in questions
    ]
    binary = str(go_tool("ghz"))
    with tempfile.TemporaryDirectory() as tmp:
        data_file = str(Path(tmp) / "requests.json")
        Path(data_file).write_text(json.dumps(data), encoding="utf-8")
        runs: list[dict[str, Any]] = []
        prebuilt_file = Path(tmp) / "response.bin"
        for workers in worker_counts:
            with running_server(args.data, args.port, workers=workers) as address:
                if not prebuilt_file.exists():
                    response = median_response(address, questions, args.budget)
                    prebuilt_file.write_bytes(response.SerializeToString())
                ghz(binary, address, data_file, seconds=WARM_UP_S,
                    concurrency=args.concurrency, connections=connections)
                runs.append({"workers": workers, **ghz(
                    binary, address, data_file, seconds=args.duration,
                    concurrency=args.concurrency, connections=connections)})
        command = [sys.executable, "-m", "bench._prebuilt_server", "--port", str(args.port),
                   "--response", str(prebuilt_file)]
        with running_process(command, args.port) as address:
            ghz(binary, address, data_file, seconds=WARM_UP_S, concurrency=args.concurrency,
                connections=connections)
            prebuilt = ghz(binary, address, data_file, seconds=args.duration,
                           concurrency=args.concurrency, connections=connections)
        response_bytes = prebuilt_file.stat().st_size
    for run in runs:
        run["share_of_prebuilt"] = round(run["rps"] / prebuilt["rps"], 4)
        run["vs_first_run"] = round(run["rps"] / runs[0]["rps"], 3)
    print(json.dumps({
        "bench": "ghz_plan",
        "git": git_revision(),
        "concurrency": args.concurrency,
        "connections": connections,
        "duration_s": args.duration,
        "budget": args.budget,
        "questions": len(questions),
        "plan": runs,
        "prebuilt": {**prebuilt, "response_bytes": response_bytes},
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
