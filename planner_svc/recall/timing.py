"""Where one plan's time goes: wall time per stage.

A plan runs its stages in a fixed order, some more than once (the structured and semantic legs
run once for the question and once per part of a comparison); :class:`StageClock` adds each
run's wall time to its stage. The stages of the evidence planner, in the order they first run
(:data:`PLAN_STAGES`):

- ``request``: validating the request into a query (the servicer);
- ``queue``: waiting for a planning slot (:mod:`planner_svc.recall.slots`; only a server's
  plans wait);
- ``catalog``: bringing the recall catalog up to the store (a cheap check when nothing was
  written) and taking the plan's as-of views of it;
- ``question``: the question's analysis: its query terms and its parts (the sides of a
  comparison), which both legs read;
- ``semantic``: embedding the question (and its parts), the vector search and its exact
  re-scoring;
- ``structured``: BM25 over whole documents (or the label/property-filtered search);
- ``fusion``: each leg's document scores made relative to its best and fused, and a
  comparison's parts merged into the question's scores;
- ``hops``: expansion from the best documents: their links, the residual of the question, and
  the targets' passages scored against it;
- ``abstention``: the absolute evidence the decline decision reads;
- ``passages``: every candidate document's passages scored and ranked (node scores);
- ``trace``: the explain trace (only when explain is asked for);
- ``pool``: node scores exploded to spans and weighed;
- ``tokens``: token counts (exact, cached per tokenizer and span, or estimated);
- ``select``: Phase B;
- ``hash``: the plan's stats and hash;
- ``texts``: the text of each span of the plan (and of each explained candidate);
- ``response``: the plan converted to its message (the servicer).

Durations are integer microseconds. A little of a plan's time is in no stage: ending its store
snapshot (the read transaction's commit: 26-49 us a plan in process on the demo corpus, where
a tight loop of them takes 2 us) and what Python does between the stages, so the stages add up
to 0.13-0.27 ms less than the plan's wall time there.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from types import TracebackType

__all__ = ["PLAN_STAGES", "StageClock"]

PLAN_STAGES: tuple[str, ...] = (
    "request",
    "queue",
    "catalog",
    "question",
    "semantic",
    "structured",
    "fusion",
    "hops",
    "abstention",
    "passages",
    "trace",
    "pool",
    "tokens",
    "select",
    "hash",
    "texts",
    "response",
)
"""Every stage name a plan reports, in the order the stages first run."""


class _Stage:
    """One timed run of a stage (a context manager)."""

    __slots__ = ("_clock", "_name", "_started")

    def __init__(self, clock: StageClock, name: str) -> None:
        self._clock = clock
        self._name = name
        self._started = 0.0

    def __enter__(self) -> None:
        self._started = time.perf_counter()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._clock.add(self._name, time.perf_counter() - self._started)


class StageClock:
    """Wall time per stage of one plan (not thread-safe: one clock per plan).

    Use ``with clock.stage("hops"): ...``; a stage that runs several times accumulates.
    """

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        self._seconds: dict[str, float] = {}

    def stage(self, name: str) -> _Stage:
        """A context manager timing one run of stage ``name`` (one of :data:`PLAN_STAGES`)."""
        return _Stage(self, name)

    def add(self, name: str, seconds: float) -> None:
        """Add ``seconds`` of wall time to stage ``name``."""
        self._seconds[name] = self._seconds.get(name, 0.0) + seconds

    @property
    def durations_us(self) -> Mapping[str, int]:
        """Stage -> its wall time in microseconds (rounded down), for the stages that ran, in
        :data:`PLAN_STAGES` order."""
        seconds = self._seconds
        return {name: int(seconds[name] * 1_000_000) for name in PLAN_STAGES
                if name in seconds}

    @property
    def seconds(self) -> Mapping[str, float]:
        """Stage -> its wall time in seconds, for the stages that ran."""
        return dict(self._seconds)
