"""The one table from domain errors to gRPC statuses, applied by every servicer.

=====================  ======================================================================
InvalidRequest         INVALID_ARGUMENT + google.rpc.BadRequest with one field violation
InsufficientEvidence   FAILED_PRECONDITION + google.rpc.ErrorInfo{INSUFFICIENT_EVIDENCE}
BackendUnavailable     FAILED_PRECONDITION + google.rpc.ErrorInfo{BACKEND_UNAVAILABLE}
CassetteMiss           FAILED_PRECONDITION (the replayed cassette lacks a recording)
ProviderError          UNAVAILABLE (the planning model's endpoint is down or answers garbage)
Overloaded             RESOURCE_EXHAUSTED (retry later)
StoreUnavailable       UNAVAILABLE (the shared store is unreachable; retry, on any replica)
Cancelled              CANCELLED
other PlannerError     FAILED_PRECONDITION
anything else          INTERNAL with a generic message and an error id, logged with the
                       traceback
=====================  ======================================================================

(ConfigError is an InvalidRequest.) :func:`abort_with` applies the table: it logs a rejected
request at info level (an internal error at error level, with its id) and aborts the RPC with
the rich status in ``grpc-status-details-bin`` and the request id in the trailing metadata.
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
    StoreUnavailable,
)

__all__ = [
    "ERROR_DOMAIN",
    "GrpcStatus",
    "abort_with",
    "code_name",
    "rich",
    "status_for",
    "to_grpc",
]

ERROR_DOMAIN = "planner.plannersvc.dev"
"""``ErrorInfo.domain`` of every error detail the service sends: the service's DNS-style name
(the domain the contract's Java package ``dev.plannersvc.planner.v1`` reverses), the logical
grouping its ``reason`` values are unique within (google.rpc.ErrorInfo; AIP-193)."""

log = structlog.get_logger("planner_svc.server")


def rich(code: int, message: str, *details: Any) -> status_pb2.Status:
    """A google.rpc.Status with each detail packed."""
    status = status_pb2.Status(code=code, message=message)
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
            field=exc.field, description=exc.reason
        )
        return (
            rich(code_pb2.INVALID_ARGUMENT, f"invalid {exc.field}: {exc.reason}",
                 error_details_pb2.BadRequest(field_violations=[violation])),
            False,
        )
    if isinstance(exc, InsufficientEvidence):
        info = error_details_pb2.ErrorInfo(reason="INSUFFICIENT_EVIDENCE", domain=ERROR_DOMAIN,
                                           metadata=exc.metadata)
        message = f"insufficient evidence: {exc}; set allow_ungrounded for an empty plan"
        return rich(code_pb2.FAILED_PRECONDITION, message, info), False
    if isinstance(exc, BackendUnavailable):
        info = error_details_pb2.ErrorInfo(reason="BACKEND_UNAVAILABLE", domain=ERROR_DOMAIN)
        return rich(code_pb2.FAILED_PRECONDITION, str(exc), info), False
    if isinstance(exc, CassetteMiss):
        return rich(code_pb2.FAILED_PRECONDITION, str(exc)), False
    if isinstance(exc, ProviderError):
        return rich(code_pb2.UNAVAILABLE, f"planner model: {exc}"), False
    if isinstance(exc, Overloaded):
        return rich(code_pb2.RESOURCE_EXHAUSTED, str(exc)), False
    if isinstance(exc, StoreUnavailable):
        return rich(code_pb2.UNAVAILABLE, f"store: {exc}"), False
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
    else:
        log.info("request_rejected", code=code_pb2.Code.Name(status.code),
                 message=status.message, **log_fields)
    request_id = log_fields.get("request_id")
    trailers = (("x-request-id", request_id),) if isinstance(request_id, str) else ()
    context.abort_with_status(to_grpc(status, *trailers))
    raise AssertionError("abort_with_status returned")  # pragma: no cover
