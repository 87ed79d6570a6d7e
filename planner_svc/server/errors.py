"""One table from domain errors to gRPC statuses, applied in one place.

INVALID_ARGUMENT carries a ``google.rpc.BadRequest`` with one field violation (field path and
reason); FAILED_PRECONDITION carries a ``google.rpc.ErrorInfo`` whose reason is
``INSUFFICIENT_EVIDENCE`` or ``BACKEND_UNAVAILABLE``. Any other exception becomes INTERNAL with a
generic message and an error id that is also logged with the traceback.
"""

from __future__ import annotations

import uuid
from typing import Any, NoReturn

import grpc
import structlog
from google.protobuf import any_pb2
from google.rpc import code_pb2, error_details_pb2, status_pb2
from grpc_status import rpc_status

from planner_svc.core.errors import BackendUnavailable, InsufficientEvidence, InvalidRequest
from planner_svc.recall.planner import Cancelled

ERROR_DOMAIN = "planner.v1"
log = structlog.get_logger("planner_svc.server")


def _status(code: int, message: str, *details: object) -> status_pb2.Status:
    status = status_pb2.Status(code=code, message=message)
    for detail in details:
        packed = any_pb2.Any()
        packed.Pack(detail)  # type: ignore[arg-type]
        status.details.append(packed)
    return status


def status_for(exc: BaseException) -> tuple[status_pb2.Status, bool]:
    """The rich status for ``exc`` and whether it is an unexpected (internal) error."""
    if isinstance(exc, InvalidRequest):
        violation = error_details_pb2.BadRequest.FieldViolation(
            field=exc.field, description=exc.reason
        )
        return (
            _status(
                code_pb2.INVALID_ARGUMENT,
                f"invalid {exc.field}: {exc.reason}",
                error_details_pb2.BadRequest(field_violations=[violation]),
            ),
            False,
        )
    if isinstance(exc, InsufficientEvidence):
        info = error_details_pb2.ErrorInfo(reason="INSUFFICIENT_EVIDENCE", domain=ERROR_DOMAIN)
        message = f"insufficient evidence: {exc}; set allow_ungrounded for an empty plan"
        return _status(code_pb2.FAILED_PRECONDITION, message, info), False
    if isinstance(exc, BackendUnavailable):
        info = error_details_pb2.ErrorInfo(reason="BACKEND_UNAVAILABLE", domain=ERROR_DOMAIN)
        return _status(code_pb2.FAILED_PRECONDITION, str(exc), info), False
    if isinstance(exc, Cancelled):
        return _status(code_pb2.CANCELLED, "request cancelled"), False
    return _status(code_pb2.INTERNAL, "internal error"), True


def abort_with(context: grpc.ServicerContext, exc: BaseException, **log_fields: object) -> NoReturn:
    """Abort the RPC with the status mapped from ``exc`` (never returns)."""
    status, internal = status_for(exc)
    if internal:
        error_id = uuid.uuid4().hex[:12]
        status.message = f"internal error (id {error_id})"
        log.error("internal_error", error_id=error_id, exc_info=exc, **log_fields)
    else:
        log.info("request_rejected", code=code_pb2.Code.Name(status.code),
                 message=status.message, **log_fields)
    rich = rpc_status.to_status(status)
    request_id = log_fields.get("request_id")
    if isinstance(request_id, str):
        # abort replaces the trailing metadata set earlier: carry the request id along.
        rich = _Status(rich.code, rich.details,
                       (*rich.trailing_metadata, ("x-request-id", request_id)))
    context.abort_with_status(rich)
    raise AssertionError("abort_with_status returned")  # pragma: no cover


class _Status(grpc.Status):  # type: ignore[misc]
    """A status with its own trailing metadata (grpc.Status is an abstract record)."""

    def __init__(
        self, code: grpc.StatusCode, details: str, trailing_metadata: tuple[Any, ...]
    ) -> None:
        self.code = code
        self.details = details
        self.trailing_metadata = trailing_metadata
