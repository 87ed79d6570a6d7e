"""Phase B selection on hand-built pools (README.md, "Selection rules"; seed "Phase B", "The hard
per-source cap and stranded budget").

Each test builds a small pool whose outcome is worked out by hand in the comments.
"""

from __future__ import annotations

import math
import random

import pytest

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import CandidateFate, PlannedSpan, SpanClass, SpanRef
from planner_svc.core.plan_hash import plan_hash
from planner_svc.core.select import SelectionResult, density, select

F = CandidateFate


def cand(
    src: str,
    start: int,
    end: int,
    *,
    tokens: int,
    weight: float,
    tx: int = 1,
    kind: str = "paragraph",
    span_class: SpanClass = SpanClass.TRUTH,
    text: str = "",
) -> PlannedSpan:
    return PlannedSpan(
        span=SpanRef(src, tx, start, end),
        kind=kind,
        span_class=span_class,
        weight=weight,
        tokens=tokens,
        text=text,
    )


def fates(result: SelectionResult) -> dict[tuple[str, int, int, int], CandidateFate]:
    return {e.candidate.span.key: e.fate for e in result.explanations}


def coords(spans: tuple[PlannedSpan, ...]) -> list[tuple[str, int, int, int]]:
    return [s.span.key for s in spans]


def check_accounting(result: SelectionResult, pool_size: int) -> None:
    s = result.stats
    assert s.pool_spans == pool_size
    assert s.selected_spans == len(result.selected)
    total = s.selected_spans + s.deduped + s.skipped_unpackable + s.skipped_budget_full
    assert total + s.cap_skipped == pool_size
    assert result.used == sum(c.tokens for c in result.selected)


# ---- the three skip outcomes ---------------------------------------------------------------


def test_unpackable_and_budget_full_and_the_scan_continues() -> None:
    # B = 100, cap = 100 (max_frac 1.0); distinct sources, no overlaps. Density order:
    # b 0.1 (packs, used 60), c 0.09 (60+50 > 100: budget full), a 0.0667 (150 > B: unpackable),
    # d 0.05 (packs, used 100), e 0.01 (budget full).
    pool = [
        cand("a", 0, 10, tokens=150, weight=10.0),
        cand("b", 0, 10, tokens=60, weight=6.0),
        cand("c", 0, 10, tokens=50, weight=4.5),
        cand("d", 0, 10, tokens=40, weight=2.0),
        cand("e", 0, 10, tokens=1, weight=0.01),
    ]
    r = select(pool, 100, 1.0, 0.5, explain=True)
    assert coords(r.selected) == [("b", 1, 0, 10), ("d", 1, 0, 10)]
    assert r.used == 100
    s = r.stats
    assert (s.skipped_unpackable, s.skipped_budget_full, s.cap_skipped, s.deduped) == (1, 2, 0, 0)
    assert s.selected_spans == 2
    assert s.cap_tokens == 100
    assert s.budget_stranded_by_cap == 0
    assert fates(r) == {
        ("a", 1, 0, 10): F.UNPACKABLE,
        ("b", 1, 0, 10): F.PACKED,
        ("c", 1, 0, 10): F.BUDGET_FULL,
        ("d", 1, 0, 10): F.PACKED,
        ("e", 1, 0, 10): F.BUDGET_FULL,
    }
    check_accounting(r, len(pool))


def test_all_three_skips_in_one_pool() -> None:
    # B = 100, cap = floor(0.5 x 100) = 50. Density order:
    # p (s1, 30 tok, 0.1) packs: used 30, s1 30
    # q (s1, 30 tok, 0.09) fits the budget (60 <= 100) but s1 would reach 60 > 50: cap blocked
    # u (s3, 120 tok, 0.075) > B: unpackable
    # r (s2, 20 tok, 0.05) packs: used 50
    # v (s4, 45 tok, 0.02) packs: used 95
    # w (s5, 10 tok, 0.01): 105 > 100, budget full
    pool = [
        cand("s1", 0, 100, tokens=30, weight=3.0),
        cand("s1", 200, 300, tokens=30, weight=2.7),
        cand("s3", 0, 100, tokens=120, weight=9.0),
        cand("s2", 0, 100, tokens=20, weight=1.0),
        cand("s4", 0, 100, tokens=45, weight=0.9),
        cand("s5", 0, 100, tokens=10, weight=0.1),
    ]
    r = select(pool, 100, 0.5, 0.5, explain=True)
    s = r.stats
    assert (s.skipped_unpackable, s.skipped_budget_full, s.cap_skipped) == (1, 1, 1)
    assert r.used == 95
    assert s.cap_tokens == 50
    assert s.budget_stranded_by_cap == 5
    assert coords(r.selected) == [
        ("s1", 1, 0, 100),
        ("s2", 1, 0, 100),
        ("s4", 1, 0, 100),
    ]
    assert fates(r)[("s1", 1, 200, 300)] is F.CAP_BLOCKED
    check_accounting(r, len(pool))


def test_weight_zero_spans_of_other_sources_fill_the_budget_a_capped_source_leaves() -> None:
    # README "Selection rules": no weight threshold. B = 100, cap floor(0.5 * 100) = 50.
    # a (s1, 40 tok, d 0.1) packs: used 40, s1 40
    # b (s1, 20 tok, d 0.09) fits the budget but s1 would reach 60 > 50: cap blocked
    # z2, z3 (weight 0, density 0; coordinate order s2 < s3) pack: used 70, then 100
    # z4 (weight 0, 1 tok): 101 > 100, budget full
    pool = [
        cand("s1", 0, 100, tokens=40, weight=4.0),
        cand("s1", 200, 300, tokens=20, weight=1.8),
        cand("s4", 0, 10, tokens=1, weight=0.0),
        cand("s3", 0, 100, tokens=30, weight=0.0),
        cand("s2", 0, 100, tokens=30, weight=0.0),
    ]
    r = select(pool, 100, 0.5, 0.5, explain=True)
    assert coords(r.selected) == [("s1", 1, 0, 100), ("s2", 1, 0, 100), ("s3", 1, 0, 100)]
    assert r.used == 100
    assert fates(r)[("s1", 1, 200, 300)] is F.CAP_BLOCKED
    assert fates(r)[("s4", 1, 0, 10)] is F.BUDGET_FULL
    assert r.stats.budget_stranded_by_cap == 0  # the cap refused a fitting span, nothing is left
    # without the weight-0 spans the same cap strands the 60 tokens s1 may not use
    alone = select(pool[:2], 100, 0.5, 0.5)
    assert (alone.used, alone.stats.budget_stranded_by_cap) == (40, 60)
    check_accounting(r, len(pool))


def test_span_larger_than_remaining_but_not_budget_is_budget_full_not_unpackable() -> None:
    pool = [cand("a", 0, 10, tokens=70, weight=7.0), cand("b", 0, 10, tokens=70, weight=6.0)]
    r = select(pool, 100, 1.0, 0.5)
    assert (r.stats.skipped_unpackable, r.stats.skipped_budget_full) == (0, 1)
    pool = [cand("a", 0, 10, tokens=70, weight=7.0), cand("b", 0, 10, tokens=101, weight=60.0)]
    r = select(pool, 100, 1.0, 0.5)
    assert (r.stats.skipped_unpackable, r.stats.skipped_budget_full) == (1, 0)


def test_exact_fit_packs() -> None:
    pool = [cand("a", 0, 10, tokens=40, weight=4.0), cand("b", 0, 10, tokens=60, weight=3.0)]
    r = select(pool, 100, 0.6, 0.5)
    assert r.used == 100  # 40 + 60 == B, and 60 == cap: both boundaries are inclusive
    assert r.stats.cap_tokens == 60
    assert r.stats.selected_spans == 2


def test_budget_zero() -> None:
    # Nothing with tokens packs into B = 0; zero-token spans still do (0 <= 0, cap 0 + 0 <= 0).
    pool = [cand("a", 0, 10, tokens=1, weight=1.0), cand("b", 0, 10, tokens=0, weight=0.5)]
    r = select(pool, 0, 0.4, 0.5, explain=True)
    assert r.used == 0
    assert r.stats.cap_tokens == 0
    assert fates(r) == {("a", 1, 0, 10): F.UNPACKABLE, ("b", 1, 0, 10): F.PACKED}
    assert r.stats.budget_stranded_by_cap == 0


def test_empty_pool() -> None:
    r = select([], 6000, 0.4, 0.5, explain=True)
    assert r.selected == ()
    assert r.used == 0
    assert r.explanations == ()
    assert r.stats.pool_spans == 0
    assert r.stats.cap_tokens == 2400


# ---- per-source cap and stranded budget ----------------------------------------------------


def test_cap_is_floor_of_fraction_times_budget() -> None:
    for budget, frac, cap in [(6000, 0.4, 2400), (101, 0.4, 40), (7, 0.5, 3), (3, 0.3, 0)]:
        assert select([], budget, frac, 0.5).stats.cap_tokens == cap
    # 0.1 x 30 is 3.0000000000000004 in doubles: floor gives 3, as the seed's f64 rule does.
    assert select([], 30, 0.1, 0.5).stats.cap_tokens == 3


def test_cap_of_huge_budgets_follows_doubles_and_saturates_at_u64() -> None:
    # Above 2**53 the budget is rounded to a double before the product, as the seed's rule does.
    assert select([], 2**53 + 1, 1.0, 0.5).stats.cap_tokens == 2**53
    # 2**64 - 1 rounds to 2.0**64: the cap saturates at the largest u64 instead of overflowing.
    r = select([cand("a", 0, 1, tokens=2**64 - 1, weight=1.0)], 2**64 - 1, 1.0, 0.5)
    assert r.stats.cap_tokens == 2**64 - 1
    assert r.used == 2**64 - 1


def test_stranded_is_zero_when_the_pool_just_runs_out() -> None:
    pool = [cand("s1", 0, 100, tokens=30, weight=1.0), cand("s2", 0, 100, tokens=20, weight=1.0)]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 50
    assert r.stats.cap_skipped == 0
    assert r.stats.budget_stranded_by_cap == 0


def test_cap_refusing_a_span_that_would_not_fit_anyway_strands_nothing() -> None:
    # B = 100, cap 40. x (s1, 40) and y (s2, 40) pack: used 80. z (s1, 30) would reach 110 > B:
    # the budget check comes first, so it is budget full, not cap blocked; 20 tokens unused.
    pool = [
        cand("s1", 0, 100, tokens=40, weight=4.0),
        cand("s2", 0, 100, tokens=40, weight=3.6),
        cand("s1", 200, 300, tokens=30, weight=2.4),
    ]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 80
    assert (r.stats.skipped_budget_full, r.stats.cap_skipped) == (1, 0)
    assert r.stats.budget_stranded_by_cap == 0


def test_cap_refusing_a_fitting_span_strands_the_final_unused_budget() -> None:
    # As above but z has 15 tokens: 95 <= B fits, s1 would reach 55 > 40: cap blocked.
    pool = [
        cand("s1", 0, 100, tokens=40, weight=4.0),
        cand("s2", 0, 100, tokens=40, weight=3.6),
        cand("s1", 200, 300, tokens=15, weight=1.2),
    ]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 80
    assert r.stats.cap_skipped == 1
    assert r.stats.budget_stranded_by_cap == 20


def test_stranded_is_the_final_unused_budget_even_if_later_spans_fill_it() -> None:
    # z is cap blocked while it fits, then w (s3, 20) fills B exactly: nothing left to strand.
    pool = [
        cand("s1", 0, 100, tokens=40, weight=4.0),
        cand("s2", 0, 100, tokens=40, weight=3.6),
        cand("s1", 200, 300, tokens=15, weight=1.2),
        cand("s3", 0, 100, tokens=20, weight=0.2),
    ]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 100
    assert r.stats.cap_skipped == 1
    assert r.stats.budget_stranded_by_cap == 0
    # w only 10 tokens: 10 remain unused and are reported as stranded.
    pool[3] = cand("s3", 0, 100, tokens=10, weight=0.1)
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 90
    assert r.stats.budget_stranded_by_cap == 10


def test_source_dominated_pool_never_relaxes_the_cap() -> None:
    # One source, ten 10-token spans, B = 100, cap 40: four pack, six are refused, 60 stranded.
    pool = [cand("only", i * 100, i * 100 + 50, tokens=10, weight=1.0) for i in range(10)]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 40
    assert r.stats.cap_skipped == 6
    assert r.stats.budget_stranded_by_cap == 60
    # Ties in density break by coordinates: the four lowest offsets pack.
    assert [s.span.start for s in r.selected] == [0, 100, 200, 300]


def test_cap_is_per_source_id_across_versions() -> None:
    # s1 at tx 1 and s1 at tx 2 share one cap of 40 tokens.
    pool = [
        cand("s1", 0, 10, tokens=30, weight=3.0, tx=1),
        cand("s1", 0, 10, tokens=30, weight=2.0, tx=2),
    ]
    r = select(pool, 100, 0.4, 0.5)
    assert r.used == 30
    assert r.stats.cap_skipped == 1
    assert r.stats.deduped == 0  # different versions never dedup each other


def test_span_larger_than_cap_is_cap_blocked_when_it_fits_the_budget() -> None:
    pool = [cand("s1", 0, 10, tokens=50, weight=5.0)]
    r = select(pool, 100, 0.4, 0.5, explain=True)
    assert fates(r) == {("s1", 1, 0, 10): F.CAP_BLOCKED}
    assert r.stats.budget_stranded_by_cap == 100


# ---- dedup ---------------------------------------------------------------------------------


def test_dedup_keeps_the_heavier_span() -> None:
    light = cand("s", 0, 100, tokens=10, weight=0.5)
    heavy = cand("s", 10, 110, tokens=10, weight=0.9)  # overlap 90 / 100 = 0.9 > 0.5
    r = select([light, heavy], 1000, 1.0, 0.5, explain=True)
    assert coords(r.selected) == [("s", 1, 10, 110)]
    assert r.stats.deduped == 1
    by = {e.candidate.span.key: e.deduped_by for e in r.explanations}
    assert by == {("s", 1, 0, 100): heavy.span, ("s", 1, 10, 110): None}


def test_dedup_threshold_is_strict() -> None:
    # Overlap exactly 0.5 is not above dedup_overlap 0.5.
    a = cand("s", 0, 100, tokens=10, weight=0.9)
    b = cand("s", 50, 150, tokens=10, weight=0.8)
    assert select([a, b], 1000, 1.0, 0.5).stats.deduped == 0
    assert select([a, b], 1000, 1.0, 0.49).stats.deduped == 1


def test_overlap_is_relative_to_the_shorter_span() -> None:
    # 50 bytes shared; the shorter span is 100 long: 0.5, not 50 / 1000.
    a = cand("s", 0, 1000, tokens=10, weight=0.9)
    b = cand("s", 950, 1050, tokens=10, weight=0.8)
    assert select([a, b], 1000, 1.0, 0.5).stats.deduped == 0
    assert select([a, b], 1000, 1.0, 0.4999).stats.deduped == 1


def test_touching_spans_do_not_overlap() -> None:
    a = cand("s", 0, 100, tokens=10, weight=0.9)
    b = cand("s", 100, 200, tokens=10, weight=0.8)
    assert select([a, b], 1000, 1.0, 0.0).stats.deduped == 0


def test_dedup_overlap_zero_drops_any_overlap() -> None:
    a = cand("s", 0, 100, tokens=10, weight=0.9)
    b = cand("s", 99, 200, tokens=10, weight=0.8)
    assert select([a, b], 1000, 1.0, 0.0).stats.deduped == 1


def test_containment_is_a_duplicate_even_at_overlap_one() -> None:
    outer = cand("s", 0, 100, tokens=25, weight=0.5)
    inner = cand("s", 20, 40, tokens=5, weight=0.9)
    r = select([outer, inner], 1000, 1.0, 1.0, explain=True)
    # The heavier inner span is kept; the lighter container is the duplicate.
    assert coords(r.selected) == [("s", 1, 20, 40)]
    assert fates(r)[("s", 1, 0, 100)] is F.DEDUPED
    # A near-total partial overlap is not a duplicate at 1.0.
    near = cand("s", 1, 101, tokens=25, weight=0.4)
    r = select([outer, near], 1000, 1.0, 1.0)
    assert r.stats.deduped == 0
    assert r.stats.selected_spans == 2


def test_identical_coordinates_keep_the_max_weight() -> None:
    a = cand("s", 0, 100, tokens=10, weight=0.4)
    b = cand("s", 0, 100, tokens=10, weight=0.6)
    for pool in ([a, b], [b, a]):
        r = select(pool, 1000, 1.0, 1.0, explain=True)
        assert [c.weight for c in r.selected] == [0.6]
        dup = [e for e in r.explanations if e.fate is F.DEDUPED]
        assert [(e.candidate.weight, e.deduped_by) for e in dup] == [(0.4, b.span)]


def test_different_source_versions_never_dedup_each_other() -> None:
    pool = [
        cand("s", 0, 100, tokens=10, weight=0.9, tx=1),
        cand("s", 0, 100, tokens=10, weight=0.8, tx=2),
        cand("s", 10, 90, tokens=8, weight=0.7, tx=-3),
        cand("t", 0, 100, tokens=10, weight=0.6, tx=1),  # other source, same offsets
    ]
    r = select(pool, 1000, 1.0, 0.0)
    assert r.stats.deduped == 0
    assert r.stats.selected_spans == 4


def test_dedup_compares_only_with_kept_spans() -> None:
    # x [0,100) 0.9 kept; y [40,140) 0.8 overlaps x by 0.6: deduped; z [90,190) 0.7 overlaps x
    # by 0.1 and the dropped y by 0.5 -- only x counts, so z survives.
    pool = [
        cand("s", 0, 100, tokens=10, weight=0.9),
        cand("s", 40, 140, tokens=10, weight=0.8),
        cand("s", 90, 190, tokens=10, weight=0.7),
    ]
    r = select(pool, 1000, 1.0, 0.45)
    assert coords(r.selected) == [("s", 1, 0, 100), ("s", 1, 90, 190)]
    assert r.stats.deduped == 1


def test_deduped_by_names_the_heaviest_overlapping_kept_span() -> None:
    x = cand("s", 0, 100, tokens=10, weight=0.9)
    w = cand("s", 100, 200, tokens=10, weight=0.8)
    v = cand("s", 50, 150, tokens=10, weight=0.1)  # overlaps both by 0.5 > 0.4
    r = select([w, v, x], 1000, 1.0, 0.4, explain=True)
    by = {e.candidate.span.key: e.deduped_by for e in r.explanations}
    assert by[v.span.key] == x.span


def test_dedup_weight_tie_breaks_by_coordinates() -> None:
    a = cand("s", 0, 100, tokens=10, weight=0.5)
    b = cand("s", 10, 110, tokens=10, weight=0.5)
    for pool in ([a, b], [b, a]):
        r = select(pool, 1000, 1.0, 0.5)
        assert coords(r.selected) == [("s", 1, 0, 100)]


def test_long_span_found_as_overlap_behind_many_short_ones() -> None:
    # A long kept span starting far before the candidate must still be found.
    long_ = cand("s", 0, 10_000, tokens=100, weight=0.9)
    shorts = [cand("s", 20_000 + i * 10, 20_005 + i * 10, tokens=1, weight=0.8) for i in range(50)]
    late = cand("s", 9_000, 9_100, tokens=10, weight=0.1)  # contained in the long span
    r = select([*shorts, late, long_], 100_000, 1.0, 0.5)
    assert r.stats.deduped == 1
    assert late.span not in [s.span for s in r.selected]


# ---- density -------------------------------------------------------------------------------


def test_density_floors_tokens_at_one() -> None:
    assert density(cand("a", 0, 1, tokens=0, weight=0.3)) == 0.3
    assert density(cand("a", 0, 1, tokens=1, weight=0.3)) == 0.3
    assert density(cand("a", 0, 1, tokens=4, weight=0.3)) == 0.075
    assert density(cand("a", 0, 1, tokens=0, weight=0.0)) == 0.0


def test_zero_token_span_does_not_jump_the_density_order() -> None:
    # With tokens 0 treated as 1, z (0.3) ranks below p (0.5) and q (0.35); were its density
    # infinite it would come first. Observable through the cap: cap = 2 tokens, one source.
    # p packs (1 token), q (2 tokens) would reach 3 > 2: cap blocked; z packs (0 tokens).
    pool = [
        cand("s", 0, 10, tokens=0, weight=0.3),
        cand("s", 20, 30, tokens=1, weight=0.5),
        cand("s", 40, 50, tokens=2, weight=0.7),
    ]
    r = select(pool, 5, 0.5, 0.5, explain=True)
    dens = {e.candidate.span.start: e.density for e in r.explanations}
    assert dens == {0: 0.3, 20: 0.5, 40: 0.35}
    assert all(math.isfinite(d) for d in dens.values())
    assert fates(r) == {
        ("s", 1, 0, 10): F.PACKED,
        ("s", 1, 20, 30): F.PACKED,
        ("s", 1, 40, 50): F.CAP_BLOCKED,
    }


def test_density_not_weight_orders_packing() -> None:
    # heavy-but-long h (1.0 / 100 = 0.01) loses to light-but-short l (0.5 / 10 = 0.05).
    pool = [cand("h", 0, 10, tokens=100, weight=1.0), cand("l", 0, 10, tokens=10, weight=0.5)]
    r = select(pool, 105, 1.0, 0.5, explain=True)
    assert fates(r) == {("h", 1, 0, 10): F.BUDGET_FULL, ("l", 1, 0, 10): F.PACKED}


def test_density_tie_breaks_by_coordinates() -> None:
    pool = [cand(src, 0, 10, tokens=10, weight=1.0) for src in ("c", "a", "b")]
    r = select(pool, 20, 1.0, 0.5)
    assert coords(r.selected) == [("a", 1, 0, 10), ("b", 1, 0, 10)]


# ---- output order and explanations ---------------------------------------------------------


def test_output_is_in_canonical_coordinate_order() -> None:
    pool = [
        cand("b", 0, 10, tokens=1, weight=0.9),
        cand("a", 50, 60, tokens=1, weight=0.8, tx=2),
        cand("a", 50, 60, tokens=1, weight=0.7, tx=-7),
        cand("a", 5, 60, tokens=1, weight=0.1, tx=2, kind="heading"),
        cand("B", 0, 10, tokens=1, weight=0.6),
        cand("東", 0, 10, tokens=1, weight=0.95),
        cand("ä", 0, 10, tokens=1, weight=0.2),
    ]
    r = select(pool, 100, 1.0, 1.0, explain=True)
    expected = [
        ("B", 1, 0, 10),  # code point order: "B" < "a" < "b" < "ä" < "東"
        ("a", -7, 50, 60),
        ("a", 2, 5, 60),
        ("a", 2, 50, 60),
        ("b", 1, 0, 10),
        ("ä", 1, 0, 10),
        ("東", 1, 0, 10),
    ]
    # ("a", 2, 50, 60) lies inside ("a", 2, 5, 60) but is heavier: the container is dropped.
    expected_selected = [k for k in expected if k != ("a", 2, 5, 60)]
    assert coords(r.selected) == expected_selected
    assert [e.candidate.span.key for e in r.explanations] == expected
    # Code point order is also UTF-8 byte order, which other languages compare by.
    ids = [k[0] for k in expected]
    assert ids == sorted(ids, key=lambda x: x.encode("utf-8"))


def test_explain_lists_every_fate() -> None:
    pool = [
        cand("a", 0, 100, tokens=10, weight=0.9),  # packed
        cand("a", 10, 100, tokens=9, weight=0.5),  # contained in a[0,100): deduped
        cand("b", 0, 100, tokens=500, weight=5.0),  # unpackable (B = 50)
        cand("a", 200, 300, tokens=25, weight=1.0),  # cap 20: cap blocked
        cand("c", 0, 100, tokens=15, weight=0.6),  # packed, used 25
        cand("d", 0, 100, tokens=30, weight=0.3),  # 55 > 50: budget full
    ]
    r = select(pool, 50, 0.4, 0.5, explain=True)
    got = [(e.candidate.span.key, e.fate, e.deduped_by) for e in r.explanations]
    assert got == [
        (("a", 1, 0, 100), F.PACKED, None),
        (("a", 1, 10, 100), F.DEDUPED, SpanRef("a", 1, 0, 100)),
        (("a", 1, 200, 300), F.CAP_BLOCKED, None),
        (("b", 1, 0, 100), F.UNPACKABLE, None),
        (("c", 1, 0, 100), F.PACKED, None),
        (("d", 1, 0, 100), F.BUDGET_FULL, None),
    ]
    assert [e.density for e in r.explanations] == [0.09, 0.5 / 9, 0.04, 0.01, 0.04, 0.01]
    assert r.explanations[1].candidate is pool[1]
    assert r.used == 25
    assert r.stats.budget_stranded_by_cap == 25
    check_accounting(r, len(pool))


def test_no_explanations_unless_asked() -> None:
    r = select([cand("a", 0, 10, tokens=1, weight=1.0)], 10, 1.0, 0.5)
    assert r.explanations == ()


def test_selected_spans_are_the_pool_objects_unchanged() -> None:
    c = cand("a", 0, 10, tokens=3, weight=0.25, kind="code", span_class=SpanClass.CACHE, text="x")
    r = select([c], 10, 1.0, 0.5)
    assert r.selected[0] is c


# ---- determinism regressions ---------------------------------------------------------------


def test_signed_zero_weights_do_not_depend_on_pool_order() -> None:
    pos = cand("s", 0, 10, tokens=5, weight=0.0)
    neg = cand("s", 0, 10, tokens=5, weight=-0.0)
    hashes = set()
    for pool in ([pos, neg], [neg, pos]):
        r = select(pool, 100, 1.0, 0.5)
        assert math.copysign(1.0, r.selected[0].weight) == 1.0  # +0.0 ranks first
        hashes.add(plan_hash("v1", 100, r.used, r.selected))
    assert len(hashes) == 1


def test_explanations_do_not_depend_on_pool_order() -> None:
    pool = [
        cand("s", 0, 10, tokens=5, weight=0.5),
        cand("s", 0, 10, tokens=5, weight=0.7),
        cand("s", 0, 10, tokens=5, weight=0.7, kind="code"),
        cand("t", 0, 10, tokens=5, weight=0.0),
        cand("t", 0, 10, tokens=5, weight=-0.0),
    ]
    rnd = random.Random(7)
    reference = select(pool, 100, 1.0, 0.5, explain=True).explanations
    for _ in range(20):
        shuffled = pool[:]
        rnd.shuffle(shuffled)
        got = select(shuffled, 100, 1.0, 0.5, explain=True).explanations
        assert [(e.candidate, e.fate, e.deduped_by) for e in got] == [
            (e.candidate, e.fate, e.deduped_by) for e in reference
        ]
        assert [math.copysign(1.0, e.candidate.weight) for e in got] == [
            math.copysign(1.0, e.candidate.weight) for e in reference
        ]


# ---- invalid input -------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bad", "field", "fragment"),
    [
        (cand("a", 0, 10, tokens=1, weight=math.nan), "pool[1].weight", "got nan"),
        (cand("a", 0, 10, tokens=1, weight=math.inf), "pool[1].weight", "got inf"),
        (cand("a", 0, 10, tokens=1, weight=-math.inf), "pool[1].weight", "got -inf"),
        (cand("a", 0, 10, tokens=1, weight=-0.5), "pool[1].weight", "got -0.5"),
        (cand("a", 0, 10, tokens=1, weight=-5e-324), "pool[1].weight", ">= 0"),
        (cand("a", 0, 10, tokens=1, weight=True), "pool[1].weight", "got True"),
        (cand("a", 10, 10, tokens=1, weight=0.5), "pool[1].span.end", "empty span"),
        (cand("a", 10, 9, tokens=1, weight=0.5), "pool[1].span.end", "got 9"),
        (cand("a", -1, 9, tokens=1, weight=0.5), "pool[1].span.start", "got -1"),
        (cand("a", 0, 10, tokens=-1, weight=0.5), "pool[1].tokens", "got -1"),
    ],
)
def test_invalid_candidate_is_rejected_with_its_index(
    bad: PlannedSpan, field: str, fragment: str
) -> None:
    good = cand("a", 100, 200, tokens=1, weight=0.5)
    with pytest.raises(InvalidRequest) as info:
        select([good, bad, good], 100, 0.4, 0.5)
    assert info.value.field == field
    assert fragment in info.value.reason


@pytest.mark.parametrize(
    ("budget", "frac", "overlap", "field"),
    [
        (-1, 0.4, 0.5, "budget"),
        (10.0, 0.4, 0.5, "budget"),
        (True, 0.4, 0.5, "budget"),
        (10, 0.0, 0.5, "max_frac_per_source"),
        (10, 1.01, 0.5, "max_frac_per_source"),
        (10, math.nan, 0.5, "max_frac_per_source"),
        (10, 0.4, -0.01, "dedup_overlap"),
        (10, 0.4, 1.5, "dedup_overlap"),
    ],
)
def test_invalid_settings_are_rejected(
    budget: int, frac: float, overlap: float, field: str
) -> None:
    with pytest.raises(InvalidRequest) as info:
        select([], budget, frac, overlap)
    assert info.value.field == field
