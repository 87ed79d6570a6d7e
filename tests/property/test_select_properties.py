"""Properties of Phase B selection that hold for every pool (README.md, "Selection rules").

Pools are small and dense on purpose: few sources and versions, short offset ranges and a few
repeated weights, so overlaps, ties, cap refusals and budget exhaustion all occur often. A
brute-force reference (linear scans, no interval index) pins every candidate's fate.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.model import CandidateFate, PlannedSpan, SpanClass, SpanRef
from planner_svc.core.plan_hash import plan_hash
from planner_svc.core.select import SelectionResult, select

F = CandidateFate
SETTINGS = settings(max_examples=200, deadline=None)

weights = st.one_of(
    st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0]),
    st.floats(min_value=0.0, max_value=1.0, allow_subnormal=True),
)


@st.composite
def candidates(draw: st.DrawFn) -> PlannedSpan:
    start = draw(st.integers(0, 120))
    return PlannedSpan(
        span=SpanRef(
            draw(st.sampled_from(["a", "b", "c", "ä"])),
            draw(st.sampled_from([1, 2, -(2**63)])),
            start,
            start + draw(st.integers(1, 60)),
        ),
        kind=draw(st.sampled_from(["paragraph", "heading", "body"])),
        span_class=draw(st.sampled_from([SpanClass.TRUTH, SpanClass.CACHE])),
        weight=draw(weights),
        tokens=draw(st.integers(0, 80)),
        text=draw(st.sampled_from(["", "x"])),
    )


pools = st.lists(candidates(), max_size=30)
budgets = st.integers(0, 300)
fractions = st.one_of(st.sampled_from([1.0, 0.5, 0.4, 0.1]), st.floats(1e-3, 1.0))
overlaps = st.one_of(st.sampled_from([0.0, 0.5, 1.0]), st.floats(0.0, 1.0))


def run(
    pool: Sequence[PlannedSpan], budget: int, frac: float, overlap: float
) -> SelectionResult:
    return select(pool, budget, frac, overlap, explain=True)


def signature(r: SelectionResult, budget: int) -> tuple[object, ...]:
    """Everything observable about a result, weights by bit pattern (0.0 != -0.0)."""
    return (
        [(s.span, s.kind, s.span_class, math.copysign(1.0, s.weight), s.weight, s.tokens, s.text)
         for s in r.selected],
        r.used,
        r.stats,
        [(e.candidate, math.copysign(1.0, e.candidate.weight), e.fate, e.deduped_by)
         for e in r.explanations],
        plan_hash("v1", budget, r.used, r.selected),
    )


def spend_by_source(spans: Sequence[PlannedSpan]) -> Counter[str]:
    spend: Counter[str] = Counter()
    for s in spans:
        spend[s.span.source_id] += s.tokens
    return spend


@SETTINGS
@given(pools, budgets, fractions, overlaps)
def test_budget_and_cap_always_hold(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    r = run(pool, budget, frac, overlap)
    cap = math.floor(frac * budget)
    assert r.used <= budget
    assert r.used == sum(s.tokens for s in r.selected)
    assert r.stats.cap_tokens == cap
    assert all(spent <= cap for spent in spend_by_source(r.selected).values())
    s = r.stats
    assert s.pool_spans == len(pool) == len(r.explanations)
    counts = Counter(e.fate for e in r.explanations)
    assert counts[F.PACKED] == s.selected_spans == len(r.selected)
    assert counts[F.DEDUPED] == s.deduped
    assert counts[F.UNPACKABLE] == s.skipped_unpackable
    assert counts[F.BUDGET_FULL] == s.skipped_budget_full
    assert counts[F.CAP_BLOCKED] == s.cap_skipped


@SETTINGS
@given(st.data(), pools, budgets, fractions, overlaps)
def test_invariant_under_permutation(
    data: st.DataObject, pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    reference = signature(run(pool, budget, frac, overlap), budget)
    shuffled = data.draw(st.permutations(pool))
    k = data.draw(st.integers(0, max(0, len(pool) - 1)))
    for variant in (shuffled, pool[::-1], pool[k:] + pool[:k]):
        assert signature(run(variant, budget, frac, overlap), budget) == reference


@SETTINGS
@given(pools, budgets, fractions, overlaps)
def test_no_fitting_span_is_left_behind(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    """A span that does not fit never blocks a later one: whatever is left out was either
    deduped or does not fit the final remaining budget or its source's remaining cap."""
    r = run(pool, budget, frac, overlap)
    cap = math.floor(frac * budget)
    remaining = budget - r.used
    spend = spend_by_source(r.selected)
    for e in r.explanations:
        c = e.candidate
        fits_budget = c.tokens <= remaining
        fits_cap = spend[c.span.source_id] + c.tokens <= cap
        if e.fate is F.PACKED or e.fate is F.DEDUPED:
            continue
        assert not (fits_budget and fits_cap), (e, remaining, spend)
        if e.fate is F.UNPACKABLE:
            assert c.tokens > budget
        elif e.fate is F.BUDGET_FULL:
            assert c.tokens <= budget
            assert not fits_budget
        else:
            assert e.fate is F.CAP_BLOCKED
            assert not fits_cap
    # Zero-token spans always pack unless deduped.
    for e in r.explanations:
        if e.candidate.tokens == 0:
            assert e.fate in (F.PACKED, F.DEDUPED)


@SETTINGS
@given(pools, budgets, fractions, overlaps)
def test_stranded_budget_only_when_the_cap_refused_a_fitting_span(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    r = run(pool, budget, frac, overlap)
    s = r.stats
    if s.cap_skipped == 0:
        assert s.budget_stranded_by_cap == 0
    else:
        assert s.budget_stranded_by_cap == budget - r.used
    # A cap of the whole budget never refuses anything.
    whole = run(pool, budget, 1.0, overlap).stats
    assert whole.cap_skipped == 0
    assert whole.budget_stranded_by_cap == 0


@SETTINGS
@given(pools, budgets, fractions, overlaps)
def test_dedup_leaves_no_duplicates_and_names_a_heavier_kept_span(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    r = run(pool, budget, frac, overlap)
    kept = [e.candidate for e in r.explanations if e.fate is not F.DEDUPED]

    def duplicate(x: SpanRef, y: SpanRef) -> bool:
        if (x.source_id, x.source_version_tx) != (y.source_id, y.source_version_tx):
            return False
        inter = min(x.end, y.end) - max(x.start, y.start)
        shorter = min(x.length, y.length)
        return inter > 0 and (inter / shorter > overlap or inter == shorter)

    for i, a in enumerate(kept):
        for b in kept[i + 1 :]:
            assert not duplicate(a.span, b.span)
    kept_refs = {c.span: c for c in kept}
    for e in r.explanations:
        if e.fate is F.DEDUPED:
            assert e.deduped_by is not None
            winner = kept_refs[e.deduped_by]
            assert duplicate(e.candidate.span, winner.span)
            assert winner.weight >= e.candidate.weight
        else:
            assert e.deduped_by is None


def reference_select(
    pool: Sequence[PlannedSpan], budget: int, frac: float, overlap: float
) -> tuple[list[tuple[PlannedSpan, CandidateFate, SpanRef | None]], int]:
    """Brute-force Phase B, written from README.md, "Selection rules", without the interval
    index."""

    def desc(x: float) -> tuple[float, float]:  # IEEE total order, descending
        return (-x, -math.copysign(1.0, x))

    def tie(c: PlannedSpan) -> tuple[object, ...]:
        r = c.span
        return (r.source_id, r.source_version_tx, r.start, r.end, c.kind, int(c.span_class),
                c.tokens, c.text, desc(c.weight))

    fate: dict[int, tuple[CandidateFate, SpanRef | None]] = {}
    kept: list[int] = []
    for i in sorted(range(len(pool)), key=lambda i: (desc(pool[i].weight), tie(pool[i]))):
        x = pool[i].span
        for j in kept:  # kept in weight order: the first duplicate found is the heaviest
            y = pool[j].span
            if (x.source_id, x.source_version_tx) != (y.source_id, y.source_version_tx):
                continue
            inter = min(x.end, y.end) - max(x.start, y.start)
            shorter = min(x.end - x.start, y.end - y.start)
            if inter > 0 and (inter / shorter > overlap or inter == shorter):
                fate[i] = (F.DEDUPED, y)
                break
        else:
            kept.append(i)
    cap = math.floor(frac * budget)
    used = 0
    spend: Counter[str] = Counter()
    for i in sorted(kept, key=lambda i: (desc(pool[i].weight / max(1, pool[i].tokens)),
                                         tie(pool[i]))):
        c = pool[i]
        if c.tokens > budget:
            fate[i] = (F.UNPACKABLE, None)
        elif used + c.tokens > budget:
            fate[i] = (F.BUDGET_FULL, None)
        elif spend[c.span.source_id] + c.tokens > cap:
            fate[i] = (F.CAP_BLOCKED, None)
        else:
            used += c.tokens
            spend[c.span.source_id] += c.tokens
            fate[i] = (F.PACKED, None)
    order = sorted(range(len(pool)), key=lambda i: tie(pool[i]))
    return [(pool[i], *fate[i]) for i in order], used


@SETTINGS
@given(pools, budgets, fractions, overlaps)
def test_matches_brute_force_reference(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float
) -> None:
    r = run(pool, budget, frac, overlap)
    expected, used = reference_select(pool, budget, frac, overlap)
    assert r.used == used
    got = [(e.candidate, e.fate, e.deduped_by) for e in r.explanations]
    assert got == expected
    assert [id(e.candidate) for e in r.explanations] == [id(c) for c, _, _ in expected]
