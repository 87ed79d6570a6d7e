"""The planner's side of an evaluation: ask a running server for a plan, recognise a decline.

The request is the one ``planner-svc plan`` sends for a question (both recall legs from the
question text, one hop). The server declines with ``FAILED_PRECONDITION`` carrying
``google.rpc.ErrorInfo{reason: INSUFFICIENT_EVIDENCE}`` in the status details; any other failure,
including a ``FAILED_PRECONDITION`` with another reason or none, is an error of the run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import grpc
from google.protobuf.message import DecodeError
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from planner_svc.server.client import question_request

INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
"""``ErrorInfo.reason`` of a plan declined for lack of evidence."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerPlan:
    """What the server answered for one question.

    Attributes:
        source_ids, texts: one entry per selected span, parallel (empty when declined).
        used: tokens the plan spends (0 when declined).
        refused: the server answered ``FAILED_PRECONDITION`` + ``INSUFFICIENT_EVIDENCE``
            (a plan with no span is also a decline, see :mod:`planner_svc.evaluation.metrics`,
            but not a refusal).
    """

    source_ids: tuple[str, ...]
    texts: tuple[str, ...]
    used: int
    refused: bool


def error_reasons(err: grpc.RpcError) -> list[str]:
    """The ``ErrorInfo.reason`` of every ErrorInfo in the rich status details of ``err``
    (``grpc-status-details-bin``), in order; empty when there are none or the details are
    malformed or disagree with the call's code and message."""
    try:
        status = rpc_status.from_call(err)  # type: ignore[arg-type]
    except (ValueError, DecodeError):
        return []
    if status is None:
        return []
    reasons: list[str] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            reasons.append(info.reason)
    return reasons


def is_decline(err: grpc.RpcError) -> bool:
    """Whether ``err`` is the server declining for insufficient evidence:
    ``FAILED_PRECONDITION`` with an ErrorInfo whose reason is ``INSUFFICIENT_EVIDENCE``."""
    code = err.code()  # type: ignore[attr-defined]
    return code == grpc.StatusCode.FAILED_PRECONDITION and INSUFFICIENT_EVIDENCE in error_reasons(
        err
    )


def request_plan(
    stub: Any,
    question: str,
    *,
    budget: int,
    timeout_s: float,
    metadata: Sequence[tuple[str, str | bytes]] = (),
) -> ServerPlan:
    """Ask ``stub`` (an ``EvidencePlannerStub``) for the plan of ``question``.

    Args:
        budget: requested budget, tokens.
        timeout_s: the call's deadline, seconds.
        metadata: call metadata (e.g. authorization).

    Raises:
        grpc.RpcError: any failure other than a decline (see :func:`is_decline`).
    """
    try:
        plan = stub.Plan(question_request(question, budget_tokens=budget),
                         timeout=timeout_s, metadata=tuple(metadata))
    except grpc.RpcError as err:
        if is_decline(err):
            return ServerPlan(source_ids=(), texts=(), used=0, refused=True)
        raise
    return ServerPlan(source_ids=tuple(s.span.source_id for s in plan.spans),
                      texts=tuple(s.text for s in plan.spans), used=int(plan.used),
                      refused=False)
