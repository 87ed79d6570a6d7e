"""Test doubles for research sessions: a scripted provider and a fake evidence source.

Used by the research tests and usable by any test that needs a research stream without a model
or a store.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from planner_svc.core.model import (
    PLAN_MODEL,
    EvidencePlan,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)
from planner_svc.research.evidence import EvidenceBudget
from planner_svc.research.provider import ProviderAnswer, ProviderRequest


class ScriptedProvider:
    """A provider that returns prepared answers in order and records every request.

    Args:
        answers: answers for successive calls; when exhausted, ``fallback`` is used.
        fallback: answer once ``answers`` run out (default: propose nothing).
        name: provider name to report.
    """

    def __init__(
        self,
        answers: Sequence[ProviderAnswer] = (),
        *,
        fallback: ProviderAnswer | None = None,
        name: str = "scripted",
    ) -> None:
        self._answers = list(answers)
        self._fallback = fallback or ProviderAnswer()
        self._name = name
        self._lock = threading.Lock()
        self.requests: list[ProviderRequest] = []

    @property
    def name(self) -> str:
        """The name given at construction."""
        return self._name

    @property
    def calls(self) -> int:
        """Requests answered so far."""
        with self._lock:
            return len(self.requests)

    def propose(
        self, request: ProviderRequest, *, cancel: threading.Event | None = None
    ) -> ProviderAnswer:
        """The next prepared answer (or the fallback)."""
        with self._lock:
            index = len(self.requests)
            self.requests.append(request)
            return self._answers[index] if index < len(self._answers) else self._fallback


def evidence_plan(question_text: str, spans: int, *, budget: int = 100) -> EvidencePlan:
    """An evidence plan with ``spans`` spans of 5 tokens each from source ``doc:<text>``.

    Not a valid hash: ``plan_hash`` is ``fake:<spans>``; the research stream only forwards it.
    """
    return EvidencePlan(
        plan_model=PLAN_MODEL,
        spans=tuple(
            PlannedSpan(
                span=SpanRef(f"doc:{question_text[:40]}", 1_700_000_000_000_000, i * 100,
                             i * 100 + 40),
                kind="paragraph",
                span_class=SpanClass.TRUTH,
                weight=1.0 / (i + 1),
                tokens=5,
            )
            for i in range(spans)
        ),
        budget=budget,
        used=5 * spans,
        stats=PlanStats(),
        plan_hash=f"fake:{spans}",
    )


@dataclass
class FakeEvidence:
    """An :class:`~planner_svc.research.evidence.EvidenceSource`: ``spans_for(text)`` spans per
    question; records calls.

    ``gate``, when given, is waited on (up to ``gate_timeout_s``) at the start of every call
    after ``entered`` is set, so a test can hold a call in flight. A session without a budget
    plans with ``default_budget`` tokens, which its plans also pack to (no estimate discount).
    """

    spans_for: Callable[[str], int] = lambda text: 2
    default_budget: int = 100
    gate: threading.Event | None = None
    gate_timeout_s: float = 10.0
    entered: threading.Event = field(default_factory=threading.Event)
    calls: list[tuple[str, int | None, int | None, int | None]] = field(default_factory=list)

    def evidence_for(
        self,
        question: str,
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        budget_tokens: int | None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> EvidencePlan:
        """An evidence plan for ``question`` (``cancelled`` is not polled)."""
        self.calls.append((question, at_valid_us, at_tx_us, budget_tokens))
        self.entered.set()
        if self.gate is not None:
            self.gate.wait(self.gate_timeout_s)
        budget = self.budget_for(budget_tokens).effective_tokens
        return evidence_plan(question, self.spans_for(question), budget=budget)

    def budget_for(self, budget_tokens: int | None) -> EvidenceBudget:
        """``budget_tokens`` or ``default_budget``, packed to as is."""
        requested = self.default_budget if budget_tokens is None else budget_tokens
        return EvidenceBudget(requested_tokens=requested, default_applied=budget_tokens is None,
                              effective_tokens=requested)
