"""Responses against the message limit: clients take what the server may send; the server
refuses what it may not send, names the limit and what to lower, and a research session
survives an update that would not fit."""

from __future__ import annotations

import queue
import re
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest

from planner_svc.api.planner.v1 import (
    plan_pb2,
    plan_pb2_grpc,
    research_pb2,
    research_pb2_grpc,
)
from planner_svc.cli import main
from planner_svc.client.common import question_request
from planner_svc.client.connection import open_channel
from planner_svc.recall.timing import PLAN_STAGES
from planner_svc.research.session import StopReason
from planner_svc.research.testing import FakeEvidence, evidence_plan
from planner_svc.server.convert import plan_to_proto
from planner_svc.server.research import add_research_servicer, fit_update
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import Live, plain_log, start

pytestmark = pytest.mark.integration

QUESTION = "Which port is the world's busiest by cargo tonnage?"
LIMIT = 64 * 1024  # the fixture's plan at 10,000 tokens: about 39 KB, 103 KB with explain


def test_plan_over_the_send_limit_is_resource_exhausted_naming_what_to_lower(
    fixture_data_dir: Path, live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    request = question_request(QUESTION, budget_tokens=10_000, explain=True)
    size = live.planner.Plan(request, timeout=30).ByteSize()  # the same plan, unlimited
    assert size > LIMIT
    small = start(ServerSettings(data_dir=fixture_data_dir, transport=TransportSettings(
        port=0, max_workers=2, max_message_bytes=LIMIT)))
    try:
        plain = question_request(QUESTION, budget_tokens=10_000)
        assert small.planner.Plan(plain, timeout=30).ByteSize() <= LIMIT  # fits without explain
        capsys.readouterr()
        with pytest.raises(grpc.RpcError) as caught:
            small.planner.Plan(request, timeout=30, metadata=(("x-request-id", "too-big"),))
    finally:
        small.channel.close()
        small.running.stop(0)
    err = caught.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    details: str = err.details()  # type: ignore[attr-defined]
    measured = re.fullmatch(
        r"the plan response is (\d+) bytes, over the server's 65536-byte message limit; "
        r"lower budget_tokens, or leave explain unset \(it lists every candidate\)", details)
    assert measured is not None, details
    # the same plan; only its stage timings (varints of microseconds) may differ in length
    assert abs(int(measured.group(1)) - size) <= 2 * len(PLAN_STAGES)
    [line] = [plain_log(x) for x in capsys.readouterr().err.splitlines() if "too-big" in x]
    assert "[error" in line and "response_too_large" in line  # an error, not a success


class _BigPlans(plan_pb2_grpc.EvidencePlannerServiceServicer):
    """Answers every Plan with 100 spans of 64 KiB of text: a 6.4 MB response, past gRPC's
    4 MiB client default."""

    def Plan(self, request: Any, context: grpc.ServicerContext) -> plan_pb2.PlanResponse:
        plan = plan_pb2.EvidencePlan(plan_model="v1", budget=10_000_000, plan_hash="b3:big")
        for i in range(100):
            span = plan.spans.add(kind="paragraph", tokens=16_000, weight=1.0,
                                  text="x" * 65_536)
            span.span.source_id = f"big/{i}"
            span.span.end = 65_536
        return plan_pb2.PlanResponse(plan=plan)


@pytest.fixture
def big_server() -> Iterator[str]:
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2),
                         options=[("grpc.so_reuseport", 0)])
    plan_pb2_grpc.add_EvidencePlannerServiceServicer_to_server(_BigPlans(), server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}"
    server.stop(None)


def test_clients_receive_what_the_server_may_send(
    big_server: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # A default channel refuses the response; the clients' channel takes it.
    with grpc.insecure_channel(big_server) as default:
        with pytest.raises(grpc.RpcError) as caught:
            plan_pb2_grpc.EvidencePlannerServiceStub(default).Plan(
                question_request("q"), timeout=30)
        assert caught.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    with open_channel(big_server) as channel:
        reply = plan_pb2_grpc.EvidencePlannerServiceStub(channel).Plan(
            question_request("q"), timeout=30)
    assert reply.ByteSize() > 6_000_000
    assert main(["plan", "q", "--address", big_server, "--json"]) == 0
    assert '"planHash": "b3:big"' in capsys.readouterr().out


def _research_server(evidence: FakeEvidence, limit: int) -> tuple[grpc.Server, str]:
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=4),
        options=[("grpc.so_reuseport", 0), ("grpc.max_send_message_length", limit)],
    )
    add_research_servicer(server, evidence=evidence, max_message_bytes=limit)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    return server, f"127.0.0.1:{port}"


def test_a_research_update_too_large_drops_the_largest_evidence_and_the_session_goes_on(
    capsys: pytest.CaptureFixture[str],
) -> None:
    question = "What caused the 2021 outage and how was it fixed? Who reported it first?"
    spans = {"What caused the 2021 outage?": 600, "How was it fixed?": 500}
    evidence = FakeEvidence(spans_for=lambda text: spans.get(text, 2))
    sizes = {text: plan_to_proto(evidence_plan(text, n, budget=400)).ByteSize()
             for text, n in spans.items()}
    limit = 60_000
    assert sum(sizes.values()) > limit > max(sizes.values())
    server, address = _research_server(evidence, limit)
    try:
        pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
        start = research_pb2.ResearchRequest()
        start.start.question = question
        start.start.actors.append("web")
        start.start.budget_tokens = 400
        pending.put(start)

        def events() -> Iterator[research_pb2.ResearchRequest]:
            while (event := pending.get()) is not None:
                yield event

        with grpc.insecure_channel(address) as channel:
            call = research_pb2_grpc.ResearchPlannerServiceStub(channel).Research(
                events(), timeout=60)
            initial = next(call).initial
            for lead in initial.leads:
                event = research_pb2.ResearchRequest()
                event.lead_result.lead_id = lead.id
                event.lead_result.claims = 1
                pending.put(event)
            pending.put(None)
            rest = list(call)
    finally:
        server.stop(None)
    by_text = {q.text: q for q in initial.sub_questions}
    big = by_text["What caused the 2021 outage?"]
    assert not big.HasField("evidence")
    assert big.evidence_error == (
        f"ResponseTooLarge: the evidence plan is {sizes[big.text]} bytes; with it this update "
        "would exceed the server's 60000-byte message limit (lower budget_tokens)"
    )
    kept = by_text["How was it fixed?"]
    assert len(kept.evidence.spans) == 500 and kept.evidence_error == ""
    assert rest[-1].WhichOneof("update") == "final"  # the session went on to its end
    assert rest[-1].final.reason == int(StopReason.DONE)
    logged = [plain_log(x) for x in capsys.readouterr().err.splitlines()
              if "evidence_too_large" in x]
    assert len(logged) == 1 and "[error" in logged[0]


def test_fit_update_refuses_an_update_too_large_even_without_evidence() -> None:
    from planner_svc.core.errors import ResponseTooLarge

    message = research_pb2.ResearchResponse()
    message.replan.rationale = "r" * 5000
    q = message.replan.sub_questions.add(id="q1", text="t")
    q.evidence.CopyFrom(plan_to_proto(evidence_plan("t", 100)))
    with pytest.raises(ResponseTooLarge) as caught:
        fit_update(message, 4000)
    assert str(caught.value) == (
        f"the research replan update is {message.ByteSize()} bytes, over the server's "
        "4000-byte message limit (lower budget_tokens, or the caps on leads)"
    )
    fits = research_pb2.ResearchResponse()
    fits.replan.rationale = "ok"
    assert fit_update(fits, 4000) is fits


def test_research_cli_receives_an_update_past_4_mib(capsys: pytest.CaptureFixture[str]) -> None:
    evidence = FakeEvidence(spans_for=lambda text: 60_000)  # ~5 MB per sub-question plan
    server, address = _research_server(evidence, 64 * 1024 * 1024)
    try:
        code = main(["research", "Who painted the Mona Lisa?", "--address", address,
                     "--max-depth", "-1"])
    finally:
        server.stop(None)
    out = capsys.readouterr().out
    assert code == 0, out
    assert "60000 span(s)" in out
    assert "stopped: STOP_REASON_DEPTH_CAP" in out


def test_an_ingest_summary_over_the_limit_is_refused_and_its_documents_are_committed(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    import shutil

    from planner_svc.api.planner.v1 import memory_pb2

    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    small = start(ServerSettings(data_dir=data, transport=TransportSettings(
        port=0, max_workers=2, max_message_bytes=2048)))

    def doc(i: int) -> memory_pb2.IngestSourcesRequest:
        return memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
            source_id=f"notes/limit-{i:03d}", media_type="text/markdown",
            text=f"# Note {i}\n\nThe limit test wrote note number {i}."))

    try:
        with pytest.raises(grpc.RpcError) as caught:
            small.memory.IngestSources(iter([doc(i) for i in range(120)]), timeout=60)
        again = small.memory.IngestSources(iter([doc(i) for i in range(3)]), timeout=60)
    finally:
        small.channel.close()
        small.running.stop(0)
    err = caught.value
    assert err.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
    assert re.fullmatch(
        r"the ingest summary of 120 documents is \d+ bytes, over the server's 2048-byte message "
        r"limit \(it lists each document\); the documents are committed: send fewer per stream",
        err.details(),  # type: ignore[attr-defined]
    )
    assert (again.received, again.unchanged) == (3, 3)
