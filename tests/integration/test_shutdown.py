"""Graceful shutdown: NOT_SERVING first, calls still answered while draining, then refused."""

from __future__ import annotations

import shutil
import threading
from pathlib import Path

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from planner_svc.client.common import question_request
from planner_svc.server.app import SERVICE_NAMES
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import start

pytestmark = pytest.mark.integration


def test_drain_then_stop(fixture_data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = start(ServerSettings(data_dir=data, transport=TransportSettings(port=0)))
    health = health_pb2_grpc.HealthStub(server.channel)
    request = question_request("Johnny Cash", budget_tokens=200)
    watch = health.Watch(health_pb2.HealthCheckRequest(), timeout=30)
    assert next(watch).status == health_pb2.HealthCheckResponse.SERVING
    stopper = threading.Thread(target=server.running.stop, args=(1.0,),
                               kwargs={"drain_s": 1.5})
    stopper.start()
    try:
        # The health service streams the change: no guessing how long it takes.
        assert next(watch).status == health_pb2.HealthCheckResponse.NOT_SERVING
        status = health.Check(health_pb2.HealthCheckRequest(), timeout=5).status
        assert status == health_pb2.HealthCheckResponse.NOT_SERVING
        listed = health.List(health_pb2.HealthListRequest(), timeout=5).statuses
        assert {name: s.status for name, s in listed.items()} == {
            name: health_pb2.HealthCheckResponse.NOT_SERVING for name in ("", *SERVICE_NAMES)
        }
        assert server.planner.Plan(request, timeout=5).plan.spans  # still answered while draining
        stopper.join(10)
        with pytest.raises(grpc.RpcError) as info:
            server.planner.Plan(request, timeout=2)
        assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
    finally:
        watch.cancel()
        stopper.join(10)
        server.channel.close()
