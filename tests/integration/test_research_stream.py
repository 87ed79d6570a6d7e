"""The ResearchPlanner stream on a real gRPC server bound to a loopback port."""

from __future__ import annotations

import argparse
import json
import queue
import threading
from collections.abc import Callable, Iterator
from concurrent import futures
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.client import research as cli
from planner_svc.research.openai_provider import OpenAISettings
from planner_svc.research.providers import make_provider_factory
from planner_svc.research.session import StopReason
from planner_svc.research.testing import FakeEvidence
from planner_svc.server.research import add_research_servicer

pytestmark = pytest.mark.integration

QUESTION = "What caused the 2021 outage and how was it fixed? Who reported it first?"


@dataclass
class Served:
    address: str
    evidence: FakeEvidence
    ended: queue.Queue[tuple[str, StopReason | None]] = field(default_factory=queue.Queue)
    terminated: threading.Event = field(default_factory=threading.Event)


class _Observed:
    """A servicer context that also sets ``terminated`` when the RPC ends (cancelled, deadline
    or done), right after the callbacks the servicer registered: once the event is set, the
    servicer has already been told."""

    def __init__(self, context: grpc.ServicerContext, terminated: threading.Event) -> None:
        self._context = context
        self._terminated = terminated

    def add_callback(self, callback: Callable[[], None]) -> bool:
        added = bool(self._context.add_callback(callback))
        self._context.add_callback(self._terminated.set)
        return added

    def __getattr__(self, name: str) -> Any:
        return getattr(self._context, name)


class ObserveTermination(grpc.ServerInterceptor):  # type: ignore[misc]
    """Hands every Research stream an :class:`_Observed` context."""

    def __init__(self, terminated: threading.Event) -> None:
        self._terminated = terminated

    def intercept_service(
        self,
        continuation: Callable[[grpc.HandlerCallDetails], grpc.RpcMethodHandler | None],
        details: grpc.HandlerCallDetails,
    ) -> grpc.RpcMethodHandler | None:
        handler = continuation(details)
        if handler is None or handler.stream_stream is None:
            return handler
        behavior = handler.stream_stream
        terminated = self._terminated

        def observed(requests: Iterator[Any], context: grpc.ServicerContext) -> Iterator[Any]:
            return behavior(requests, _Observed(context, terminated))  # type: ignore[no-any-return]

        return grpc.stream_stream_rpc_method_handler(
            observed,
            request_deserializer=handler.request_deserializer,
            response_serializer=handler.response_serializer,
        )


def serve(
    evidence: FakeEvidence,
    *,
    cassette_dir: Path | None = None,
    openai_url: str | None = None,
    retries: int = 3,
) -> tuple[grpc.Server, Served]:
    served = Served(address="", evidence=evidence)
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        interceptors=[ObserveTermination(served.terminated)],
        options=[("grpc.so_reuseport", 0)],
    )
    openai = (
        OpenAISettings(base_url=openai_url, model="tiny", max_retries=retries)
        if openai_url else None
    )
    add_research_servicer(
        server,
        evidence=evidence,
        provider_factory=make_provider_factory(cassette_dir=cassette_dir, openai=openai),
        on_session_end=lambda sid, reason: served.ended.put((sid, reason)),
    )
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    served.address = f"127.0.0.1:{port}"
    return server, served


@pytest.fixture
def served() -> Iterator[Served]:
    server, info = serve(FakeEvidence(spans_for=lambda text: 0 if "fixed" in text else 2))
    try:
        yield info
    finally:
        server.stop(grace=None)


def start_event(question: str = QUESTION, **caps: int) -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.start.question = question
    event.start.actors.extend(["web", "academic"])
    event.start.at_valid = 1_600_000_000_000_000
    event.start.budget_tokens = 400
    for name, value in caps.items():
        setattr(event.start.caps, name, value)
    return event


def run_cli(served: Served, *argv: str) -> tuple[int, str]:
    import contextlib
    import io

    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    args = parser.parse_args(["research", QUESTION, "--address", served.address, *argv])
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = args.func(args)
    # the server's handler ends the session (and logs it) after the stream's last message:
    # wait for it (and leave the record for the test), so its log line stays inside this
    # test's captured output
    served.ended.put(served.ended.get(timeout=30))
    # The in-process server's log lines share stdout; keep the command's own output.
    printed = [line for line in out.getvalue().splitlines() if "research." not in line]
    return code, "\n".join(printed) + "\n"


def test_full_session_through_the_cli_orchestrator(served: Served) -> None:
    code, out = run_cli(served, "--actors", "web,academic", "--budget", "400")
    assert code == 0, out
    lines = out.splitlines()
    assert lines[0].startswith("session rs-")
    assert "provider=offline actors=web,academic" in lines[0]
    assert "caps: initial=4 new=3 every=3 max_depth=2" in lines[0]
    assert "  q1: What caused the 2021 outage?  [" in out
    assert "-L2 -> academic; evidence: 0 span(s), 0 tokens]" in out
    assert "replan 1 (offline: closed 2" in out
    assert "answered=['q1', 'q3'] open=['q2', 'q4']" in out
    assert "q4: Which sources cover fixed caused 2021 outage reported first?" in out
    assert lines[-2] == (
        "stopped: STOP_REASON_DONE (nothing new to research and no lead outstanding)"
    )
    assert lines[-1] == (
        "planner model calls: 3 for 4 lead(s) run (2 replan round(s), 4 claim(s), 2 dead end(s))"
    )
    sid, reason = served.ended.get(timeout=5)
    assert sid == lines[0].split()[1]
    assert reason is StopReason.DONE
    # Every evidence plan was made as of the session's settings.
    assert {c[3] for c in served.evidence.calls} == {400}


def test_cli_with_no_follow_up_rounds_reports_the_depth_cap(served: Served) -> None:
    code, out = run_cli(served, "--actors", "web,academic", "--max-depth", "-1")
    assert code == 0, out
    assert "max_depth=-1" in out.splitlines()[0]
    assert "\nreplan " not in out
    assert out.splitlines()[-2].startswith("stopped: STOP_REASON_DEPTH_CAP (follow-up rounds")
    assert out.splitlines()[-1].startswith("planner model calls: 1 for 3 lead(s) run")


def stream(
    address: str, events: list[research_pb2.ResearchRequest]
) -> list[research_pb2.ResearchResponse]:
    with grpc.insecure_channel(address) as channel:
        stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
        return list(stub.Research(iter(events), timeout=30))


def lead_result(lead_id: str, claims: int = 0, cause: str = "") -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.lead_result.lead_id = lead_id
    if cause:
        event.lead_result.dead_end.cause = cause
    else:
        event.lead_result.claims = claims
    return event


def interactive(
    address: str, start: research_pb2.ResearchRequest
) -> list[research_pb2.ResearchResponse]:
    """Play the orchestrator: answer every lead (dead end for 'fixed', else 2 claims)."""
    pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
    pending.put(start)

    def events() -> Iterator[research_pb2.ResearchRequest]:
        while (event := pending.get()) is not None:
            yield event

    updates = []
    with grpc.insecure_channel(address) as channel:
        stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
        try:
            for update in stub.Research(events(), timeout=30):
                updates.append(update)
                kind = update.WhichOneof("update")
                if kind == "final":
                    break
                leads = update.initial.leads if kind == "initial" else update.replan.leads
                for lead in leads:
                    pending.put(
                        lead_result(lead.id, cause="no_results")
                        if "fixed" in lead.query
                        else lead_result(lead.id, 2)
                    )
        finally:
            pending.put(None)
    return updates


def test_full_session_stream_shape(served: Served) -> None:
    updates = interactive(served.address, start_event())
    kinds = [u.WhichOneof("update") for u in updates]
    assert kinds == ["initial", "replan", "final"]
    init, replan, final = (updates[0].initial, updates[1].replan, updates[2].final)
    assert [q.text for q in init.sub_questions] == [
        "What caused the 2021 outage?",
        "How was it fixed?",
        "Who reported it first?",
    ]
    assert [lead.actor for lead in init.leads] == ["web", "academic", "web"]
    assert init.sub_questions[0].evidence.plan_hash == "fake:2"
    assert init.sub_questions[1].evidence.plan_hash == "fake:0"
    assert init.settings.budget_tokens == 400 and init.settings.at_valid == 1_600_000_000_000_000
    # an absent transaction time is pinned to the session's start (one snapshot per session)
    assert init.settings.HasField("at_tx") and init.settings.at_tx > 1_700_000_000_000_000
    assert (init.settings.caps.max_initial_leads, init.settings.caps.max_depth) == (4, 2)
    assert init.settings.digest_max_chars == 4000
    assert replan.round == 1 and list(replan.answered) == ["q1", "q3"]
    assert [(lead.id.split("-")[-1], lead.actor, lead.depth) for lead in replan.leads] == [
        ("L4", "academic", 1)
    ]
    assert final.reason == research_pb2.STOP_REASON_DONE
    assert final.detail == "nothing new to research and no lead outstanding"
    # The second replan (after the follow-up lead's dead end) had nothing new to propose.
    assert (final.model_calls, final.rounds, final.leads_run, final.claims_found) == (3, 2, 4, 4)
    assert final.dead_ends == 2
    assert [q.id for q in final.sub_questions] == ["q1", "q2", "q3", "q4"]


def violation(err: grpc.RpcError) -> tuple[grpc.StatusCode, str]:
    assert isinstance(err, grpc.Call)
    status = rpc_status.from_call(err)
    assert status is not None
    (detail,) = status.details
    bad = error_details_pb2.BadRequest()
    assert detail.Unpack(bad)
    (fv,) = bad.field_violations
    return err.code(), fv.field


@pytest.mark.parametrize(
    ("events", "field"),
    [
        ([lead_result("x", 1)], "start"),
        ([start_event(max_depth=9)], "start.caps.max_depth"),
        ([start_event(question="   ")], "start.question"),
        ([start_event(), lead_result("nope", 1)], "lead_result.lead_id"),
        ([start_event(), research_pb2.ResearchRequest()], "event"),
        ([start_event(), start_event()], "start"),
    ],
)
def test_malformed_events_get_invalid_argument_and_the_server_keeps_serving(
    served: Served, events: list[research_pb2.ResearchRequest], field: str
) -> None:
    with pytest.raises(grpc.RpcError) as err:
        stream(served.address, events)
    assert violation(err.value) == (grpc.StatusCode.INVALID_ARGUMENT, field)
    # The same server still runs a whole session.
    assert (
        interactive(served.address, start_event())[-1].final.reason == research_pb2.STOP_REASON_DONE
    )


def test_unknown_provider_is_an_invalid_start(served: Served) -> None:
    event = start_event()
    event.start.provider = "cassette:../../etc/passwd"
    with pytest.raises(grpc.RpcError) as err:
        stream(served.address, [event])
    assert violation(err.value) == (grpc.StatusCode.INVALID_ARGUMENT, "start.provider")


def test_client_cancellation_stops_work_at_once() -> None:
    gate = threading.Event()
    evidence = FakeEvidence(gate=gate)
    server, info = serve(evidence)
    try:
        with grpc.insecure_channel(info.address) as channel:
            stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
            call = stub.Research(iter([start_event()]), timeout=30)
            assert evidence.entered.wait(5)  # the first evidence plan is in flight
            call.cancel()  # type: ignore[no-untyped-call]
            assert info.terminated.wait(10)  # the server has seen the cancellation
            gate.set()  # let the in-flight plan return
            _, reason = info.ended.get(timeout=5)
            assert reason is StopReason.CANCELLED
            assert len(evidence.calls) == 1  # the other sub-questions were never planned
            with pytest.raises(grpc.RpcError) as err:
                list(call)
            assert isinstance(err.value, grpc.Call)
            assert err.value.code() == grpc.StatusCode.CANCELLED
        # An idle session (waiting for lead results) is cancelled too.
        with grpc.insecure_channel(info.address) as channel:
            stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
            hold: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
            hold.put(start_event())

            def events() -> Iterator[research_pb2.ResearchRequest]:
                while (event := hold.get()) is not None:
                    yield event

            idle = stub.Research(events(), timeout=30)
            assert next(iter(idle)).WhichOneof("update") == "initial"
            idle.cancel()
            hold.put(None)
            assert info.ended.get(timeout=5)[1] is StopReason.CANCELLED
    finally:
        server.stop(grace=None)


class ChatServer:
    """A chat-completions endpoint answering decompose and replan prompts deterministically
    from a counter (so a second recording would differ: replay must not call it)."""

    def __init__(self) -> None:
        self.calls = 0
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.calls += 1
                user = body["messages"][1]["content"]
                if "<digest>" in user:
                    answer = {"sub_questions": [f"Follow-up {outer.calls}?"], "answered": ["q1"]}
                else:
                    answer = {"sub_questions": ["What failed?", "Who fixed it?"]}
                raw = json.dumps(
                    {
                        "model": "tiny",
                        "choices": [{"message": {"content": json.dumps(answer)}}],
                        "usage": {"prompt_tokens": 100 + outer.calls, "completion_tokens": 9},
                    }
                ).encode()
                self.send_response(200)
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, args=(0.02,), daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


def test_same_events_and_same_cassette_give_the_same_stream(tmp_path: Path) -> None:
    chat = ChatServer()
    server, info = serve(FakeEvidence(), cassette_dir=tmp_path, openai_url=chat.url)

    def session(provider: str) -> list[research_pb2.ResearchResponse]:
        event = start_event(max_depth=1, replan_every=2)
        event.start.at_tx = 1_700_000_000_000_000  # a replay names its snapshot
        event.start.provider = provider
        return interactive(info.address, event)

    try:
        recorded = session("record:run.jsonl")
        calls_after_recording = chat.calls
        chat.close()  # replay must not need the model
        first = session("cassette:run.jsonl")
        second = session("cassette:run.jsonl")
    finally:
        server.stop(grace=None)
    assert calls_after_recording == 2
    assert len((tmp_path / "run.jsonl").read_text().splitlines()) == 2
    assert [u.WhichOneof("update") for u in first] == ["initial", "replan", "final"]
    assert first[1].replan.sub_questions[0].text == "Follow-up 2?"
    assert first[1].replan.usage.prompt_tokens == 102
    assert first[0].initial.settings.provider == "cassette:run.jsonl"
    wire_first = [u.SerializeToString(deterministic=True) for u in first]
    assert [u.SerializeToString(deterministic=True) for u in second] == wire_first
    # The recording session streamed the same plans (only the provider label differs).
    recorded[0].initial.settings.provider = "cassette:run.jsonl"
    assert [u.SerializeToString(deterministic=True) for u in recorded] == wire_first
    assert first[-1].final.reason == research_pb2.STOP_REASON_DEPTH_CAP


def test_a_replayed_cassette_miss_is_failed_precondition(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    server, info = serve(FakeEvidence(), cassette_dir=tmp_path)
    try:
        event = start_event()
        event.start.provider = "cassette:empty.jsonl"
        with pytest.raises(grpc.RpcError) as err:
            stream(info.address, [event])
        assert isinstance(err.value, grpc.Call)
        assert err.value.code() == grpc.StatusCode.FAILED_PRECONDITION
        assert "no recording" in (err.value.details() or "")
    finally:
        server.stop(grace=None)


def test_a_model_endpoint_that_is_down_is_unavailable() -> None:
    chat = ChatServer()
    chat.close()  # nothing listens there any more
    server, info = serve(FakeEvidence(), openai_url=chat.url, retries=0)
    try:
        event = start_event()
        event.start.provider = "openai"
        with pytest.raises(grpc.RpcError) as err:
            stream(info.address, [event])
        assert isinstance(err.value, grpc.Call)
        assert err.value.code() == grpc.StatusCode.UNAVAILABLE
        assert (err.value.details() or "").startswith("planner model: ")
        assert info.ended.get(timeout=5)[1] is None  # the session ended with an error
    finally:
        server.stop(grace=None)
