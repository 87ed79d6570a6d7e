"""A plan the server declines for insufficient evidence counts as declined; other failures are
errors of the run. Statuses are built by the server's own error table."""

from __future__ import annotations

from typing import Any

import grpc
import pytest
from google.rpc import code_pb2, error_details_pb2
from grpc_status import rpc_status

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.client.eval import error_reasons, is_decline, request_plan
from planner_svc.core.errors import BackendUnavailable, InsufficientEvidence, PlannerError
from planner_svc.evaluation.runner import ServerPlan
from planner_svc.server.errors import rich, status_for


class FakeRpcError(grpc.RpcError):
    """What a failed unary call raises on the client: code, details, trailing metadata."""

    def __init__(self, code: grpc.StatusCode, details: str,
                 trailing: tuple[tuple[str, Any], ...] = ()) -> None:
        super().__init__(details)
        self._code, self._details, self._trailing = code, details, trailing

    def code(self) -> grpc.StatusCode:
        return self._code

    def details(self) -> str:
        return self._details

    def trailing_metadata(self) -> tuple[tuple[str, Any], ...]:
        return self._trailing


def error_for(exc: BaseException) -> FakeRpcError:
    status, _internal = status_for(exc)
    converted = rpc_status.to_status(status)
    return FakeRpcError(converted.code, converted.details, converted.trailing_metadata)


DECLINE = error_for(InsufficientEvidence("no candidate span"))
BACKEND = error_for(BackendUnavailable("no vector index"))
BARE = error_for(PlannerError("something else"))


def test_only_insufficient_evidence_is_a_decline() -> None:
    assert DECLINE.code() == grpc.StatusCode.FAILED_PRECONDITION
    assert error_reasons(DECLINE) == ["INSUFFICIENT_EVIDENCE"]
    assert is_decline(DECLINE)
    assert (BACKEND.code(), error_reasons(BACKEND)) == (
        grpc.StatusCode.FAILED_PRECONDITION, ["BACKEND_UNAVAILABLE"])
    assert not is_decline(BACKEND)
    assert (BARE.code(), error_reasons(BARE)) == (grpc.StatusCode.FAILED_PRECONDITION, [])
    assert not is_decline(BARE)
    no_details = FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "insufficient evidence")
    assert not is_decline(no_details)


def test_the_reason_on_another_code_or_inconsistent_details_is_no_decline() -> None:
    status, _ = status_for(InsufficientEvidence("x"))
    trailing = rpc_status.to_status(status).trailing_metadata
    # details claim FAILED_PRECONDITION, the call says UNAVAILABLE: rpc_status rejects it
    mismatched = FakeRpcError(grpc.StatusCode.UNAVAILABLE, status.message, trailing)
    assert (error_reasons(mismatched), is_decline(mismatched)) == ([], False)
    info = error_details_pb2.ErrorInfo(reason="INSUFFICIENT_EVIDENCE",
                                       domain="planner.plannersvc.dev")
    aborted = rpc_status.to_status(rich(code_pb2.ABORTED, "m", info))
    other = FakeRpcError(aborted.code, aborted.details, aborted.trailing_metadata)
    assert error_reasons(other) == ["INSUFFICIENT_EVIDENCE"]
    assert not is_decline(other)
    garbled = FakeRpcError(grpc.StatusCode.FAILED_PRECONDITION, "m",
                           (("grpc-status-details-bin", b"\xff\xff\xff"),))
    assert not is_decline(garbled)


class FakeStub:
    def __init__(self, outcome: plan_pb2.EvidencePlan | grpc.RpcError) -> None:
        self.outcome = outcome
        self.calls: list[tuple[plan_pb2.PlanRequest, float]] = []

    def Plan(self, request: plan_pb2.PlanRequest, *, timeout: float,
             metadata: tuple[tuple[str, str], ...]) -> plan_pb2.PlanResponse:
        self.calls.append((request, timeout))
        if isinstance(self.outcome, grpc.RpcError):
            raise self.outcome
        return plan_pb2.PlanResponse(plan=self.outcome)


def test_request_plan_turns_a_decline_into_an_empty_refused_plan() -> None:
    stub = FakeStub(DECLINE)
    assert request_plan(stub, "Who?", budget=500, timeout_s=3.0) == ServerPlan(
        source_ids=(), texts=(), used=0, refused=True)
    request, timeout = stub.calls[0]
    assert (request.budget_tokens, request.question, timeout) == (500, "Who?", 3.0)
    assert not request.HasField("structured") and not request.HasField("semantic")


@pytest.mark.parametrize("error", [BACKEND, BARE,
                                   FakeRpcError(grpc.StatusCode.UNAVAILABLE, "down")])
def test_request_plan_raises_every_other_failure(error: FakeRpcError) -> None:
    with pytest.raises(grpc.RpcError) as info:
        request_plan(FakeStub(error), "Who?", budget=500, timeout_s=3.0)
    assert info.value is error


def test_request_plan_returns_the_spans() -> None:
    plan = plan_pb2.EvidencePlan(used=42)
    for sid, text in (("s1", "one"), ("s2", "two")):
        span = plan.spans.add()
        span.span.source_id = sid
        span.text = text
    got = request_plan(FakeStub(plan), "Who?", budget=500, timeout_s=3.0)
    assert got == ServerPlan(source_ids=("s1", "s2"), texts=("one", "two"), used=42,
                             refused=False)
