"""Open research sessions never starve the Plan RPC or health checks of server threads."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.client.common import question_request
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import start

pytestmark = pytest.mark.integration


def _idle_session(release: threading.Event) -> Iterator[research_pb2.ResearchRequest]:
    event = research_pb2.ResearchRequest()
    event.start.question = "What caused the Cold War?"
    event.start.actors.append("web")
    event.start.budget_tokens = 200
    yield event
    release.wait(30)  # an orchestrator that goes quiet


def test_sessions_beyond_the_limit_are_refused_and_plans_still_run(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    transport = TransportSettings(port=0, max_workers=4)  # 2 sessions at most
    server = start(ServerSettings(data_dir=data, transport=transport))
    release = threading.Event()
    stub = research_pb2_grpc.ResearchPlannerServiceStub(server.channel)
    calls = []
    try:
        for _ in range(2):
            call = stub.Research(_idle_session(release), timeout=30)
            assert next(call).WhichOneof("update") == "initial"
            calls.append(call)
        third = stub.Research(_idle_session(release), timeout=30)
        with pytest.raises(grpc.RpcError) as info:
            next(third)
        assert info.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED  # type: ignore[attr-defined]
        plan = server.planner.Plan(question_request("Cold War", budget_tokens=200), timeout=5).plan
        assert plan.spans
        health = health_pb2_grpc.HealthStub(server.channel).Check(
            health_pb2.HealthCheckRequest(), timeout=5)
        assert health.status == health_pb2.HealthCheckResponse.SERVING
    finally:
        release.set()
        for call in calls:
            call.cancel()
        server.channel.close()
        server.running.stop(0)


def test_research_errors_carry_the_request_id(fixture_data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = start(ServerSettings(data_dir=data, transport=TransportSettings(port=0)))
    try:
        stub = research_pb2_grpc.ResearchPlannerServiceStub(server.channel)
        bad = research_pb2.ResearchRequest()
        bad.start.question = "   "  # no question
        bad.start.actors.append("web")
        call = stub.Research(iter([bad]), timeout=10, metadata=(("x-request-id", "rs-req-9"),))
        with pytest.raises(grpc.RpcError) as info:
            next(call)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        trailers = dict(info.value.trailing_metadata())  # type: ignore[attr-defined]
        assert trailers.get("x-request-id") == "rs-req-9"
    finally:
        server.channel.close()
        server.running.stop(0)
