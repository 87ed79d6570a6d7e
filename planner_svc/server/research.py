"""The ``ResearchPlannerService`` servicer: converts events and updates, delegates to
:class:`~planner_svc.research.session.ResearchSession`, and maps errors with the one table of
:mod:`planner_svc.server.errors` (the stream ends; the server keeps serving).

When the caller cancels (or its deadline passes) the session's cancel event is set from gRPC's
callback thread, so pending work stops at its next check and nothing more is sent.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterable, Iterator

import grpc
import structlog

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import Cancelled, InvalidRequest, Overloaded, PlannerError
from planner_svc.research.digest import DEFAULT_DIGEST_CHARS
from planner_svc.research.duplicates import DuplicatePolicy
from planner_svc.research.evidence import EvidenceSource
from planner_svc.research.providers import ProviderFactory, make_provider_factory
from planner_svc.research.session import (
    MAX_QUESTION_CHARS,
    ResearchSession,
    StopReason,
    Update,
)
from planner_svc.server import convert
from planner_svc.server.errors import abort_with
from planner_svc.server.observe import request_id

__all__ = [
    "MIN_SERVICER_DIGEST_CHARS",
    "SERVICE_NAME",
    "ResearchPlannerServicer",
    "SessionEndHook",
    "add_research_servicer",
]

_log = structlog.get_logger("planner_svc.research")

SessionEndHook = Callable[[str, StopReason | None], None]
"""Called once per stream that got past its start event: (session_id, stop reason or None when
the stream failed with an error)."""

MIN_SERVICER_DIGEST_CHARS = MAX_QUESTION_CHARS + 400
"""Smallest digest bound a servicer accepts, characters: the longest question fits."""

SERVICE_NAME: str = research_pb2.DESCRIPTOR.services_by_name["ResearchPlannerService"].full_name
"""``planner.v1.ResearchPlannerService``: for health and reflection registration."""


class ResearchPlannerServicer(research_pb2_grpc.ResearchPlannerServiceServicer):
    """Serves ``planner.v1.ResearchPlannerService/Research``; one worker thread per open stream.

    Args:
        evidence: plans each sub-question's evidence.
        provider_factory: makes each session's planning provider from its ``provider`` string.
        digest_max_chars: bound of each session's digest in characters, >= 1400.
        on_session_end: optional hook, see :data:`SessionEndHook`.
        max_sessions: open sessions allowed at once, >= 1. Each holds a server thread for its
            whole life, so the server keeps threads free for Plan and health checks by
            refusing further sessions (Overloaded: RESOURCE_EXHAUSTED).
        clock: now, which pins a session's absent as-of times at its start.
        duplicates: how sessions screen proposals for duplicates; None = no embedder, the
            default threshold.

    Raises:
        ValueError: ``digest_max_chars`` below 1400 or ``max_sessions`` below 1.
    """

    def __init__(
        self,
        *,
        evidence: EvidenceSource,
        provider_factory: ProviderFactory,
        digest_max_chars: int = DEFAULT_DIGEST_CHARS,
        on_session_end: SessionEndHook | None = None,
        max_sessions: int = 4,
        clock: Clock = wall_clock_us,
        duplicates: DuplicatePolicy | None = None,
    ) -> None:
        if max_sessions < 1:
            raise ValueError(f"max_sessions: {max_sessions}; must be >= 1")
        self._slots = threading.BoundedSemaphore(max_sessions)
        self._max_sessions = max_sessions
        if digest_max_chars < MIN_SERVICER_DIGEST_CHARS:
            raise ValueError(
                f"digest_max_chars: {digest_max_chars}; must be >= {MIN_SERVICER_DIGEST_CHARS}"
            )
        self._evidence = evidence
        self._provider_factory = provider_factory
        self._digest_max_chars = digest_max_chars
        self._on_session_end = on_session_end
        self._clock = clock
        self._duplicates = duplicates

    def Research(
        self,
        request_iterator: Iterator[research_pb2.ResearchRequest],
        context: grpc.ServicerContext,
    ) -> Iterator[research_pb2.ResearchResponse]:
        """Run one session over the stream (protocol: ``protos/planner/v1/research.proto``).

        The caller's ``x-request-id`` (or a new one) comes back in the trailing metadata, on
        success and on error alike.
        """
        rid = request_id(context)
        context.set_trailing_metadata((("x-request-id", rid),))
        if not self._slots.acquire(blocking=False):
            abort_with(
                context,
                Overloaded(
                    f"{self._max_sessions} research sessions are open, the most this server "
                    "runs at once; retry later"
                ),
                request_id=rid, method="Research",
            )
        try:
            yield from self._research(request_iterator, context, rid)
        finally:
            self._slots.release()

    def _research(
        self,
        request_iterator: Iterator[research_pb2.ResearchRequest],
        context: grpc.ServicerContext,
        rid: str,
    ) -> Iterator[research_pb2.ResearchResponse]:
        cancel = threading.Event()
        context.add_callback(cancel.set)
        session: ResearchSession | None = None
        failure: Exception | None = None
        try:
            first = next(request_iterator, None)
            if first is None:
                raise InvalidRequest("start", "the stream closed before a start event")
            start = convert.start_from_proto(first)
            # One snapshot per session: absent as-of times are pinned to the start, so every
            # sub-question's evidence plan reads the same store state (echoed in the settings).
            now_us = self._clock()
            start = dataclasses.replace(
                start,
                at_valid_us=now_us if start.at_valid_us is None else start.at_valid_us,
                at_tx_us=now_us if start.at_tx_us is None else start.at_tx_us,
            )
            session = ResearchSession(
                start,
                provider=self._provider_factory(start.provider),
                evidence=self._evidence,
                digest_max_chars=self._digest_max_chars,
                cancel=cancel,
                duplicates=self._duplicates,
            )
            _log.info("research.start", request_id=rid, session_id=start.session_id,
                      actors=list(start.actors))
            yield from _send(session.begin())
            for raw in request_iterator:
                yield from _send(session.handle(convert.event_from_proto(raw)))
                if session.finished:
                    return
            yield from _send(session.close_input())
        except Cancelled:
            return
        except PlannerError as exc:
            failure = exc
        except Exception as exc:
            if cancel.is_set():
                return  # the request iterator raises once the caller has cancelled
            failure = exc
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
            abort_with(context, failure, request_id=rid, method="Research")


def _send(updates: Iterable[Update]) -> Iterator[research_pb2.ResearchResponse]:
    for update in updates:
        yield convert.update_to_proto(update)


def add_research_servicer(
    server: grpc.Server,
    *,
    evidence: EvidenceSource,
    provider_factory: ProviderFactory | None = None,
    digest_max_chars: int = DEFAULT_DIGEST_CHARS,
    on_session_end: SessionEndHook | None = None,
    max_sessions: int = 4,
    clock: Clock = wall_clock_us,
    duplicates: DuplicatePolicy | None = None,
) -> None:
    """Register ``planner.v1.ResearchPlannerService`` on ``server`` (before ``server.start()``).

    Args:
        server: the gRPC server. Each open stream holds one of its worker threads.
        evidence: plans each sub-question's evidence (see
            :class:`~planner_svc.research.evidence.EvidenceSource`).
        provider_factory: resolves each session's ``provider``; None = offline only (see
            :func:`~planner_svc.research.providers.make_provider_factory`).
        digest_max_chars: digest bound in characters, >= 1400.
        on_session_end: optional hook (metrics, tests).
        max_sessions: open sessions allowed at once (RESOURCE_EXHAUSTED beyond).
        clock: now, for sessions that name no as-of times.
        duplicates: how sessions screen proposals (threshold, embedder); None = no embedder,
            the default threshold.
    """
    servicer = ResearchPlannerServicer(
        evidence=evidence,
        provider_factory=provider_factory or make_provider_factory(),
        digest_max_chars=digest_max_chars,
        on_session_end=on_session_end,
        max_sessions=max_sessions,
        clock=clock,
        duplicates=duplicates,
    )
    research_pb2_grpc.add_ResearchPlannerServiceServicer_to_server(servicer, server)
