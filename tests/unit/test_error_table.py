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
    ResponseTooLarge,
    ShuttingDown,
    StoreUnavailable,
    echo,
)
from planner_svc.server.errors import (
    MAX_FIELD_BYTES,
    MAX_MESSAGE_BYTES,
    bounded,
    code_name,
    status_for,
)


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
        (ResponseTooLarge("the plan response is 2 bytes"), code_pb2.RESOURCE_EXHAUSTED, False),
        (ShuttingDown("the server is shutting down"), code_pb2.UNAVAILABLE, False),
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


def test_echo_quotes_a_short_prefix_and_the_length() -> None:
    assert echo("gpt-4o") == "'gpt-4o'"
    assert echo("x" * 40) == "'" + "x" * 40 + "'"
    assert echo("x" * 20_000) == "'" + "x" * 40 + "'… (20000 characters)"
    assert echo("é" * 41) == "'" + "é" * 40 + "'… (41 characters)"
    assert echo(1.5) == "1.5"
    assert echo(list(range(100))) == "[0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 1… (390 characters)"


def test_bounded_cuts_on_a_character_boundary() -> None:
    assert bounded("abc", 3) == "abc"
    assert bounded("abcdef", 5) == "ab…"
    # 4-byte characters: 9 bytes leave room for one character and the ellipsis (3 bytes).
    assert bounded("😀😀😀", 9) == "😀…"
    assert bounded("é" * 10, 8) == "éé…"


def test_every_status_text_is_bounded_whatever_the_client_sent() -> None:
    """A status travels in trailing metadata, which clients cap at 8 KiB (soft) / 16 KiB (hard):
    however long the field path and reason, the texts stay within their byte bounds."""
    status, _ = status_for(InvalidRequest("properties." + "k" * 20_000, "一" * 20_000))
    [bad] = _details(InvalidRequest("properties." + "k" * 20_000, "一" * 20_000))
    assert len(status.message.encode()) <= MAX_MESSAGE_BYTES
    assert status.message.startswith("invalid properties.kkkk")
    assert status.message.endswith("…")
    assert isinstance(bad, error_details_pb2.BadRequest)
    [violation] = bad.field_violations
    assert len(violation.field.encode()) <= MAX_FIELD_BYTES
    assert len(violation.description.encode()) <= MAX_MESSAGE_BYTES
    assert violation.description == "一" * 169 + "…"
    assert len(status.SerializeToString()) < 1400
    evidence, _ = status_for(InsufficientEvidence("no", metadata={"best_source": "s" * 5000}))
    info = error_details_pb2.ErrorInfo()
    evidence.details[0].Unpack(info)
    assert len(info.metadata["best_source"]) == MAX_MESSAGE_BYTES // 4 - 2
