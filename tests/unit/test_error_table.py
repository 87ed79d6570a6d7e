"""The one error table: every domain error maps to one status, with its details."""

from __future__ import annotations

import pytest
from google.rpc import code_pb2, error_details_pb2

from planner_svc.core.errors import (
    BackendUnavailable,
    Cancelled,
    CassetteMiss,
    ConfigError,
    InsufficientEvidence,
    InvalidRequest,
    Overloaded,
    PlannerError,
    ProviderError,
    StoreUnavailable,
)
from planner_svc.server.errors import code_name, status_for


@pytest.mark.parametrize(
    ("exc", "code", "internal"),
    [
        (InvalidRequest("budget_tokens", "must be >= 1"), code_pb2.INVALID_ARGUMENT, False),
        (ConfigError("start.caps.max_depth", "9; allowed range -1..8"),
         code_pb2.INVALID_ARGUMENT, False),
        (InsufficientEvidence("nothing"), code_pb2.FAILED_PRECONDITION, False),
        (BackendUnavailable("no index"), code_pb2.FAILED_PRECONDITION, False),
        (CassetteMiss("no recording"), code_pb2.FAILED_PRECONDITION, False),
        (ProviderError("HTTP 503"), code_pb2.UNAVAILABLE, False),
        (Overloaded("2 sessions are open"), code_pb2.RESOURCE_EXHAUSTED, False),
        (StoreUnavailable("connection refused"), code_pb2.UNAVAILABLE, False),
        (Cancelled("gone"), code_pb2.CANCELLED, False),
        (PlannerError("other"), code_pb2.FAILED_PRECONDITION, False),
        (KeyError("bug"), code_pb2.INTERNAL, True),
    ],
)
def test_each_error_has_one_status(exc: BaseException, code: int, internal: bool) -> None:
    status, unexpected = status_for(exc)
    assert (status.code, unexpected) == (code, internal)
    assert code_name(exc) == code_pb2.Code.Name(code)


def _details(exc: BaseException) -> list[object]:
    status, _ = status_for(exc)
    out: list[object] = []
    for packed in status.details:
        for kind in (error_details_pb2.BadRequest, error_details_pb2.ErrorInfo):
            if packed.Is(kind.DESCRIPTOR):
                detail = kind()
                packed.Unpack(detail)
                out.append(detail)
    return out


def test_details_name_the_field_or_the_reason() -> None:
    [bad] = _details(InvalidRequest("semantic.alpha", "must be in [0, 1], got 2.0"))
    assert isinstance(bad, error_details_pb2.BadRequest)
    assert [(v.field, v.description) for v in bad.field_violations] == [
        ("semantic.alpha", "must be in [0, 1], got 2.0")
    ]
    [info] = _details(InsufficientEvidence("nothing"))
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert (info.reason, info.domain) == ("INSUFFICIENT_EVIDENCE", "planner.plannersvc.dev")
    [info] = _details(BackendUnavailable("no index"))
    assert isinstance(info, error_details_pb2.ErrorInfo)
    assert info.reason == "BACKEND_UNAVAILABLE"


def test_messages_say_what_failed() -> None:
    assert status_for(ProviderError("HTTP 503 from x"))[0].message == (
        "planner model: HTTP 503 from x"
    )
    assert status_for(CassetteMiss("cassette c has no recording"))[0].message == (
        "cassette c has no recording"
    )
    assert status_for(KeyError("secret"))[0].message == "internal error"
