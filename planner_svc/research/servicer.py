"""The ``ResearchPlanner`` gRPC servicer: converts events and updates, delegates to
:class:`~planner_svc.research.session.ResearchSession`, and maps errors to status codes.

Error mapping (the stream ends; the server keeps serving): the provider's own errors first —
CassetteMiss is FAILED_PRECONDITION, ProviderError UNAVAILABLE — then the shared table of
:mod:`planner_svc.status` (InvalidRequest is INVALID_ARGUMENT with a field violation; anything
unexpected is INTERNAL with a generic message and a logged error id).

When the caller cancels (or its deadline passes) the session's cancel event is set from gRPC's
callback thread, so pending work stops at its next check and nothing more is sent.
"""

from __future__ import annotations

import dataclasses
import threading
import uuid
from collections.abc import Callable, Iterable, Iterator

import grpc
import structlog

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.clock import wall_clock_us
from planner_svc.core.errors import Cancelled, InvalidRequest, PlannerError
from planner_svc.research import wire
from planner_svc.research.digest import DEFAULT_DIGEST_CHARS
from planner_svc.research.provider import CassetteMiss, ProviderError
from planner_svc.research.providers import ProviderFactory, make_provider_factory
from planner_svc.research.session import (
    MAX_QUESTION_CHARS,
    PlanEvidence,
    ResearchSession,
    StopReason,
    Update,
)
from planner_svc.status import GrpcStatus, request_id, status_for, to_grpc, with_trailers

_log = structlog.get_logger("planner_svc.research")

SessionEndHook = Callable[[str, StopReason | None], None]
"""Called once per stream that got past its start event: (session_id, stop reason or None when
the stream failed with an error)."""

MIN_SERVICER_DIGEST_CHARS = MAX_QUESTION_CHARS + 400

SERVICE_NAME: str = research_pb2.DESCRIPTOR.services_by_name["ResearchPlanner"].full_name
"""``planner.v1.ResearchPlanner``: for health and reflection registration."""


def invalid_argument_status(exc: InvalidRequest) -> grpc.Status:
    """INVALID_ARGUMENT carrying a BadRequest detail with one field violation for ``exc``."""
    status, _ = status_for(exc)
    return to_grpc(status)


class ResearchPlannerServicer(research_pb2_grpc.ResearchPlannerServicer):
    """Serves ``planner.v1.ResearchPlanner/Research``; one worker thread per open stream.

    Args:
        plan_evidence: plans each sub-question's evidence.
        provider_factory: makes each session's planning provider from its ``provider`` string.
        digest_max_chars: bound of each session's digest in characters, >= 1400.
        on_session_end: optional hook, see :data:`SessionEndHook`.
        max_sessions: open sessions allowed at once, >= 1. Each holds a server thread for its
            whole life, so the server keeps threads free for Plan and health checks by
            refusing further sessions with RESOURCE_EXHAUSTED.

    Raises:
        ValueError: ``digest_max_chars`` below 1400 or ``max_sessions`` below 1.
    """

    def __init__(
        self,
        *,
        plan_evidence: PlanEvidence,
        provider_factory: ProviderFactory,
        digest_max_chars: int = DEFAULT_DIGEST_CHARS,
        on_session_end: SessionEndHook | None = None,
        max_sessions: int = 4,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions: {max_sessions}; must be >= 1")
        self._slots = threading.BoundedSemaphore(max_sessions)
        self._max_sessions = max_sessions
        if digest_max_chars < MIN_SERVICER_DIGEST_CHARS:
            raise ValueError(
                f"digest_max_chars: {digest_max_chars}; must be >= {MIN_SERVICER_DIGEST_CHARS}"
            )
        self._plan_evidence = plan_evidence
        self._provider_factory = provider_factory
        self._digest_max_chars = digest_max_chars
        self._on_session_end = on_session_end

    def Research(
        self,
        request_iterator: Iterator[research_pb2.ResearchEvent],
        context: grpc.ServicerContext,
    ) -> Iterator[research_pb2.ResearchUpdate]:
        """Run one session over the stream (protocol: ``protos/planner/v1/research.proto``).

        The caller's ``x-request-id`` (or a new one) comes back in the trailing metadata, on
        success and on error alike.
        """
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        if not self._slots.acquire(blocking=False):
            context.abort(
                grpc.StatusCode.RESOURCE_EXHAUSTED,
                f"{self._max_sessions} research sessions are open, the most this server "
                "runs at once; retry later",
            )
        try:
            yield from self._research(request_iterator, context, rid)
        finally:
            self._slots.release()

    def _research(
        self,
        request_iterator: Iterator[research_pb2.ResearchEvent],
        context: grpc.ServicerContext,
        rid: str,
    ) -> Iterator[research_pb2.ResearchUpdate]:
        cancel = threading.Event()
        context.add_callback(cancel.set)
        session: ResearchSession | None = None
        failure: grpc.Status | None = None
        try:
            first = next(request_iterator, None)
            if first is None:
                raise InvalidRequest("start", "the stream closed before a start event")
            start = wire.start_from_proto(first)
            # One snapshot per session: absent as-of times are pinned to the start, so every
            # sub-question's evidence plan reads the same store state (echoed in the settings).
            now_us = wall_clock_us()
            start = dataclasses.replace(
                start,
                at_valid_us=now_us if start.at_valid_us is None else start.at_valid_us,
                at_tx_us=now_us if start.at_tx_us is None else start.at_tx_us,
            )
            session = ResearchSession(
                start,
                provider=self._provider_factory(start.provider),
                plan_evidence=self._plan_evidence,
                digest_max_chars=self._digest_max_chars,
                cancel=cancel,
            )
            _log.info("research.start", request_id=rid, session_id=start.session_id,
                      actors=list(start.actors))
            yield from _send(session.begin())
            for raw in request_iterator:
                yield from _send(session.handle(wire.event_from_proto(raw)))
                if session.finished:
                    return
            yield from _send(session.close_input())
        except Cancelled:
            return
        except CassetteMiss as exc:
            failure = GrpcStatus(grpc.StatusCode.FAILED_PRECONDITION, str(exc))
        except ProviderError as exc:
            failure = GrpcStatus(grpc.StatusCode.UNAVAILABLE, f"planner model: {exc}")
        except PlannerError as exc:
            failure = to_grpc(status_for(exc)[0])
        except Exception:
            if cancel.is_set():
                return  # the request iterator raises once the caller has cancelled
            error_id = uuid.uuid4().hex[:12]
            _log.exception("research.internal_error", request_id=rid, error_id=error_id)
            failure = GrpcStatus(grpc.StatusCode.INTERNAL, f"internal error (id {error_id})")
        finally:
            if session is not None:
                if cancel.is_set():
                    session.cancel()
                reason = None if failure is not None else session.stop_reason
                _log.info(
                    "research.end",
                    request_id=rid,
                    session_id=session.start.session_id,
                    reason=reason.name if reason is not None else "error",
                    model_calls=session.model_calls,
                )
                if self._on_session_end is not None:
                    self._on_session_end(session.start.session_id, reason)
        if failure is not None:
            context.abort_with_status(with_trailers(failure, ("x-request-id", rid)))


def _send(updates: Iterable[Update]) -> Iterator[research_pb2.ResearchUpdate]:
    for update in updates:
        yield wire.update_to_proto(update)


def add_research_servicer(
    server: grpc.Server,
    *,
    plan_evidence: PlanEvidence,
    provider_factory: ProviderFactory | None = None,
    digest_max_chars: int = DEFAULT_DIGEST_CHARS,
    on_session_end: SessionEndHook | None = None,
    max_sessions: int = 4,
) -> None:
    """Register ``planner.v1.ResearchPlanner`` on ``server`` (before ``server.start()``).

    Args:
        server: the gRPC server. Each open stream holds one of its worker threads.
        plan_evidence: the EvidencePlanner's planning function (see
            :class:`~planner_svc.research.session.PlanEvidence`).
        provider_factory: resolves each session's ``provider``; None = offline only (see
            :func:`~planner_svc.research.providers.make_provider_factory`).
        digest_max_chars: digest bound in characters, >= 1400.
        on_session_end: optional hook (metrics, tests).
        max_sessions: open sessions allowed at once (RESOURCE_EXHAUSTED beyond).
    """
    servicer = ResearchPlannerServicer(
        plan_evidence=plan_evidence,
        provider_factory=provider_factory or make_provider_factory(),
        digest_max_chars=digest_max_chars,
        on_session_end=on_session_end,
        max_sessions=max_sessions,
    )
    research_pb2_grpc.add_ResearchPlannerServicer_to_server(servicer, server)
