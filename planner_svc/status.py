"""The one table from domain errors to gRPC statuses, shared by every servicer.

=====================  ======================================================================
InvalidRequest         INVALID_ARGUMENT + google.rpc.BadRequest with one field violation
InsufficientEvidence   FAILED_PRECONDITION + google.rpc.ErrorInfo{INSUFFICIENT_EVIDENCE}
BackendUnavailable     FAILED_PRECONDITION + google.rpc.ErrorInfo{BACKEND_UNAVAILABLE}
Cancelled              CANCELLED
other PlannerError     FAILED_PRECONDITION
anything else          INTERNAL with a generic message (the caller logs an error id)
=====================  ======================================================================
"""

from __future__ import annotations

import uuid
from typing import Any

import grpc
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from planner_svc.core.errors import (
    BackendUnavailable,
    Cancelled,
    InsufficientEvidence,
    InvalidRequest,
    PlannerError,
)

ERROR_DOMAIN = "planner.v1"


def rich(code: int, message: str, *details: Any) -> status_pb2.Status:
    """A google.rpc.Status with each detail packed."""
    status = status_pb2.Status(code=code, message=message)
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)
        status.details.append(packed)
    return status


def status_for(exc: BaseException) -> tuple[status_pb2.Status, bool]:
    """The rich status for ``exc`` and whether it is an unexpected (internal) error."""
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
        info = error_details_pb2.ErrorInfo(reason="INSUFFICIENT_EVIDENCE", domain=ERROR_DOMAIN)
        message = f"insufficient evidence: {exc}; set allow_ungrounded for an empty plan"
        return rich(code_pb2.FAILED_PRECONDITION, message, info), False
    if isinstance(exc, BackendUnavailable):
        info = error_details_pb2.ErrorInfo(reason="BACKEND_UNAVAILABLE", domain=ERROR_DOMAIN)
        return rich(code_pb2.FAILED_PRECONDITION, str(exc), info), False
    if isinstance(exc, Cancelled):
        return rich(code_pb2.CANCELLED, "request cancelled"), False
    if isinstance(exc, PlannerError):
        return rich(code_pb2.FAILED_PRECONDITION, str(exc)), False
    return rich(code_pb2.INTERNAL, "internal error"), True


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


def request_id(context: grpc.ServicerContext) -> str:
    """The caller's ``x-request-id`` metadata (first 64 chars) or a fresh id."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and value:
            return value[:64]
    return uuid.uuid4().hex


def with_trailers(status: grpc.Status, *trailers: tuple[str, str]) -> grpc.Status:
    """``status`` with extra trailing metadata (e.g. the request id) after its own."""
    return GrpcStatus(status.code, status.details, (*status.trailing_metadata, *trailers))
