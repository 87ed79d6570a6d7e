"""Request observation: request ids, structured logs and Prometheus metrics per RPC.

Every RPC gets a request id (the caller's ``x-request-id`` metadata or a new one), echoed in the
trailing metadata; one JSON log line per RPC with the method, status, duration in microseconds
and, for plans, the plan hash. Each Plan's wall time per stage (:mod:`planner_svc.recall.timing`)
goes to the ``planner_plan_stage_duration_seconds`` histogram, labelled by stage.
"""

from __future__ import annotations

import logging
import sys
import time
import uuid
from typing import Generic, TypeVar

import grpc
import structlog
from prometheus_client import Counter, Gauge, Histogram
from prometheus_client.metrics import MetricWrapperBase

from planner_svc.recall.timing import StageClock

__all__ = [
    "PLAN_SPANS",
    "PLAN_STAGE_SECONDS",
    "PLAN_USED_TOKENS",
    "RESEARCH_MODEL_CALLS",
    "RESEARCH_SESSIONS_OPEN",
    "RESEARCH_SESSION_SECONDS",
    "RPC_LATENCY",
    "RPC_TOTAL",
    "LabelledChildren",
    "RpcTimer",
    "configure_logging",
    "observe_stages",
    "request_id",
]

def request_id(context: grpc.ServicerContext) -> str:
    """The caller's ``x-request-id`` metadata (first 64 characters) or a fresh id."""
    for key, value in context.invocation_metadata() or ():
        if key == "x-request-id" and isinstance(value, str) and value:
            return value[:64]
    return uuid.uuid4().hex


RPC_LATENCY = Histogram(
    "planner_rpc_duration_seconds",
    "RPC handling time in seconds",
    ["method"],
    buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0),
)
RPC_TOTAL = Counter("planner_rpc_total", "RPCs handled", ["method", "code"])
PLAN_SPANS = Histogram(
    "planner_plan_spans", "Spans per returned plan", buckets=(0, 1, 2, 4, 8, 16, 32, 64, 128)
)
PLAN_STAGE_SECONDS = Histogram(
    "planner_plan_stage_duration_seconds",
    "Wall time of one stage of a Plan in seconds (stage names: planner_svc.recall.timing)",
    ["stage"],
    buckets=(0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0),
)
PLAN_USED_TOKENS = Histogram(
    "planner_plan_used_tokens", "Tokens used per plan",
    buckets=(0, 100, 250, 500, 1000, 2000, 4000, 8000, 16000),
)

RESEARCH_SESSIONS_OPEN = Gauge(
    "planner_research_sessions_open", "Research sessions open now (streams past admission)"
)
RESEARCH_MODEL_CALLS = Counter(
    "planner_research_model_calls_total",
    "Planning-provider calls made by research sessions, by provider kind "
    "(offline, openai, cassette, record)",
    ["provider"],
)
RESEARCH_SESSION_SECONDS = Histogram(
    "planner_research_session_duration_seconds",
    "Research session length in seconds (start event to the end of the stream)",
    buckets=(0.1, 0.5, 1.0, 5.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0),
)


_Metric = TypeVar("_Metric", bound=MetricWrapperBase)


class LabelledChildren(Generic[_Metric]):
    """The labelled children of one metric (``metric.labels(*values)``), each looked up once:
    a plan observes about 15 labelled series, and ``labels()`` validates and locks on every call.

    Thread-safe: two threads asking for a new child at once both get the one stored first.
    """

    __slots__ = ("_children", "metric")

    def __init__(self, metric: _Metric) -> None:
        self.metric = metric
        self._children: dict[tuple[str, ...], _Metric] = {}

    def __call__(self, *values: str) -> _Metric:
        """The child for one label value per label name, in the metric's label order.

        Raises:
            ValueError: ``values`` does not match the metric's label names in number.
        """
        child = self._children.get(values)
        if child is None:
            child = self._children.setdefault(values, self.metric.labels(*values))
        return child


_RPC_LATENCY_BY = LabelledChildren(RPC_LATENCY)
_RPC_TOTAL_BY = LabelledChildren(RPC_TOTAL)
_PLAN_STAGE_SECONDS_BY = LabelledChildren(PLAN_STAGE_SECONDS)


class _CurrentStderr:
    """Writes to whatever ``sys.stderr`` is at the time of the write (it may be replaced after
    logging is configured, e.g. by a test harness capturing output). structlog's WriteLogger
    hands over each line with its newline in one write, so lines of worker processes sharing
    stderr do not interleave."""

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()


def configure_logging(*, json_logs: bool = True, level: str = "info") -> None:
    """Configure structlog to write one JSON object per line to stderr."""
    renderer: structlog.types.Processor = (
        structlog.processors.JSONRenderer() if json_logs else structlog.dev.ConsoleRenderer()
    )
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.format_exc_info,
            renderer,
        ],
        wrapper_class=structlog.make_filtering_bound_logger(
            logging.getLevelNamesMapping().get(level.upper(), logging.INFO)
        ),
        logger_factory=structlog.WriteLoggerFactory(file=_CurrentStderr()),  # type: ignore[arg-type]
        cache_logger_on_first_use=True,
    )


class RpcTimer:
    """Times one RPC and records its outcome (use as a context manager)."""

    __slots__ = ("code", "method", "started")

    def __init__(self, method: str) -> None:
        self.method = method
        self.code = "OK"
        self.started = time.perf_counter()

    def __enter__(self) -> RpcTimer:
        return self

    def __exit__(self, *exc: object) -> None:
        elapsed = time.perf_counter() - self.started
        _RPC_LATENCY_BY(self.method).observe(elapsed)
        _RPC_TOTAL_BY(self.method, self.code).inc()

    @property
    def elapsed_us(self) -> int:
        """Microseconds since the RPC started."""
        return int((time.perf_counter() - self.started) * 1_000_000)


def observe_stages(clock: StageClock) -> None:
    """Add each stage's wall time of one plan to :data:`PLAN_STAGE_SECONDS` (the stages that
    ran; a stage that ran several times is observed once, with its sum)."""
    for stage, seconds in clock.seconds.items():
        _PLAN_STAGE_SECONDS_BY(stage).observe(seconds)
