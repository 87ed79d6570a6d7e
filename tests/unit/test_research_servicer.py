"""The research servicer against a scripted servicer context: the orders of events a live
transport produces only by chance (a request stream that breaks before the cancellation
callback has run)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import grpc
import pytest

from planner_svc.api.planner.v1 import research_pb2
from planner_svc.research.providers import make_provider_factory
from planner_svc.research.session import StopReason
from planner_svc.research.testing import FakeEvidence
from planner_svc.server.research import ResearchPlannerServicer


class _Context:
    """A servicer context whose cancellation callbacks never run on their own (the test
    decides), and which records an abort instead of raising past the servicer."""

    def __init__(self) -> None:
        self.callbacks: list[Callable[[], None]] = []
        self.active = True
        self.aborted: grpc.Status | None = None

    def invocation_metadata(self) -> tuple[tuple[str, str], ...]:
        return (("x-request-id", "scripted"),)

    def set_trailing_metadata(self, metadata: Any) -> None:
        pass

    def add_callback(self, callback: Callable[[], None]) -> bool:
        self.callbacks.append(callback)
        return True

    def is_active(self) -> bool:
        return self.active

    def abort_with_status(self, status: grpc.Status) -> None:
        self.aborted = status
        raise RuntimeError("aborted")


def _start() -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.start.question = "Who painted the Mona Lisa?"
    event.start.actors.append("web")
    return event


def test_a_request_stream_broken_by_cancellation_ends_the_session_cancelled(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """After the initial plan, the stream raises RpcError (the caller cancelled) before gRPC
    has run the servicer's cancellation callback: the session ends cancelled, nothing is
    aborted or logged as an internal error."""
    context = _Context()
    cancel = threading.Event()

    def requests() -> Iterator[research_pb2.ResearchRequest]:
        yield _start()
        cancel.wait(30)
        context.active = False
        raise grpc.RpcError()

    ended: list[tuple[str, StopReason | None]] = []
    servicer = ResearchPlannerServicer(
        evidence=FakeEvidence(), provider_factory=make_provider_factory(),
        on_session_end=lambda sid, reason: ended.append((sid, reason)),
    )
    responses = servicer.Research(requests(), context)  # type: ignore[arg-type]
    assert next(responses).WhichOneof("update") == "initial"
    cancel.set()
    assert list(responses) == []
    assert context.aborted is None
    assert [reason for _, reason in ended] == [StopReason.CANCELLED]
    assert "internal_error" not in capsys.readouterr().err


def test_a_response_stream_closed_by_grpc_ends_the_session_cancelled() -> None:
    """gRPC stops iterating (and later closes) the response generator when the caller cancels
    during a blocked send: the session still ends, cancelled."""
    context = _Context()
    ended: list[StopReason | None] = []
    servicer = ResearchPlannerServicer(
        evidence=FakeEvidence(), provider_factory=make_provider_factory(),
        on_session_end=lambda sid, reason: ended.append(reason),
    )
    release = threading.Event()

    def requests() -> Iterator[research_pb2.ResearchRequest]:
        yield _start()
        release.wait(30)  # the orchestrator keeps its stream open

    responses = servicer.Research(requests(), context)  # type: ignore[arg-type]
    try:
        assert next(responses).WhichOneof("update") == "initial"
        responses.close()
    finally:
        release.set()
    assert ended == [StopReason.CANCELLED]
    assert context.aborted is None
