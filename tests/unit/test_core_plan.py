"""build_plan / empty_plan: budget rule, selection and hash put together (README.md, "Selection
rules")."""

from __future__ import annotations

from dataclasses import fields, replace

import pytest

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import (
    PLAN_MODEL,
    EvidencePlan,
    Explanation,
    Location,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)
from planner_svc.core.plan import build_plan, empty_plan
from planner_svc.core.plan_hash import EMPTY_PLAN_HASH, plan_hash


def cand(src: str, start: int, tokens: int, weight: float) -> PlannedSpan:
    return PlannedSpan(
        span=SpanRef(src, 1751500000000000, start, start + 100),
        kind="paragraph",
        span_class=SpanClass.TRUTH,
        weight=weight,
        tokens=tokens,
        text=f"text of {src}@{start}",
    )


POOL = [cand("a", 0, 900, 0.9), cand("b", 0, 1000, 0.8), cand("c", 0, 2000, 0.7)]


def test_budget_rule_is_applied_before_selection() -> None:
    # requested 6000, window 4000 -> ceiling 2000; estimate -> 1800; cap 0.5 x 1800 = 900.
    plan = build_plan(
        POOL,
        requested_budget=6000,
        context_window=4000,
        estimate_mode=True,
        max_frac_per_source=0.5,
        dedup_overlap=0.5,
    )
    assert plan.budget == 1800
    assert plan.stats.cap_tokens == 900
    assert plan.stats.token_estimate is True
    # density: a 0.001, b 0.0008, c 0.00035. a packs (900 == cap); b 1900 > 1800; c > B.
    assert [s.span.source_id for s in plan.spans] == ["a"]
    assert plan.used == 900
    assert plan.stats.skipped_budget_full == 1
    assert plan.stats.skipped_unpackable == 1
    assert plan.plan_model == PLAN_MODEL
    assert plan.plan_hash == plan_hash(PLAN_MODEL, 1800, 900, plan.spans)


def test_exact_mode_without_window_uses_the_request() -> None:
    plan = build_plan(
        POOL,
        requested_budget=6000,
        context_window=None,
        estimate_mode=False,
        max_frac_per_source=0.4,
        dedup_overlap=0.5,
    )
    assert plan.budget == 6000
    assert plan.used == 3900
    assert plan.stats.token_estimate is False
    assert plan.explanations == ()


def test_recall_counters_are_carried_and_selection_counters_are_not_overwritten() -> None:
    recall = PlanStats(
        pool_spans=99,  # selection's own count wins
        deduped=42,
        nodes_recalled=5,
        nodes_without_spans=1,
        kind_missing=2,
        slices_missing=3,
        pool_duplicates=4,
        structured_hits=6,
        semantic_hits=7,
        expanded_hits=8,
        nodes_not_live=9,
    )
    plan = build_plan(
        POOL,
        requested_budget=6000,
        context_window=None,
        estimate_mode=False,
        max_frac_per_source=0.4,
        dedup_overlap=0.5,
        recall_stats=recall,
        explain=True,
    )
    s = plan.stats
    assert (s.pool_spans, s.deduped, s.selected_spans) == (3, 0, 3)
    assert (s.nodes_recalled, s.nodes_without_spans, s.kind_missing, s.slices_missing) == (
        5,
        1,
        2,
        3,
    )
    assert (s.pool_duplicates, s.structured_hits, s.semantic_hits, s.expanded_hits) == (4, 6, 7, 8)
    assert s.nodes_not_live == 9
    assert len(plan.explanations) == 3


def test_text_does_not_change_the_hash() -> None:
    def plan_for(texts: list[str]) -> str:
        pool = [
            PlannedSpan(
                span=c.span, kind=c.kind, span_class=c.span_class, weight=c.weight,
                tokens=c.tokens, text=t,
            )
            for c, t in zip(POOL, texts, strict=True)
        ]
        return build_plan(
            pool,
            requested_budget=6000,
            context_window=None,
            estimate_mode=False,
            max_frac_per_source=0.4,
            dedup_overlap=0.5,
        ).plan_hash

    assert plan_for(["", "", ""]) == plan_for(["x", "yy", "東京"])


def test_invalid_pool_is_rejected() -> None:
    bad = [cand("a", 0, 10, float("nan"))]
    with pytest.raises(InvalidRequest) as info:
        build_plan(
            bad,
            requested_budget=10,
            context_window=None,
            estimate_mode=False,
            max_frac_per_source=0.4,
            dedup_overlap=0.5,
        )
    assert info.value.field == "pool[0].weight"


def test_empty_plan() -> None:
    plan = empty_plan()
    assert (plan.plan_model, plan.spans, plan.budget, plan.used) == ("v1", (), 0, 0)
    assert plan.plan_hash == EMPTY_PLAN_HASH
    assert all(not getattr(plan.stats, f.name) for f in fields(PlanStats))
    stats = PlanStats(nodes_recalled=3)
    assert empty_plan(stats).stats is stats


def test_with_text_is_replace_of_the_text_alone() -> None:
    # every field away from its default, so a field with_text forgot would show
    span = PlannedSpan(span=SpanRef("wiki/Ohio", 7, 10, 90), kind="heading",
                       span_class=SpanClass.CACHE, weight=0.25, tokens=21, text="old",
                       location=Location(page=3, heading_path=("Ohio", "Rivers"),
                                         cell_index=2))
    assert [f.name for f in fields(PlannedSpan)] == [
        "span", "kind", "span_class", "weight", "tokens", "text", "location"]
    assert span.with_text("new") == replace(span, text="new")
    # the planner rebuilds a plan and its explanations with their texts field by field
    assert [f.name for f in fields(EvidencePlan)] == [
        "plan_model", "spans", "budget", "used", "stats", "plan_hash", "explanations"]
    assert [f.name for f in fields(Explanation)] == ["candidate", "fate", "density",
                                                     "deduped_by"]
    assert span.with_text("new").text == "new"
    assert span.text == "old"
