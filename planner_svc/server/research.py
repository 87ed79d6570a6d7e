"""The ``ResearchPlannerService`` servicer: converts events and updates, delegates to
:class:`~planner_svc.research.session.ResearchSession`, and maps errors with the one table of
:mod:`planner_svc.server.errors` (the stream ends; the server keeps serving).

The request stream is read on a thread of its own (:class:`_Inbox`), so the session's thread
waits for the next event, the caller's cancellation and the server's shutdown at once:

- the caller cancels (or its deadline passes): the session's cancel event is set from gRPC's
  callback thread, pending work stops at its next check and nothing more is sent (logged as a
  cancelled session, never as an error, whether the session was reading, working or blocked
  sending);
- the server shuts down (:meth:`ResearchPlannerServicer.shutdown`): every open session ends
  with a final message whose stop reason is CANCELLED and whose detail says the server is
  shutting down, and the stream ends OK within the grace period; a stream that has not started
  its session yet gets UNAVAILABLE.

Every update is checked against the server's message limit before it is sent: when an update
would exceed it, the largest evidence plans are replaced by an ``evidence_error``
(``ResponseTooLarge: ...``, logged as an error) until it fits, so the session goes on; an update
too large even without evidence ends the stream with RESOURCE_EXHAUSTED.

Metrics: ``planner_rpc_total{method="Research",code}`` and ``planner_rpc_duration_seconds``
(as for Plan), ``planner_research_sessions_open``, ``planner_research_model_calls_total`` by
provider kind and ``planner_research_session_duration_seconds``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from typing import Any

import grpc
import structlog

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import (
    Cancelled,
    InvalidRequest,
    Overloaded,
    PlannerError,
    ResponseTooLarge,
    ShuttingDown,
)
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
from planner_svc.server.errors import abort_with, code_name
from planner_svc.server.observe import (
    RESEARCH_MODEL_CALLS,
    RESEARCH_SESSION_SECONDS,
    RESEARCH_SESSIONS_OPEN,
    RpcTimer,
    request_id,
)

__all__ = [
    "MIN_SERVICER_DIGEST_CHARS",
    "SERVICE_NAME",
    "SHUTDOWN_DETAIL",
    "ResearchPlannerServicer",
    "SessionEndHook",
    "add_research_servicer",
    "fit_update",
]

_log = structlog.get_logger("planner_svc.research")

SessionEndHook = Callable[[str, StopReason | None], None]
"""Called once per stream that got past its start event: (session_id, stop reason or None when
the stream failed with an error)."""

MIN_SERVICER_DIGEST_CHARS = MAX_QUESTION_CHARS + 400
"""Smallest digest bound a servicer accepts, characters: the longest question fits."""

SERVICE_NAME: str = research_pb2.DESCRIPTOR.services_by_name["ResearchPlannerService"].full_name
"""``planner.v1.ResearchPlannerService``: for health and reflection registration."""

SHUTDOWN_DETAIL = "the server is shutting down"
"""Start of a final message's detail when the server's shutdown ended the session."""

_INBOX_EVENTS = 64
"""Events read ahead of the session; the reader then waits (flow control reaches the client)."""


class _Signal:
    """A marker the inbox hands the session thread instead of an event."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"<{self.name}>"


_END = _Signal("end of stream")
_CANCELLED = _Signal("cancelled")
_SHUTDOWN = _Signal("shutdown")
_WAKE = _Signal("wake")


class _Inbox:
    """One research request stream, read on its own daemon thread.

    :meth:`get` returns the next request, ``_END`` once the client half-closes, an exception
    the stream raised (an undecodable event: InvalidRequest), or an interruption (``_CANCELLED``
    or ``_SHUTDOWN``) as soon as one is raised, ahead of any queued event. A cancellation
    overrides a shutdown.
    """

    def __init__(self, requests: Iterator[Any]) -> None:
        self._queue: queue.Queue[object] = queue.Queue(maxsize=_INBOX_EVENTS)
        self._closed = threading.Event()
        self._lock = threading.Lock()
        self._interruption: _Signal | None = None
        threading.Thread(target=self._pump, args=(requests,), name="research-inbox",
                         daemon=True).start()

    def _pump(self, requests: Iterator[Any]) -> None:
        try:
            for request in requests:
                if not self._put(request):
                    return
            self._put(_END)
        except grpc.RpcError:  # the request stream breaks when the caller cancels
            self.interrupt(_CANCELLED)
        except Exception as exc:
            self._put(exc)

    def _put(self, item: object) -> bool:
        while not self._closed.is_set():
            try:
                self._queue.put(item, timeout=0.25)
                return True
            except queue.Full:
                continue
        return False

    def interrupt(self, signal: _Signal) -> None:
        """Make :meth:`get` return ``signal`` from now on (a cancellation wins over a
        shutdown)."""
        with self._lock:
            if self._interruption is None or signal is _CANCELLED:
                self._interruption = signal
        with contextlib.suppress(queue.Full):  # when full, get() will not block anyway
            self._queue.put_nowait(_WAKE)

    def get(self) -> object:
        """The next item (see the class docstring)."""
        while True:
            if self._interruption is not None:
                return self._interruption
            item = self._queue.get()
            if item is not _WAKE:
                return item if self._interruption is None else self._interruption

    def close(self) -> None:
        """Stop reading: the reader thread ends at its next message or at the stream's end."""
        self._closed.set()


def _provider_kind(spec: str) -> str:
    """The metrics label of a provider string: ``offline``, ``openai``, ``cassette``,
    ``record`` (never the client-chosen cassette name)."""
    kind = spec.strip().partition(":")[0]
    if kind in ("", "offline"):
        return "offline"
    return kind if kind in ("openai", "cassette", "record") else "other"


def fit_update(
    message: research_pb2.ResearchResponse, max_bytes: int, **log_fields: object
) -> research_pb2.ResearchResponse:
    """``message`` made to fit ``max_bytes`` (the server's send limit): while it is larger, the
    largest evidence plan of its sub-questions (ties by id) is replaced by an
    ``evidence_error`` naming its size, the limit and what to lower; each replacement is logged
    as an error with ``log_fields``.

    Raises:
        ResponseTooLarge: still larger than ``max_bytes`` without any evidence plan.
    """
    size = message.ByteSize()
    if size <= max_bytes:
        return message
    kind = message.WhichOneof("update")
    questions: Iterable[research_pb2.SubQuestion] = (
        message.initial.sub_questions if kind == "initial"
        else message.replan.sub_questions if kind == "replan" else ()
    )
    planned = sorted(
        (q for q in questions if q.HasField("evidence")),
        key=lambda q: (-q.evidence.ByteSize(), q.id),
    )
    for question in planned:
        if size <= max_bytes:
            break
        plan_bytes = question.evidence.ByteSize()
        question.ClearField("evidence")
        question.evidence_error = (
            f"ResponseTooLarge: the evidence plan is {plan_bytes} bytes; with it this update "
            f"would exceed the server's {max_bytes}-byte message limit (lower budget_tokens)"
        )
        _log.error("research.evidence_too_large", question_id=question.id,
                   plan_bytes=plan_bytes, limit_bytes=max_bytes, **log_fields)
        size = message.ByteSize()
    if size > max_bytes:
        raise ResponseTooLarge(
            f"the research {kind} update is {size} bytes, over the server's {max_bytes}-byte "
            "message limit (lower budget_tokens, or the caps on leads)"
        )
    return message


class ResearchPlannerServicer(research_pb2_grpc.ResearchPlannerServiceServicer):
    """Serves ``planner.v1.ResearchPlannerService/Research``; one worker thread per open stream
    (and a reader thread per stream, see the module docstring).

    Args:
        evidence: plans each sub-question's evidence.
        provider_factory: makes each session's planning provider from its ``provider`` string.
        digest_max_chars: bound of each session's digest in characters, >= 1400.
        on_session_end: optional hook, see :data:`SessionEndHook`.
        max_sessions: open sessions allowed at once, >= 1. Each holds a server thread for its
            whole life, so the server keeps threads free for Plan and health checks by
            refusing further sessions (Overloaded: RESOURCE_EXHAUSTED).
        max_message_bytes: the server's send limit, bytes; every update is made to fit it
            (:func:`fit_update`).
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
        max_message_bytes: int = 16 * 1024 * 1024,
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
        self._max_message_bytes = max_message_bytes
        self._clock = clock
        self._duplicates = duplicates
        self._closing = threading.Event()
        self._open: set[_Inbox] = set()
        self._open_lock = threading.Lock()

    def shutdown(self) -> None:
        """Take no new session and end every open one with a final CANCELLED message (detail
        :data:`SHUTDOWN_DETAIL`) once its current step is done. Returns at once."""
        self._closing.set()
        with self._open_lock:
            inboxes = list(self._open)
        for inbox in inboxes:
            inbox.interrupt(_SHUTDOWN)

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
        with RpcTimer("Research") as timer:
            if self._closing.is_set():
                timer.code = "UNAVAILABLE"
                abort_with(context, ShuttingDown(f"{SHUTDOWN_DETAIL}; retry on another"),
                           request_id=rid, method="Research")
            if not self._slots.acquire(blocking=False):
                timer.code = "RESOURCE_EXHAUSTED"
                abort_with(
                    context,
                    Overloaded(
                        f"{self._max_sessions} research sessions are open, the most this server "
                        "runs at once; retry later"
                    ),
                    request_id=rid, method="Research",
                )
            try:
                yield from self._research(request_iterator, context, rid, timer)
            finally:
                self._slots.release()

    def _research(
        self,
        request_iterator: Iterator[research_pb2.ResearchRequest],
        context: grpc.ServicerContext,
        rid: str,
        timer: RpcTimer,
    ) -> Iterator[research_pb2.ResearchResponse]:
        cancel = threading.Event()
        inbox = _Inbox(request_iterator)

        def on_termination() -> None:  # also runs after a normal end: harmless then
            cancel.set()
            inbox.interrupt(_CANCELLED)

        if not context.add_callback(on_termination):
            on_termination()  # already terminated
        with self._open_lock:
            self._open.add(inbox)
        if self._closing.is_set():
            inbox.interrupt(_SHUTDOWN)
        session: ResearchSession | None = None
        failure: Exception | None = None
        started = time.perf_counter()
        counted = 0
        kind = "offline"
        outcome = "CANCELLED"  # unless the stream completes or fails

        def sent(updates: list[Update]) -> Iterator[research_pb2.ResearchResponse]:
            nonlocal counted
            if session is not None and session.model_calls > counted:
                RESEARCH_MODEL_CALLS.labels(kind).inc(session.model_calls - counted)
                counted = session.model_calls
            for update in updates:
                yield fit_update(convert.update_to_proto(update), self._max_message_bytes,
                                 request_id=rid, session_id=update_session_id)

        update_session_id = ""
        try:
            first = inbox.get()
            if first is _CANCELLED:
                return
            if first is _SHUTDOWN:
                raise ShuttingDown(f"{SHUTDOWN_DETAIL}; start the session on another server")
            if first is _END:
                raise InvalidRequest("start", "the stream closed before a start event")
            if isinstance(first, Exception):
                raise first
            start = convert.start_from_proto(first)  # type: ignore[arg-type]
            # One snapshot per session: absent as-of times are pinned to the start, so every
            # sub-question's evidence plan reads the same store state (echoed in the settings).
            now_us = self._clock()
            start = dataclasses.replace(
                start,
                at_valid_us=now_us if start.at_valid_us is None else start.at_valid_us,
                at_tx_us=now_us if start.at_tx_us is None else start.at_tx_us,
            )
            kind = _provider_kind(start.provider)
            session = ResearchSession(
                start,
                provider=self._provider_factory(start.provider),
                evidence=self._evidence,
                digest_max_chars=self._digest_max_chars,
                cancel=cancel,
                duplicates=self._duplicates,
            )
            update_session_id = start.session_id
            RESEARCH_SESSIONS_OPEN.inc()
            _log.info("research.start", request_id=rid, session_id=start.session_id,
                      actors=list(start.actors))
            yield from sent(session.begin())
            while not session.finished:
                item = inbox.get()
                if item is _CANCELLED:
                    return
                if item is _SHUTDOWN:
                    yield from sent(session.interrupt(SHUTDOWN_DETAIL))
                elif item is _END:
                    yield from sent(session.close_input())
                elif isinstance(item, Exception):
                    raise item
                else:
                    event = convert.event_from_proto(item)  # type: ignore[arg-type]
                    yield from sent(session.handle(event))
            outcome = "OK"
        except Cancelled:
            pass
        except PlannerError as exc:
            failure = exc
        except Exception as exc:
            if not (cancel.is_set() or not context.is_active()):
                failure = exc
        finally:
            # Also reached when gRPC closes this generator (the caller cancelled while a send
            # was blocked): the session then ends cancelled, never as an error.
            inbox.close()
            with self._open_lock:
                self._open.discard(inbox)
            timer.code = code_name(failure) if failure is not None else outcome
            if session is not None:
                if not session.finished:
                    session.cancel()
                if session.model_calls > counted:
                    RESEARCH_MODEL_CALLS.labels(kind).inc(session.model_calls - counted)
                RESEARCH_SESSIONS_OPEN.dec()
                RESEARCH_SESSION_SECONDS.observe(time.perf_counter() - started)
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
            abort_with(context, failure, request_id=rid, method="Research",
                       duration_us=timer.elapsed_us)


def add_research_servicer(
    server: grpc.Server,
    *,
    evidence: EvidenceSource,
    provider_factory: ProviderFactory | None = None,
    digest_max_chars: int = DEFAULT_DIGEST_CHARS,
    on_session_end: SessionEndHook | None = None,
    max_sessions: int = 4,
    max_message_bytes: int = 16 * 1024 * 1024,
    clock: Clock = wall_clock_us,
    duplicates: DuplicatePolicy | None = None,
) -> ResearchPlannerServicer:
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
        max_message_bytes: the server's send limit, bytes (updates are made to fit it).
        clock: now, for sessions that name no as-of times.
        duplicates: how sessions screen proposals (threshold, embedder); None = no embedder,
            the default threshold.

    Returns:
        The servicer (its :meth:`~ResearchPlannerServicer.shutdown` ends open sessions).
    """
    servicer = ResearchPlannerServicer(
        evidence=evidence,
        provider_factory=provider_factory or make_provider_factory(),
        digest_max_chars=digest_max_chars,
        on_session_end=on_session_end,
        max_sessions=max_sessions,
        max_message_bytes=max_message_bytes,
        clock=clock,
        duplicates=duplicates,
    )
    research_pb2_grpc.add_ResearchPlannerServiceServicer_to_server(servicer, server)
    return servicer
