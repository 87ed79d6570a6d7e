"""Abort an RPC with the status :mod:`planner_svc.status` maps an exception to.

Unexpected errors become INTERNAL with a generic message and an error id that is also logged
with the traceback; rejected requests are logged at info level. The request id rides along in
the trailing metadata next to the rich status details.
"""

from __future__ import annotations

import uuid
from typing import NoReturn

import grpc
import structlog
from google.rpc import code_pb2

from planner_svc.status import status_for, to_grpc

log = structlog.get_logger("planner_svc.server")


def code_name(exc: BaseException) -> str:
    """The gRPC code name ``exc`` maps to (for metrics labels)."""
    status, _ = status_for(exc)
    return str(code_pb2.Code.Name(status.code))


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
    request_id = log_fields.get("request_id")
    trailers = (("x-request-id", request_id),) if isinstance(request_id, str) else ()
    context.abort_with_status(to_grpc(status, *trailers))
    raise AssertionError("abort_with_status returned")  # pragma: no cover
