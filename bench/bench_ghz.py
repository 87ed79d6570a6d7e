"""Load test of the Plan RPC with ghz (github.com/bojand/ghz) against a loopback server.

Uses the pinned ghz of :mod:`bench.gotools` (installed into .cache/bin on first use), starts
``planner-svc serve`` on an existing data directory (``make demo`` first) and asks for plans of
question texts taken round-robin from a JSONL file. ghz reads the contract through server
reflection: no proto files. Prints one JSON object: requests/s, latency percentiles in ms,
status-code counts and the git revision.

Usage: python -m bench.bench_ghz [--data data/demo] [--total 2000] [--concurrency 8]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile

from bench._server import ROOT, git_revision, running_server
from bench.bench_plan_grpc import DEFAULT_QUESTIONS
from bench.gotools import go_tool

PLAN_CALL = "planner.v1.EvidencePlannerService.Plan"
"""The method ghz calls, resolved through server reflection."""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default=str(ROOT / "data" / "demo"))
    parser.add_argument("--questions", default=str(DEFAULT_QUESTIONS))
    parser.add_argument("--total", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--budget", type=int, default=1500)
    parser.add_argument("--port", type=int, default=50162)
    parser.add_argument("--workers", type=int, default=1, help="server worker processes")
    args = parser.parse_args()
    with open(args.questions, encoding="utf-8") as fh:
        questions = [json.loads(line)["question"] for line in fh if line.strip()]
    data = [
        {"question": q, "expandDepth": 1, "budgetTokens": str(args.budget)} for q in questions
    ]
    ghz = str(go_tool("ghz"))
    with running_server(args.data, args.port, workers=args.workers) as address:
        with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
            json.dump(data, fh)
            data_file = fh.name
        out = subprocess.run(
            [ghz, "--insecure", "--call", PLAN_CALL, "--data-file", data_file,
             "-n", str(args.total), "-c", str(args.concurrency), "--connections", "2",
             "--timeout", "10s", "--format", "json", address],
            check=True, capture_output=True, text=True,
        )
    report = json.loads(out.stdout)
    lat = {d["percentage"]: d["latency"] / 1e6 for d in report.get("latencyDistribution") or []}
    print(json.dumps({
        "bench": "ghz_plan",
        "git": git_revision(),
        "total": report["count"],
        "concurrency": args.concurrency,
        "workers": args.workers,
        "rps": round(report["rps"], 1),
        "p50_ms": round(lat.get(50, 0.0), 2),
        "p90_ms": round(lat.get(90, 0.0), 2),
        "p99_ms": round(lat.get(99, 0.0), 2),
        "status": report.get("statusCodeDistribution"),
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
