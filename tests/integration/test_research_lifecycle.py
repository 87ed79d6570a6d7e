"""A research stream's end in every way it can end: the server shutting down (a final message
with a cancelled stop reason), the caller cancelling at any point (never an internal error),
and the Research RPC's metrics."""

from __future__ import annotations

import queue
import re
import threading
import time
from collections.abc import Callable, Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from prometheus_client import REGISTRY

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.research.session import StopReason
from planner_svc.research.testing import FakeEvidence
from planner_svc.server.research import add_research_servicer
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import plain_log, start

pytestmark = pytest.mark.integration


def _start_event(question: str = "Who painted the Mona Lisa?") -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.start.question = question
    event.start.actors.extend(["web", "academic"])
    event.start.budget_tokens = 300
    return event


class _Orchestrator:
    """A client stream whose events the test sends one by one."""

    def __init__(self, channel: grpc.Channel, *, first: research_pb2.ResearchRequest | None,
                 timeout_s: float = 60.0) -> None:
        self._pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
        if first is not None:
            self._pending.put(first)
        stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
        self.call = stub.Research(self._events(), timeout=timeout_s)

    def _events(self) -> Iterator[research_pb2.ResearchRequest]:
        while (event := self._pending.get()) is not None:
            yield event

    def close(self) -> None:
        self._pending.put(None)


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


def _settled(name: str, expected: float, **labels: str) -> float:
    """The sample once it equals ``expected``, or its value after 10 s: a call's metrics are
    recorded as its handler returns, which may come after the client saw the call end."""
    deadline = time.monotonic() + 10.0
    value = _sample(name, **labels)
    while value != expected and time.monotonic() < deadline:
        time.sleep(0.01)
        value = _sample(name, **labels)
    return value


def test_shutdown_ends_open_sessions_with_a_cancelled_final_message(
    fixture_data_dir: Path, capsys: pytest.CaptureFixture[str],
) -> None:
    live = start(ServerSettings(data_dir=fixture_data_dir,
                                transport=TransportSettings(port=0, max_workers=4)))
    started = _Orchestrator(live.channel, first=_start_event())
    waiting = _Orchestrator(live.channel, first=None)  # its start never comes
    initial = next(started.call)
    assert initial.WhichOneof("update") == "initial"
    outstanding = len(initial.initial.leads)
    open_before = _sample("planner_research_sessions_open")
    stopper = threading.Thread(target=live.running.stop, args=(10.0,))
    stopper.start()
    try:
        final = next(started.call)
        assert final.WhichOneof("update") == "final"
        assert final.final.reason == int(StopReason.CANCELLED)
        assert final.final.detail == (
            f"the server is shutting down; {outstanding} lead(s) unreported"
        )
        assert list(started.call) == []
        assert started.call.code() == grpc.StatusCode.OK  # not UNAVAILABLE
        with pytest.raises(grpc.RpcError) as refused:
            next(waiting.call)
        assert refused.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
        assert refused.value.details() == (  # type: ignore[attr-defined]
            "the server is shutting down; start the session on another server"
        )
    finally:
        started.close()
        waiting.close()
        stopper.join(30)
        live.channel.close()
    assert not stopper.is_alive()
    assert _settled("planner_research_sessions_open", open_before - 1) == open_before - 1
    # the session's end is logged before its stream ends: this test's capture holds it
    sid = re.escape(initial.initial.settings.session_id)
    assert re.search(rf"research\.end .*reason=CANCELLED .*session_id={sid}",
                     plain_log(capsys.readouterr().err))


class _SerializedOnce(grpc.ServerInterceptor):  # type: ignore[misc]
    """Sets ``sent`` each time a Research response has been serialized: the servicer produced
    it and gRPC hands it to the transport next."""

    def __init__(self) -> None:
        self.sent = threading.Event()

    def intercept_service(self, continuation: Callable[..., Any], details: Any) -> Any:
        handler = continuation(details)
        if handler is None or handler.stream_stream is None:
            return handler
        serialize = handler.response_serializer

        def observed(message: Any) -> bytes:
            data: bytes = serialize(message)
            self.sent.set()
            return data

        return grpc.stream_stream_rpc_method_handler(
            handler.stream_stream, request_deserializer=handler.request_deserializer,
            response_serializer=observed,
        )


def test_client_cancellations_are_cancelled_sessions_never_internal_errors(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """16 cancellations: while the server is blocked sending an update of several MB the
    client does not read (8), while the session waits for events (4), and while evidence is
    being planned (4). Each session ends CANCELLED; nothing is logged as an internal error."""
    gate = threading.Event()
    evidence = FakeEvidence(spans_for=lambda text: 20_000, gate=gate)  # ~1.5 MB per plan
    observer = _SerializedOnce()
    ended: queue.Queue[tuple[str, StopReason | None]] = queue.Queue()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         interceptors=[observer], options=[("grpc.so_reuseport", 0)])
    add_research_servicer(server, evidence=evidence, max_sessions=2,
                          on_session_end=lambda sid, reason: ended.put((sid, reason)))
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    cancelled_before = _sample("planner_rpc_total", method="Research", code="CANCELLED")
    reasons: list[StopReason | None] = []
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            for i in range(16):
                observer.sent.clear()
                evidence.entered.clear()
                kind = ("blocked send", "waiting", "planning")[0 if i < 8 else 1 if i < 12 else 2]
                if kind == "planning":
                    gate.clear()
                else:
                    gate.set()
                client = _Orchestrator(channel, first=_start_event(f"Question {i}?"))
                if kind == "blocked send":
                    assert observer.sent.wait(30)  # the initial update is on its way, unread
                elif kind == "waiting":
                    assert next(client.call).WhichOneof("update") == "initial"
                else:
                    assert evidence.entered.wait(30)  # an evidence plan is in flight
                client.call.cancel()
                gate.set()
                _, reason = ended.get(timeout=30)
                reasons.append(reason)
                client.close()
    finally:
        gate.set()
        server.stop(None)
    assert reasons == [StopReason.CANCELLED] * 16
    err = plain_log(capsys.readouterr().err)
    assert "internal_error" not in err
    assert err.count("reason=CANCELLED") == 16
    expected = cancelled_before + 16
    assert _settled("planner_rpc_total", expected, method="Research", code="CANCELLED") == expected


def test_research_has_the_metrics_of_plan_plus_sessions_and_model_calls() -> None:
    evidence = FakeEvidence(spans_for=lambda text: 1)
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4),
                         options=[("grpc.so_reuseport", 0)])
    add_research_servicer(server, evidence=evidence)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    ok = _sample("planner_rpc_total", method="Research", code="OK")
    bad = _sample("planner_rpc_total", method="Research", code="INVALID_ARGUMENT")
    calls = _sample("planner_research_model_calls_total", provider="offline")
    latency = _sample("planner_rpc_duration_seconds_count", method="Research")
    is_open = _sample("planner_research_sessions_open")
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            client = _Orchestrator(channel, first=_start_event())
            initial = next(client.call).initial
            assert _sample("planner_research_sessions_open") == is_open + 1
            assert _sample("planner_research_model_calls_total", provider="offline") == calls + 1
            for lead in initial.leads:
                event = research_pb2.ResearchRequest()
                event.lead_result.lead_id = lead.id
                event.lead_result.claims = 1
                client._pending.put(event)
            client.close()
            final = list(client.call)[-1].final
            empty = research_pb2.ResearchRequest()
            bad_client = _Orchestrator(channel, first=empty)
            with pytest.raises(grpc.RpcError):
                list(bad_client.call)
            bad_client.close()
    finally:
        server.stop(None)
    assert _settled("planner_rpc_total", ok + 1, method="Research", code="OK") == ok + 1
    assert _settled("planner_rpc_total", bad + 1, method="Research",
                    code="INVALID_ARGUMENT") == bad + 1
    assert _settled("planner_rpc_duration_seconds_count", latency + 2,
                    method="Research") == latency + 2
    assert _sample("planner_research_sessions_open") == is_open
    assert _sample("planner_research_model_calls_total", provider="offline") == (
        calls + final.model_calls
    )
    assert _sample("planner_research_session_duration_seconds_count") >= 1
