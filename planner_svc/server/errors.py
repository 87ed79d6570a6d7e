"""The one table from domain errors to gRPC statuses, applied by every servicer.

=====================  ======================================================================
InvalidRequest         INVALID_ARGUMENT + google.rpc.BadRequest with one field violation
InsufficientEvidence   FAILED_PRECONDITION + google.rpc.ErrorInfo{INSUFFICIENT_EVIDENCE}
BackendUnavailable     FAILED_PRECONDITION + google.rpc.ErrorInfo{BACKEND_UNAVAILABLE}
CassetteMiss           FAILED_PRECONDITION (the replayed cassette lacks a recording)
ProviderError          UNAVAILABLE (the planning model's endpoint is down or answers garbage)
Overloaded             RESOURCE_EXHAUSTED (retry later)
StoreUnavailable       UNAVAILABLE (the shared store is unreachable; retry, on any replica)
ResponseTooLarge       RESOURCE_EXHAUSTED (the answer exceeds the message limit; logged as an
                       error, so operators see it)
ShuttingDown           UNAVAILABLE (the server is stopping; retry on another)
Cancelled              CANCELLED
other PlannerError     FAILED_PRECONDITION
anything else          INTERNAL with a generic message and an error id, logged with the
                       traceback
=====================  ======================================================================

(ConfigError is an InvalidRequest.) :func:`abort_with` applies the table: it logs a rejected
request at info level (an internal error or a response too large at error level, with its id)
and aborts the RPC with the rich status in ``grpc-status-details-bin`` and the request id in the
trailing metadata.

A status travels in trailing metadata (``grpc-message`` percent-encoded, and the rich status
base64-encoded), which clients cap (gRPC's default: 8 KiB soft, 16 KiB hard). So every text of
a status is bounded in UTF-8 bytes (:data:`MAX_MESSAGE_BYTES`, :data:`MAX_FIELD_BYTES`), cut on
a character boundary: whatever a client sent, its status arrives whole.
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

import grpc
import structlog
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from planner_svc.core.errors import (
    BackendUnavailable,
    Cancelled,
    CassetteMiss,
    InsufficientEvidence,
    InvalidRequest,
    Overloaded,
    PlannerError,
    ProviderError,
    ResponseTooLarge,
    ShuttingDown,
    StoreUnavailable,
)

__all__ = [
    "ERROR_DOMAIN",
    "MAX_FIELD_BYTES",
    "MAX_MESSAGE_BYTES",
    "GrpcStatus",
    "abort_with",
    "bounded",
    "code_name",
    "rich",
    "status_for",
    "to_grpc",
]

ERROR_DOMAIN = "planner.plannersvc.dev"
"""``ErrorInfo.domain`` of every error detail the service sends: the service's DNS-style name
(the domain the contract's Java package ``dev.plannersvc.planner.v1`` reverses), the logical
grouping its ``reason`` values are unique within (google.rpc.ErrorInfo; AIP-193)."""

MAX_MESSAGE_BYTES = 512
"""Longest status message, field violation description or error metadata value, in UTF-8
bytes; a longer one is cut on a character boundary and ends in an ellipsis."""
MAX_FIELD_BYTES = 160
"""Longest field path of a field violation, in UTF-8 bytes."""

log = structlog.get_logger("planner_svc.server")


def bounded(text: str, max_bytes: int) -> str:
    """``text`` when its UTF-8 form has at most ``max_bytes`` bytes, else its longest prefix
    that fits with an ellipsis (3 bytes) after it."""
    raw = text.encode("utf-8")
    if len(raw) <= max_bytes:
        return text
    return raw[: max(0, max_bytes - 3)].decode("utf-8", errors="ignore") + "…"


def rich(code: int, message: str, *details: Any) -> status_pb2.Status:
    """A google.rpc.Status with each detail packed (the message bounded to
    :data:`MAX_MESSAGE_BYTES`)."""
    status = status_pb2.Status(code=code, message=bounded(message, MAX_MESSAGE_BYTES))
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return status


def status_for(exc: BaseException) -> tuple[status_pb2.Status, bool]:
    """The rich status the table maps ``exc`` to, and whether it is an unexpected (internal)
    error."""
    if isinstance(exc, InvalidRequest):
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=bounded(exc.field, MAX_FIELD_BYTES),
            description=bounded(exc.reason, MAX_MESSAGE_BYTES),
        )
        return (
            rich(code_pb2.INVALID_ARGUMENT, f"invalid {exc.field}: {exc.reason}",
                 error_details_pb2.BadRequest(field_violations=[violation])),
            False,
        )
    if isinstance(exc, InsufficientEvidence):
        metadata = {key: bounded(value, MAX_MESSAGE_BYTES // 4)
                    for key, value in exc.metadata.items()}
        info = error_details_pb2.ErrorInfo(reason="INSUFFICIENT_EVIDENCE", domain=ERROR_DOMAIN,
                                           metadata=metadata)
        message = f"insufficient evidence: {exc}; set allow_ungrounded for an empty plan"
        return rich(code_pb2.FAILED_PRECONDITION, message, info), False
    if isinstance(exc, BackendUnavailable):
        info = error_details_pb2.ErrorInfo(reason="BACKEND_UNAVAILABLE", domain=ERROR_DOMAIN)
        return rich(code_pb2.FAILED_PRECONDITION, str(exc), info), False
    if isinstance(exc, CassetteMiss):
        return rich(code_pb2.FAILED_PRECONDITION, str(exc)), False
    if isinstance(exc, ProviderError):
        return rich(code_pb2.UNAVAILABLE, f"planner model: {exc}"), False
    if isinstance(exc, Overloaded | ResponseTooLarge):
        return rich(code_pb2.RESOURCE_EXHAUSTED, str(exc)), False
    if isinstance(exc, StoreUnavailable):
        return rich(code_pb2.UNAVAILABLE, f"store: {exc}"), False
    if isinstance(exc, ShuttingDown):
        return rich(code_pb2.UNAVAILABLE, str(exc)), False
    if isinstance(exc, Cancelled):
        return rich(code_pb2.CANCELLED, "request cancelled"), False
    if isinstance(exc, PlannerError):
        return rich(code_pb2.FAILED_PRECONDITION, str(exc)), False
    return rich(code_pb2.INTERNAL, "internal error"), True


def code_name(exc: BaseException) -> str:
    """The gRPC code name ``exc`` maps to (for metrics labels)."""
    status, _ = status_for(exc)
    return str(code_pb2.Code.Name(status.code))


class GrpcStatus(grpc.Status):  # type: ignore[misc]
    """A concrete grpc.Status (the grpc class is an abstract record)."""

    def __init__(
        self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[Any, ...] = ()
    ) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata


def to_grpc(status: status_pb2.Status, *extra_trailers: tuple[str, str]) -> grpc.Status:
    """The status to abort with: rich details in ``grpc-status-details-bin`` plus trailers."""
    converted = rpc_status.to_status(status)
    if not extra_trailers:
        return converted
    return GrpcStatus(converted.code, converted.details,
                      (*converted.trailing_metadata, *extra_trailers))


def abort_with(context: grpc.ServicerContext, exc: BaseException, **log_fields: object) -> NoReturn:
    """Abort the RPC with the status the table maps ``exc`` to (never returns).

    ``log_fields`` go on the log line; a ``request_id`` among them also rides in the trailing
    metadata as ``x-request-id``.
    """
    status, internal = status_for(exc)
    if internal:
        error_id = uuid.uuid4().hex[:12]
        status.message = f"internal error (id {error_id})"
        log.error("internal_error", error_id=error_id, exc_info=exc, **log_fields)
    elif isinstance(exc, ResponseTooLarge):
        log.error("response_too_large", code=code_pb2.Code.Name(status.code),
                  message=status.message, **log_fields)
    else:
        log.info("request_rejected", code=code_pb2.Code.Name(status.code),
                 message=status.message, **log_fields)
    request_id = log_fields.get("request_id")
    trailers = (("x-request-id", request_id),) if isinstance(request_id, str) else ()
    context.abort_with_status(to_grpc(status, *trailers))
    raise AssertionError("abort_with_status returned")  # pragma: no cover
