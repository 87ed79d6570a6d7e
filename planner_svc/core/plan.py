"""Assemble an EvidencePlan from a candidate pool: budget rule, selection, plan hash.

Source: memory-planner seed, "Budget derivation" and "Phase B"; README.md, "Selection rules".
"""

from __future__ import annotations

from collections.abc import Sequence

from planner_svc.core.model import (
    PLAN_MODEL,
    EvidencePlan,
    PlannedSpan,
    PlanStats,
    evidence_plan,
)
from planner_svc.core.plan_hash import EMPTY_PLAN_HASH, plan_hash
from planner_svc.core.select import SelectionResult, select
from planner_svc.core.tokens import effective_budget

_RECALL_COUNTERS = (
    "nodes_recalled",
    "nodes_without_spans",
    "kind_missing",
    "slices_missing",
    "pool_duplicates",
    "structured_hits",
    "semantic_hits",
    "expanded_hits",
    "nodes_not_live",
)
"""The Phase A counters a plan's stats carry over from recall."""


def build_plan(
    pool: Sequence[PlannedSpan],
    *,
    requested_budget: int,
    context_window: int | None,
    estimate_mode: bool,
    max_frac_per_source: float,
    dedup_overlap: float,
    recall_stats: PlanStats | None = None,
    explain: bool = False,
) -> EvidencePlan:
    """Select from ``pool`` and return the hashed plan.

    Args:
        pool: candidates after Phase A (tokens counted under the plan's accounting).
        requested_budget: requested budget in tokens.
        context_window: the model's context window in tokens, or None when unknown.
        estimate_mode: True when any candidate's tokens came from the estimator.
        max_frac_per_source, dedup_overlap: selection settings (validated by ``select``).
        recall_stats: Phase A counters to carry into the plan's stats.
        explain: attach every candidate's fate.
    Raises:
        InvalidRequest: from validation of the settings or the pool.
    """
    budget = effective_budget(requested_budget, context_window, estimate_mode)
    result = select(pool, budget, max_frac_per_source, dedup_overlap, explain=explain)
    return assemble_plan(result, budget=budget, estimate_mode=estimate_mode,
                         recall_stats=recall_stats)


def assemble_plan(
    result: SelectionResult,
    *,
    budget: int,
    estimate_mode: bool,
    recall_stats: PlanStats | None = None,
) -> EvidencePlan:
    """The hashed plan of a selection (the second half of :func:`build_plan`).

    Args:
        result: what :func:`~planner_svc.core.select.select` chose under ``budget``.
        budget: the effective budget B it selected under, tokens.
        estimate_mode: True when any candidate's tokens came from the estimator.
        recall_stats: Phase A counters to carry into the plan's stats.
    """
    stats = result.stats
    if recall_stats is not None:
        for name in _RECALL_COUNTERS:
            setattr(stats, name, getattr(recall_stats, name))
    stats.token_estimate = estimate_mode
    return evidence_plan(PLAN_MODEL, result.selected, budget, result.used, stats,
                         plan_hash(PLAN_MODEL, budget, result.used, result.selected),
                         result.explanations)


def empty_plan(stats: PlanStats | None = None) -> EvidencePlan:
    """The ungrounded plan: budget 0, used 0, no spans, the empty-plan hash."""
    return EvidencePlan(
        plan_model=PLAN_MODEL,
        spans=(),
        budget=0,
        used=0,
        stats=stats if stats is not None else PlanStats(),
        plan_hash=EMPTY_PLAN_HASH,
    )
