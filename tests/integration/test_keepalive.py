"""The keepalive policy: a client pinging an idle research stream on a schedule the policy
allows keeps the stream; one pinging faster than it allows is sent away.

Real clients ping every 10 s and streams wait minutes (``python -m bench.bench_keepalive``
measures exactly that against the defaults). Here the same ratios run 10 times faster: the
server accepts pings every 0.5 s and the client pings every second (the most often a gRPC core
client pings), for 5 s of waiting; with a server policy of 2 s the same client is refused
after three pings, as a 10 s pinger was after 30 s under gRPC's default of 5 minutes.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from concurrent import futures

import grpc
import pytest

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.research.session import StopReason
from planner_svc.research.testing import FakeEvidence
from planner_svc.server.app import MAX_PING_STRIKES, server_options
from planner_svc.server.research import add_research_servicer
from planner_svc.settings import TransportSettings

pytestmark = pytest.mark.integration

CLIENT_PINGS = (
    ("grpc.keepalive_time_ms", 1000),
    ("grpc.keepalive_permit_without_calls", 1),
    ("grpc.http2.max_pings_without_data", 0),
)
WAIT_S = 5.0
REFUSAL_WAIT_S = 30.0


def test_default_policy_accepts_a_client_pinging_every_10_s() -> None:
    options = dict(server_options(TransportSettings()))
    assert options["grpc.http2.min_ping_interval_without_data_ms"] == 5000  # <= 10 s: no strike
    assert options["grpc.keepalive_permit_without_calls"] == 1
    assert options["grpc.http2.max_ping_strikes"] == MAX_PING_STRIKES == 2
    assert options["grpc.http2.max_pings_without_data"] == 0  # server pings an idle stream
    assert (options["grpc.keepalive_time_ms"], options["grpc.keepalive_timeout_ms"]) == (
        60_000, 20_000
    )


def _hold_a_session(address: str, result: dict[str, object], wait_s: float) -> None:
    """Open a session, then wait up to ``wait_s`` with the stream idle (the server waits for
    lead results); record whether the stream ended during the wait, and how the session
    ended."""
    pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
    start_event = research_pb2.ResearchRequest()
    start_event.start.question = "Who painted the Mona Lisa?"
    start_event.start.actors.append("web")
    pending.put(start_event)

    def events() -> Iterator[research_pb2.ResearchRequest]:
        while (event := pending.get()) is not None:
            yield event

    with grpc.insecure_channel(address, options=CLIENT_PINGS) as channel:
        call = research_pb2_grpc.ResearchPlannerServiceStub(channel).Research(
            events(), timeout=60)
        assert next(call).WhichOneof("update") == "initial"
        ended = threading.Event()
        call.add_done_callback(lambda _: ended.set())
        result["ended_while_waiting"] = ended.wait(wait_s)
        pending.put(None)
        try:
            updates = list(call)
            result["final"] = updates[-1].final.reason if updates else None
        except grpc.RpcError as err:
            result["error"] = (err.code(), err.details())  # type: ignore[attr-defined]


def _research_server(min_ping_interval_s: float) -> tuple[grpc.Server, str]:
    """A research server with the transport options ``serve`` uses (only the policy scaled)."""
    transport = TransportSettings(port=0, min_ping_interval_s=min_ping_interval_s)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=server_options(transport))
    add_research_servicer(server, evidence=FakeEvidence())
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def test_idle_stream_survives_pings_the_policy_allows_and_not_faster_ones() -> None:
    allowed, allowed_address = _research_server(0.5)
    strict, strict_address = _research_server(2.0)
    kept: dict[str, object] = {}
    refused: dict[str, object] = {}
    # the refused stream ends after its third ping (~3 s); a busy machine may delay the
    # client's ping timer, so that side waits up to REFUSAL_WAIT_S for the end
    threads = [threading.Thread(target=_hold_a_session, args=(allowed_address, kept, WAIT_S)),
               threading.Thread(target=_hold_a_session,
                                args=(strict_address, refused, REFUSAL_WAIT_S))]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
    finally:
        allowed.stop(None)
        strict.stop(None)
    assert kept == {"ended_while_waiting": False, "final": int(StopReason.CANCELLED)}
    assert refused == {"ended_while_waiting": True,
                       "error": (grpc.StatusCode.UNAVAILABLE, "Too many pings")}
