"""Standard health checking on a real server: ``Check`` of each service, and of a service the
server does not know (NOT_FOUND, naming it)."""

from __future__ import annotations

import grpc
import pytest
from grpc_health.v1 import health_pb2, health_pb2_grpc

from planner_svc.server.app import SERVICE_NAMES
from tests.integration.conftest import Live


@pytest.mark.parametrize("service", ["", *SERVICE_NAMES])
def test_check_reports_every_service_serving(live: Live, service: str) -> None:
    reply = health_pb2_grpc.HealthStub(live.channel).Check(
        health_pb2.HealthCheckRequest(service=service), timeout=10)
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_check_of_an_unknown_service_is_not_found_and_names_it(live: Live) -> None:
    with pytest.raises(grpc.RpcError) as info:
        health_pb2_grpc.HealthStub(live.channel).Check(
            health_pb2.HealthCheckRequest(service="no.such.Service"), timeout=10)
    known = ", ".join(repr(name) for name in sorted(("", *SERVICE_NAMES)))
    assert info.value.code() == grpc.StatusCode.NOT_FOUND  # type: ignore[attr-defined]
    assert info.value.details() == (  # type: ignore[attr-defined]
        "service 'no.such.Service' is unknown to health checking; services with a status: "
        f"{known} ('' is the whole server)")
