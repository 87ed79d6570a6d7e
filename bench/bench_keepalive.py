"""Does a research stream survive a client that pings every 10 s while it waits?

Two research servers with the transport options ``serve`` uses: one with the service's
keepalive policy (``serve`` defaults), one with gRPC's own default (client pings accepted every
5 minutes at most). On each, a client pinging every 10 s (``grpc.keepalive_time_ms=10000``,
``keepalive_permit_without_calls=1``, no cap on pings without data) opens a session and leaves
the stream idle for ``--hold`` seconds (default 60), as an orchestrator waiting for its workers
does. Prints one JSON object: per policy, whether the stream was still open at the end, and if
not when it ended and with what status. Takes ``--hold`` seconds (both run at once).

    python -m bench.bench_keepalive --hold 60
"""

from __future__ import annotations

import argparse
import json
import queue
import threading
import time
from collections.abc import Iterator
from concurrent import futures
from typing import Any

import grpc

from bench._server import git_revision
from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.research.testing import FakeEvidence
from planner_svc.server.app import server_options
from planner_svc.server.research import add_research_servicer
from planner_svc.settings import TransportSettings

CLIENT_OPTIONS = (
    ("grpc.keepalive_time_ms", 10_000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
GRPC_DEFAULT_MIN_PING_S = 300.0
"""gRPC core's default ``grpc.http2.min_ping_interval_without_data_ms``, in seconds."""


def _server(min_ping_interval_s: float) -> tuple[grpc.Server, str]:
    transport = TransportSettings(port=0, min_ping_interval_s=min_ping_interval_s)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=server_options(transport))
    add_research_servicer(server, evidence=FakeEvidence())
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def _hold(address: str, hold_s: float, out: dict[str, Any]) -> None:
    pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
    start = research_pb2.ResearchRequest()
    start.start.question = "What caused the Cold War and how did it end?"
    start.start.actors.append("web")
    pending.put(start)

    def events() -> Iterator[research_pb2.ResearchRequest]:
        while (event := pending.get()) is not None:
            yield event

    with grpc.insecure_channel(address, options=CLIENT_OPTIONS) as channel:
        call = research_pb2_grpc.ResearchPlannerServiceStub(channel).Research(
            events(), timeout=hold_s + 60)
        next(call)
        opened = time.monotonic()
        ended = threading.Event()
        call.add_done_callback(lambda _: ended.set())
        out["survived"] = not ended.wait(hold_s)
        if not out["survived"]:
            out["ended_after_s"] = round(time.monotonic() - opened, 1)
            out["status"] = f"{call.code().name}: {call.details()}"
        pending.put(None)
        try:
            for _ in call:
                pass
        except grpc.RpcError:
            pass


def main(argv: list[str] | None = None) -> int:
    """Run both holds at once and print the result."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=60.0, help="seconds the stream waits")
    args = parser.parse_args(argv)
    policies = {
        "serve_default": TransportSettings().min_ping_interval_s,
        "grpc_default": GRPC_DEFAULT_MIN_PING_S,
    }
    results: dict[str, dict[str, Any]] = {}
    servers = []
    threads = []
    for name, interval in policies.items():
        server, address = _server(interval)
        servers.append(server)
        results[name] = {"min_ping_interval_s": interval}
        threads.append(threading.Thread(target=_hold, args=(address, args.hold, results[name])))
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    for server in servers:
        server.stop(None)
    print(json.dumps({"bench": "keepalive", "revision": git_revision(),
                      "client_ping_s": 10, "hold_s": args.hold, "policies": results}))
    return 0 if results["serve_default"]["survived"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
