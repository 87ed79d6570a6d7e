"""The advice a client command adds to an UNAVAILABLE: start a server only when none answered."""

from __future__ import annotations

import grpc
from google.rpc import code_pb2, status_pb2

from planner_svc.client.connection import sent_by_server, unavailable_hint


class FailedCall:
    """A failed unary call as grpcio raises it: code, details and trailing metadata."""

    def __init__(self, message: str, trailing: tuple[tuple[str, bytes], ...]) -> None:
        self._message = message
        self._trailing = trailing

    def code(self) -> grpc.StatusCode:
        return grpc.StatusCode.UNAVAILABLE

    def details(self) -> str:
        return self._message

    def trailing_metadata(self) -> tuple[tuple[str, bytes], ...]:
        return self._trailing


def server_sent(message: str) -> FailedCall:
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message=message)
    return FailedCall(message, (("grpc-status-details-bin", status.SerializeToString()),))


def test_a_failed_connection_suggests_starting_a_server() -> None:
    refused = FailedCall("failed to connect to all addresses; last error: UNKNOWN: "
                         "ipv4:127.0.0.1:1: Connection refused", ())
    assert not sent_by_server(refused)
    hint = unavailable_hint("UNAVAILABLE", "127.0.0.1:1", refused)
    assert "is `planner-svc serve` running at 127.0.0.1:1?" in hint
    assert unavailable_hint("UNAVAILABLE", "127.0.0.1:1") == hint  # no call known: the same


def test_an_unavailable_store_reported_by_the_server_suggests_a_retry() -> None:
    down = server_sent("store: the shared store is unreachable: connection refused")
    assert sent_by_server(down)
    hint = unavailable_hint("UNAVAILABLE", "db-replica:50151", down)
    assert hint == " (sent by the server at db-replica:50151: retry later, or on another replica)"
    assert "planner-svc serve" not in hint


def test_details_that_disagree_with_the_call_count_as_not_sent_by_the_server() -> None:
    status = status_pb2.Status(code=code_pb2.UNAVAILABLE, message="another message")
    odd = FailedCall("the call's message", (("grpc-status-details-bin",
                                             status.SerializeToString()),))
    assert not sent_by_server(odd)
    assert not sent_by_server(object())


def test_other_codes_get_their_own_advice_or_none() -> None:
    assert "PLANNER_SVC_AUTH_TOKEN" in unavailable_hint("UNAUTHENTICATED", "h:1")
    assert unavailable_hint("INVALID_ARGUMENT", "h:1", server_sent("x")) == ""
    assert "raise --timeout" in unavailable_hint("DEADLINE_EXCEEDED", "h:1")
