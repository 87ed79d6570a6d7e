"""Fuzz every RPC of a ``planner-svc serve`` process and print the status counts.

The cases are the fuzz test's (:mod:`tests.fuzzcases`: random bytes, random and plausible
messages, truncated ones, replaced bytes, invalid UTF-8; streams mixing them, ingest streams
carrying valid documents among them), run ``--calls`` times per RPC (default 10,000) against a
server over a copy of the data directory (the fixture corpus unless ``--data`` names one; the
copy is written to, the original never). Prints each RPC's counts on stderr as it finishes,
then one JSON line: per RPC the count of each
status, the calls that failed the server (INTERNAL, UNKNOWN, UNAVAILABLE, DATA_LOSS), the ingest
streams whose valid documents were not all committed, and whether the server process was still
the one started. Exits 1 when any of those is not zero (or the server was gone).

    python -m bench.fuzz                    # 10,000 calls per RPC on the fixture corpus
    python -m bench.fuzz --calls 500 --rpc Plan --rpc Research
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import json
import shutil
import socket
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import grpc
from hypothesis import HealthCheck, Phase, given, settings

from bench._server import ROOT, git_revision, running_server
from tests.fuzzcases import FAILURES, RPCS, Payload, Rpc, payloads, perform

FIXTURE = ROOT / "tests" / "fixtures" / "wiki_fixture.jsonl"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _prepare(data: str | None, work: Path) -> Path:
    target = work / "data"
    if data is not None:
        shutil.copytree(data, target)
        return target
    from planner_svc.cli import main

    with contextlib.redirect_stdout(sys.stderr):  # stdout carries the report only
        code = main(["ingest", str(FIXTURE), "--data", str(target)])
    if code != 0:
        raise SystemExit(f"could not ingest {FIXTURE}")
    return target


def fuzz_rpc(channel: grpc.Channel, rpc: Rpc, calls: int) -> dict[str, Any]:
    """``calls`` fuzzed calls to ``rpc``; the status counts and the failures."""
    counts: collections.Counter[str] = collections.Counter()
    failures: list[str] = []
    uncommitted = 0

    @settings(max_examples=calls, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck))
    @given(payload=payloads(rpc))
    def call(payload: Payload) -> None:
        nonlocal uncommitted
        outcome = perform(channel, rpc, payload)
        counts[outcome.code] += 1
        if outcome.code in FAILURES and len(failures) < 5:
            failures.append(f"{outcome.code}: {outcome.details[:200]}")
        if payload.valid_sources and not outcome.committed:
            uncommitted += 1

    started = time.perf_counter()
    call()
    return {
        "calls": sum(counts.values()),
        "statuses": dict(counts.most_common()),
        "failed_server": sum(counts[c] for c in FAILURES),
        "failure_examples": failures,
        "ingest_streams_not_committed": uncommitted,
        "seconds": round(time.perf_counter() - started, 1),
    }


def main(argv: list[str] | None = None) -> int:
    """Run the fuzz; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=10_000, help="calls per RPC")
    parser.add_argument("--rpc", action="append", choices=[r.name for r in RPCS],
                        help="only these RPCs (repeatable; default all)")
    parser.add_argument("--data", default=None,
                        help="data directory to copy (default: the fixture corpus, ingested)")
    args = parser.parse_args(argv)
    chosen = [r for r in RPCS if not args.rpc or r.name in args.rpc]
    with tempfile.TemporaryDirectory(prefix="planner-fuzz-") as work:
        data = _prepare(args.data, Path(work))
        port = _free_port()
        report: dict[str, Any] = {"bench": "fuzz", "revision": git_revision(),
                                  "calls_per_rpc": args.calls, "rpcs": {}}
        with running_server(str(data), port) as address, grpc.insecure_channel(address) as ch:
            for rpc in chosen:
                report["rpcs"][rpc.name] = fuzz_rpc(ch, rpc, args.calls)
                print(f"{rpc.name}: {report['rpcs'][rpc.name]['statuses']}", file=sys.stderr)
            from grpc_health.v1 import health_pb2, health_pb2_grpc

            status = health_pb2_grpc.HealthStub(ch).Check(health_pb2.HealthCheckRequest(),
                                                          timeout=10).status
            report["server_serving_after"] = status == health_pb2.HealthCheckResponse.SERVING
    print(json.dumps(report))
    bad = any(r["failed_server"] or r["ingest_streams_not_committed"]
              for r in report["rpcs"].values())
    return 1 if bad or not report["server_serving_after"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
