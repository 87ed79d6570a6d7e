"""Phase B against a literal reference (seed "Phase B: dedup, then greedy packing by density"
and "The hard per-source cap and stranded budget").

``reference_select`` below transcribes the rules as stated, one candidate at a time, with no
index, no pairs and no partial ordering. ``select`` must agree with it on everything observable:
the selected spans (the pool's own objects, in canonical order), ``used``, every counter, every
explanation (fate, density bit pattern, the ``deduped_by`` span object) and the plan hash.

Pools are drawn to be hostile: few sources, versions and offsets, so spans overlap and nest;
weights from a handful of values including 0.0 and -0.0 (and a few integers), so weights and
densities tie; zero-token spans; exact copies of a candidate, the same object twice, and the
same coordinates under other weights, kinds or token counts.

Two module constants steer ``select`` between equivalent paths, and the tests set both so that
small pools take every path: the size of the densest part ordered first for packing (at 1 or
3, packing takes several rounds), and how crowded a source may be before it is deduped one
candidate at a time instead of by pairs (at 0 every source with an overlap is, at 1 some are).
"""

from __future__ import annotations

import math
import random
import struct
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from itertools import pairwise

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core import select as select_module
from planner_svc.core.model import (
    CandidateFate,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)
from planner_svc.core.plan_hash import plan_hash
from planner_svc.core.select import SelectionResult, select

F = CandidateFate
U64_MAX = 2**64 - 1

# ---- the reference ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Fate:
    fate: CandidateFate
    deduped_by: SpanRef | None = None


@dataclass(frozen=True)
class Reference:
    selected: tuple[PlannedSpan, ...]
    used: int
    stats: PlanStats
    fates: list[tuple[PlannedSpan, Fate, float]]  # canonical order: candidate, fate, density


def weight_desc(x: float) -> tuple[float, float]:
    """Descending order of doubles, +0.0 before -0.0 (the IEEE-754 total order reversed)."""
    return (-x, -math.copysign(1.0, x))


def tie_break(c: PlannedSpan) -> tuple[object, ...]:
    """Coordinates, then every other field, the weight last (descending)."""
    r = c.span
    return (r.source_id, r.source_version_tx, r.start, r.end, c.kind, int(c.span_class),
            c.tokens, c.text, weight_desc(c.weight))  # fmt: skip


def density_of(c: PlannedSpan) -> float:
    return c.weight / max(1, c.tokens)


def is_duplicate(x: SpanRef, y: SpanRef, threshold: float) -> bool:
    """Same version, and the overlap over the shorter span is above the threshold or whole."""
    if (x.source_id, x.source_version_tx) != (y.source_id, y.source_version_tx):
        return False
    intersection = min(x.end, y.end) - max(x.start, y.start)
    if intersection <= 0:
        return False
    shorter = min(x.end - x.start, y.end - y.start)
    return intersection / shorter > threshold or intersection == shorter


def reference_select(
    pool: Sequence[PlannedSpan], budget: int, max_frac: float, dedup_overlap: float
) -> Reference:
    indices = range(len(pool))  # sorts are stable: identical candidates keep pool order

    # 1. Dedup: heaviest first; a candidate duplicating a kept span of its version is dropped,
    # by the heaviest such span (the first kept).
    fate: dict[int, Fate] = {}
    kept: list[int] = []
    kept_in_version: dict[tuple[str, int], list[int]] = {}
    for i in sorted(indices, key=lambda i: (weight_desc(pool[i].weight), tie_break(pool[i]))):
        version = (pool[i].span.source_id, pool[i].span.source_version_tx)
        same_version = kept_in_version.setdefault(version, [])
        for j in same_version:
            if is_duplicate(pool[i].span, pool[j].span, dedup_overlap):
                fate[i] = Fate(F.DEDUPED, pool[j].span)
                break
        else:
            kept.append(i)
            same_version.append(i)

    # 2. Packing by density, descending; every candidate is looked at, in order.
    cap = min(math.floor(max_frac * budget), U64_MAX)
    used = 0
    spent: Counter[str] = Counter()
    cap_refused_fitting = False
    for i in sorted(kept, key=lambda i: (weight_desc(density_of(pool[i])), tie_break(pool[i]))):
        c = pool[i]
        if c.tokens > budget:
            fate[i] = Fate(F.UNPACKABLE)
        elif used + c.tokens > budget:
            fate[i] = Fate(F.BUDGET_FULL)
        elif spent[c.span.source_id] + c.tokens > cap:
            fate[i] = Fate(F.CAP_BLOCKED)
            cap_refused_fitting = True
        else:
            fate[i] = Fate(F.PACKED)
            used += c.tokens
            spent[c.span.source_id] += c.tokens

    counts = Counter(f.fate for f in fate.values())
    stats = PlanStats(
        pool_spans=len(pool),
        selected_spans=counts[F.PACKED],
        deduped=counts[F.DEDUPED],
        skipped_unpackable=counts[F.UNPACKABLE],
        skipped_budget_full=counts[F.BUDGET_FULL],
        cap_skipped=counts[F.CAP_BLOCKED],
        budget_stranded_by_cap=budget - used if cap_refused_fitting else 0,
        cap_tokens=cap,
    )
    canonical = sorted(indices, key=lambda i: tie_break(pool[i]))
    selected = tuple(pool[i] for i in canonical if fate[i].fate is F.PACKED)
    fates = [(pool[i], fate[i], density_of(pool[i])) for i in canonical]
    return Reference(selected=selected, used=used, stats=stats, fates=fates)


# ---- comparison ------------------------------------------------------------------------------


def bits(x: float) -> bytes:
    return struct.pack(">d", x)


def assert_matches(got: SelectionResult, want: Reference, budget: int, *, explained: bool) -> None:
    assert [id(c) for c in got.selected] == [id(c) for c in want.selected]
    assert got.used == want.used
    assert got.stats == want.stats
    assert plan_hash("v1", budget, got.used, got.selected) == plan_hash(
        "v1", budget, want.used, want.selected
    )
    if not explained:
        assert got.explanations == ()
        return
    assert len(got.explanations) == len(want.fates)
    for e, (candidate, fate, density) in zip(got.explanations, want.fates, strict=True):
        assert e.candidate is candidate
        assert e.fate is fate.fate, (candidate, e.fate, fate.fate)
        assert e.deduped_by is fate.deduped_by
        assert bits(e.density) == bits(density)


Tuning = tuple[int | None, int | None]
"""(size of the first packing part, crowding limit); None keeps the shipped value."""


@contextmanager
def tuned(tuning: Tuning) -> Iterator[None]:
    """Run ``select`` with its packing part size and crowding limit set to ``tuning``."""
    saved = (select_module._TOP, select_module._CROWDED)
    part, crowded = tuning
    if part is not None:
        select_module._TOP = part
    if crowded is not None:
        select_module._CROWDED = crowded
    try:
        yield
    finally:
        select_module._TOP, select_module._CROWDED = saved


def check(
    pool: Sequence[PlannedSpan],
    budget: int,
    max_frac: float,
    dedup_overlap: float,
    tuning: Tuning,
) -> None:
    want = reference_select(pool, budget, max_frac, dedup_overlap)
    with tuned(tuning):
        for explained in (False, True):
            got = select(pool, budget, max_frac, dedup_overlap, explain=explained)
            assert_matches(got, want, budget, explained=explained)


# ---- hostile pools ---------------------------------------------------------------------------

weights = st.one_of(
    st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 5e-324]),
    st.floats(min_value=0.0, max_value=2.0),
    st.sampled_from([0, 1, 2]),  # integer weights are valid too
)
tokens = st.one_of(st.sampled_from([0, 0, 1, 2, 10]), st.integers(0, 120))


@st.composite
def candidates(draw: st.DrawFn) -> PlannedSpan:
    start = draw(st.integers(0, 90))
    return PlannedSpan(
        span=SpanRef(
            draw(st.sampled_from(["a", "b", "ä"])),
            draw(st.sampled_from([1, 2, -(2**63)])),
            start,
            start + draw(st.integers(1, 50)),
        ),
        kind=draw(st.sampled_from(["paragraph", "heading"])),
        span_class=draw(st.sampled_from([SpanClass.TRUTH, SpanClass.CACHE])),
        weight=draw(weights),
        tokens=draw(tokens),
        text=draw(st.sampled_from(["", "x"])),
    )


@st.composite
def pools(draw: st.DrawFn, max_size: int = 40) -> list[PlannedSpan]:
    pool = draw(st.lists(candidates(), max_size=max_size))
    for _ in range(draw(st.integers(0, 8)) if pool else 0):
        original = pool[draw(st.integers(0, len(pool) - 1))]
        how = draw(st.sampled_from(["same object", "copy", "other weight", "other fields"]))
        if how == "same object":
            twin = original
        elif how == "copy":
            twin = PlannedSpan(
                span=SpanRef(*original.span.key),
                kind=original.kind,
                span_class=original.span_class,
                weight=original.weight,
                tokens=original.tokens,
                text=original.text,
            )
        elif how == "other weight":
            twin = PlannedSpan(
                span=original.span,
                kind=original.kind,
                span_class=original.span_class,
                weight=draw(weights),
                tokens=original.tokens,
                text=original.text,
            )
        else:
            twin = PlannedSpan(
                span=original.span,
                kind=draw(st.sampled_from(["paragraph", "code"])),
                span_class=original.span_class,
                weight=original.weight,
                tokens=draw(tokens),
                text=draw(st.sampled_from(["", "y"])),
            )
        pool.insert(draw(st.integers(0, len(pool))), twin)
    return pool


budgets = st.one_of(st.integers(0, 300), st.sampled_from([0, 1, 2**40, U64_MAX]))
fractions = st.one_of(st.sampled_from([1.0, 0.5, 0.4, 0.1, 1]), st.floats(1e-3, 1.0))
overlaps = st.one_of(st.sampled_from([0.0, 0.5, 1.0, 0, 1]), st.floats(0.0, 1.0))
TUNINGS: list[Tuning] = [(None, None), (1, None), (3, 1), (None, 0), (1, 0)]
tunings = st.sampled_from(TUNINGS)


@settings(max_examples=400, deadline=None)
@given(tunings, pools(), budgets, fractions, overlaps)
def test_matches_the_reference(
    tuning: Tuning, pool: list[PlannedSpan], budget: int, max_frac: float, overlap: float
) -> None:
    check(pool, budget, max_frac, overlap, tuning)


@settings(max_examples=300, deadline=None)
@given(tunings, st.data(), pools(), budgets, fractions, overlaps)
def test_matches_the_reference_in_any_pool_order(
    tuning: Tuning,
    data: st.DataObject,
    pool: list[PlannedSpan],
    budget: int,
    max_frac: float,
    overlap: float,
) -> None:
    shuffled = data.draw(st.permutations(pool))
    check(shuffled, budget, max_frac, overlap, tuning)


@settings(max_examples=60, deadline=None)
@given(tunings, pools(max_size=300), st.integers(0, 3000), fractions, overlaps)
def test_matches_the_reference_on_larger_pools(
    tuning: Tuning, pool: list[PlannedSpan], budget: int, max_frac: float, overlap: float
) -> None:
    check(pool, budget, max_frac, overlap, tuning)


@settings(max_examples=200, deadline=None)
@given(tunings, pools(), budgets, fractions, overlaps)
def test_all_equal_weights_match_the_reference(
    tuning: Tuning, pool: list[PlannedSpan], budget: int, max_frac: float, overlap: float
) -> None:
    # One weight for every candidate: dedup order rests on the coordinates alone.
    same = [
        PlannedSpan(span=c.span, kind=c.kind, span_class=c.span_class, weight=0.5,
                    tokens=c.tokens, text=c.text)
        for c in pool
    ]  # fmt: skip
    check(same, budget, max_frac, overlap, tuning)


@settings(max_examples=200, deadline=None)
@given(tunings, st.data(), pools(), budgets, fractions, overlaps)
def test_signed_zero_weights_match_the_reference(
    tuning: Tuning,
    data: st.DataObject,
    pool: list[PlannedSpan],
    budget: int,
    max_frac: float,
    overlap: float,
) -> None:
    # Weights 0.0 and -0.0 only (and one other value): equal as numbers, ordered +0.0 first.
    zeros = [
        PlannedSpan(span=c.span, kind=c.kind, span_class=c.span_class,
                    weight=data.draw(st.sampled_from([0.0, -0.0, -0.0, 0.5])),
                    tokens=c.tokens, text=c.text)
        for c in pool
    ]  # fmt: skip
    check(zeros, budget, max_frac, overlap, tuning)


@st.composite
def pools_with_few_ties(draw: st.DrawFn) -> list[PlannedSpan]:
    """Distinct weights, then a few candidates given another's weight: ties that touch only
    some pairs, or only two spans that drop the same lighter one."""
    pool = draw(st.lists(candidates(), max_size=30))
    distinct = draw(
        st.lists(st.floats(0.0, 1.0), min_size=len(pool), max_size=len(pool), unique=True)
    )
    pool = [
        PlannedSpan(span=c.span, kind=c.kind, span_class=c.span_class, weight=w,
                    tokens=c.tokens, text=c.text)
        for c, w in zip(pool, distinct, strict=True)
    ]  # fmt: skip
    for _ in range(draw(st.integers(0, 3)) if len(pool) > 1 else 0):
        k, m = draw(st.integers(0, len(pool) - 1)), draw(st.integers(0, len(pool) - 1))
        c = pool[k]
        pool[k] = PlannedSpan(span=c.span, kind=c.kind, span_class=c.span_class,
                              weight=pool[m].weight, tokens=c.tokens, text=c.text)  # fmt: skip
    return pool


@settings(max_examples=400, deadline=None)
@given(tunings, pools_with_few_ties(), budgets, fractions, overlaps)
def test_sparse_weight_ties_match_the_reference(
    tuning: Tuning, pool: list[PlannedSpan], budget: int, max_frac: float, overlap: float
) -> None:
    check(pool, budget, max_frac, overlap, tuning)


def test_equally_heavy_kept_spans_drop_a_lighter_one_by_coordinates() -> None:
    # l overlaps h1 and h2 (threshold 0), which do not overlap each other and weigh the same:
    # both are kept, and the first in coordinate order, h1, is the one that drops l.
    h1 = PlannedSpan(span=SpanRef("s", 1, 0, 20), kind="paragraph", span_class=SpanClass.TRUTH,
                     weight=0.75, tokens=5)  # fmt: skip
    h2 = PlannedSpan(span=SpanRef("s", 1, 20, 40), kind="paragraph", span_class=SpanClass.TRUTH,
                     weight=0.75, tokens=5)  # fmt: skip
    low = PlannedSpan(span=SpanRef("s", 1, 10, 30), kind="paragraph",
                      span_class=SpanClass.TRUTH, weight=0.5, tokens=5)  # fmt: skip
    for pool in ([h1, low, h2], [h2, low, h1], [low, h2, h1]):
        check(pool, 100, 1.0, 0.0, (None, None))
        explained = select(pool, 100, 1.0, 0.0, explain=True).explanations
        assert [e.deduped_by for e in explained] == [None, h1.span, None]


def test_a_pile_of_overlapping_spans_is_set_aside_not_paired() -> None:
    # 400 spans over one stretch of one version meet about 200 others each: pairing them would
    # take ~80,000 pair tests, so the sweep gives the source up for one-by-one dedup.
    rnd = random.Random(3)
    pool = [
        PlannedSpan(span=SpanRef("s", 1, rnd.randrange(0, 50), 1000 + rnd.randrange(0, 50)),
                    kind="paragraph", span_class=SpanClass.TRUTH, weight=rnd.random(), tokens=9)
        for _ in range(400)
    ]  # fmt: skip
    group = sorted(range(len(pool)), key=lambda i: pool[i].span.start)
    pairs = select_module._duplicate_pairs(
        [group],
        [c.span.start for c in pool],
        [c.span.end for c in pool],
        [c.span.source_version_tx for c in pool],
        [c.weight for c in pool],
        0.5,
    )
    assert pairs is not None
    assert pairs.crowded == [group]
    assert pairs.lighter == pairs.heavier == pairs.light_h == []
    check(pool, 100, 0.4, 0.5, (None, None))


def document_pool(rnd: random.Random, size: int) -> list[PlannedSpan]:
    """Sources of consecutive spans plus windows straddling them, some with two versions."""
    pool: list[PlannedSpan] = []
    source = 0
    while len(pool) < size:
        versions = [100 + source] if source % 4 else [100 + source, 200 + source]
        cursor = 0
        bounds: list[tuple[int, int]] = []
        for _ in range(rnd.randrange(1, 16)):
            length = rnd.randrange(1, 60)
            bounds.append((cursor, cursor + length))
            cursor += length
        for _ in range(rnd.randrange(0, 8)):
            start = rnd.randrange(0, cursor)
            bounds.append((start, start + rnd.randrange(1, 90)))
        for start, end in bounds:
            pool.append(
                PlannedSpan(
                    span=SpanRef(f"s{source:04d}", rnd.choice(versions), start, end),
                    kind="paragraph",
                    span_class=SpanClass.TRUTH,
                    weight=rnd.choice([rnd.random(), round(rnd.random(), 1), 0.0]),
                    tokens=rnd.choice([(end - start) // 4, 0, 1]),
                )
            )
        source += 1
    rnd.shuffle(pool)
    return pool[:size]


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("tuning", TUNINGS)
def test_matches_the_reference_on_document_like_pools(seed: int, tuning: Tuning) -> None:
    rnd = random.Random(seed)
    pool = document_pool(rnd, 1500)
    for budget, max_frac, overlap in [(600, 0.4, 0.5), (60, 0.4, 0.5), (10**6, 0.1, 0.0),
                                      (300, 1.0, 1.0), (0, 0.4, 0.5)]:  # fmt: skip
        check(pool, budget, max_frac, overlap, tuning)


@settings(max_examples=300, deadline=None)
@given(tunings, pools(), budgets, fractions, overlaps)
def test_matches_the_reference_in_coordinate_order(
    tuning: Tuning, pool: list[PlannedSpan], budget: int, max_frac: float, overlap: float
) -> None:
    """The planner's pools come in coordinate order; most have no two spans of one version
    intersecting (one of each coordinates, spans laid end to end per version, is one such)."""
    ordered = sorted(pool, key=tie_break)
    check(ordered, budget, max_frac, overlap, tuning)
    cursor: dict[tuple[str, int], int] = {}
    apart = []
    for c in {c.span.key: c for c in ordered}.values():
        version = (c.span.source_id, c.span.source_version_tx)
        start = max(c.span.start, cursor.get(version, 0))
        cursor[version] = start + c.span.length
        apart.append(PlannedSpan(span=SpanRef(*version, start, cursor[version]), kind=c.kind,
                                 span_class=c.span_class, weight=c.weight, tokens=c.tokens,
                                 text=c.text))
    check(sorted(apart, key=tie_break), budget, max_frac, overlap, tuning)


@settings(max_examples=300, deadline=None)
@given(pools(), st.booleans())
def test_apart_holds_for_ordered_pools_whose_versions_have_no_intersecting_spans(
    pool: list[PlannedSpan], ordered: bool
) -> None:
    if ordered:
        pool = sorted(pool, key=tie_break)
    spans = [c.span for c in pool]
    in_order = all(
        (a.source_id, a.source_version_tx, a.start) <= (b.source_id, b.source_version_tx, b.start)
        for a, b in pairwise(spans))
    intersecting = any(
        (a.source_id, a.source_version_tx) == (b.source_id, b.source_version_tx)
        and max(a.start, b.start) < min(a.end, b.end)
        for k, a in enumerate(spans) for b in spans[k + 1:])
    assert select_module._apart([r.source_id for r in spans],
                                [r.source_version_tx for r in spans],
                                [r.start for r in spans],
                                [r.end for r in spans]) == (in_order and not intersecting)
