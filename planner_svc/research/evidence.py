"""Evidence for research sub-questions: the core-typed port a session plans through, and its
adapter over the evidence planner.

A session asks :class:`EvidenceSource` for each sub-question's plan and streams it; it never
sees how the plan was made. :class:`PlannerEvidence` answers with the server's
:class:`~planner_svc.recall.planner.EvidencePlanner`, building the same query the Plan RPC builds
for ``planner-svc plan QUESTION`` (:func:`~planner_svc.recall.request.question_query`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.model import EvidencePlan
from planner_svc.core.tokens import effective_budget
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.request import question_query

__all__ = ["EvidenceBudget", "EvidenceSource", "PlannerEvidence"]


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceBudget:
    """The budget every evidence plan of a session packs to, resolved once at its start.

    Attributes:
        requested_tokens: the session's ``budget_tokens``, or the server default when it named
            none (tokens).
        default_applied: True when ``requested_tokens`` is the server default.
        effective_tokens: what a plan packs to: ``requested_tokens`` through the budget rule
            (:func:`~planner_svc.core.tokens.effective_budget`), e.g. x0.9 floored when span
            tokens are estimated (tokens).
    """

    requested_tokens: int
    default_applied: bool
    effective_tokens: int


class EvidenceSource(Protocol):
    """Plans the evidence of one sub-question.

    Raises a :class:`~planner_svc.core.errors.PlannerError` (for instance InsufficientEvidence)
    when no plan can be made; the session reports it on the sub-question instead of failing.
    """

    def evidence_for(
        self,
        question: str,
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        budget_tokens: int | None,
        cancelled: Callable[[], bool] = ...,
    ) -> EvidencePlan:
        """The evidence plan of ``question`` as of the given times (microseconds; None = now)
        under ``budget_tokens`` (tokens; None = the planner's default budget); ``cancelled``
        (polled while the plan waits for a planning slot and between its stages) true stops
        it with :class:`~planner_svc.core.errors.Cancelled`."""
        ...

    def budget_for(self, budget_tokens: int | None) -> EvidenceBudget:
        """The budget :meth:`evidence_for` plans with for ``budget_tokens`` (None = default)."""
        ...


class PlannerEvidence:
    """:class:`EvidenceSource` over an :class:`EvidencePlanner`.

    Args:
        planner: the evidence planner (its selection and recall settings apply).
        semantic: use the semantic leg (False for a store-only planner).
        clock: now, for absent as-of times.
    """

    def __init__(
        self, planner: EvidencePlanner, *, semantic: bool, clock: Clock = wall_clock_us
    ) -> None:
        self._planner = planner
        self._semantic = semantic
        self._clock = clock

    def evidence_for(
        self,
        question: str,
        *,
        at_valid_us: int | None,
        at_tx_us: int | None,
        budget_tokens: int | None,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> EvidencePlan:
        """The plan of :func:`~planner_svc.recall.request.question_query` for ``question``.

        Raises:
            PlannerError: InsufficientEvidence when nothing is recalled; InvalidRequest for a
                blank question or a budget out of range; Cancelled once ``cancelled()``.
        """
        query = question_query(
            question,
            config=self._planner.config,
            recall=self._planner.recall,
            now_us=self._clock(),
            semantic=self._semantic,
            budget_tokens=budget_tokens,
            at_valid_us=at_valid_us,
            at_tx_us=at_tx_us,
        )
        return self._planner.plan(query, cancelled=cancelled).plan

    def budget_for(self, budget_tokens: int | None) -> EvidenceBudget:
        """The budget of :meth:`evidence_for`: ``budget_tokens`` or the selection settings'
        default, and x0.9 floored, because sub-question plans name no model and so count span
        tokens with the estimator (estimate mode)."""
        default = budget_tokens is None
        requested = self._planner.config.default_budget_tokens if default else budget_tokens
        assert requested is not None
        return EvidenceBudget(
            requested_tokens=requested,
            default_applied=default,
            effective_tokens=effective_budget(requested, None, estimate_mode=True),
        )
