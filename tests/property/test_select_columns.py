"""Selection over a pool given as columns does not depend on how the columns are given.

The planner hands Phase B its pool as columns (:class:`PoolColumns`), with each whole candidate
built on demand. :func:`select` itself reads its pool through :func:`select_columns`, so this
checks what the columns add: plain sequences or other column types, and candidates rebuilt on
demand rather than given, return the same result field for field (weights bit for bit) and
refuse the same invalid pools with the same error. That Phase B keeps the seed's rules is
checked against an independent reference (``test_select_reference.py``) and the golden cases.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import PlannedSpan, SpanClass, SpanRef
from planner_svc.core.select import PoolColumns, SelectionResult, select, select_columns
from tests.property.test_select_properties import candidates

SETTINGS = settings(max_examples=300, deadline=None)

class Built:
    """Columns of ``pool`` whose candidates are rebuilt on every call (new, equal objects, as
    the planner builds them), counting the calls."""

    def __init__(self, pool: Sequence[PlannedSpan]) -> None:
        self.pool = pool
        self.calls = 0

    def candidate(self, i: int) -> PlannedSpan:
        self.calls += 1
        c = self.pool[i]
        return PlannedSpan(span=SpanRef(*c.span.key), kind=c.kind, span_class=c.span_class,
                           weight=c.weight, tokens=c.tokens, text=c.text, location=c.location)

    def columns(self) -> PoolColumns:
        spans = [c.span for c in self.pool]
        return PoolColumns(
            source_ids=tuple(r.source_id for r in spans),
            txs=tuple(r.source_version_tx for r in spans),
            starts=tuple(r.start for r in spans), ends=tuple(r.end for r in spans),
            weights=tuple(c.weight for c in self.pool), tokens=tuple(c.tokens for c in self.pool),
            candidate=self.candidate,
        )


def signature(r: SelectionResult) -> tuple[object, ...]:
    """Everything observable about a result, weights by bit pattern (0.0 != -0.0)."""
    return (
        [(s, math.copysign(1.0, s.weight)) for s in r.selected],
        r.used,
        r.stats,
        [(e, math.copysign(1.0, e.candidate.weight), math.copysign(1.0, e.density))
         for e in r.explanations],
    )


@SETTINGS
@given(st.lists(candidates(), max_size=40), st.integers(0, 300),
       st.sampled_from([1.0, 0.5, 0.2]), st.sampled_from([0.0, 0.5, 1.0]), st.booleans())
def test_columns_select_what_the_candidates_select(
    pool: list[PlannedSpan], budget: int, frac: float, overlap: float, explain: bool
) -> None:
    built = Built(pool)
    got = select_columns(built.columns(), budget, frac, overlap, explain=explain)
    assert signature(got) == signature(select(pool, budget, frac, overlap, explain=explain))
    # without explain, a whole candidate is built only for what selection returns or ties
    if not explain:
        assert built.calls <= len(pool)


def test_a_pool_without_ties_builds_only_the_selected_candidates() -> None:
    pool = [PlannedSpan(span=SpanRef("s", 1, 100 * i, 100 * i + 50), kind="body",
                        span_class=SpanClass.TRUTH, weight=1.0 / (i + 1), tokens=10)
            for i in range(50)]
    built = Built(pool)
    got = select_columns(built.columns(), 100, 1.0, 0.5)
    assert [s.span.start for s in got.selected] == [0, 100, 200, 300, 400, 500, 600, 700, 800,
                                                    900]
    assert built.calls == 10
    assert got.stats.skipped_budget_full == 40


@pytest.mark.parametrize(("bad", "field"), [
    ({"weight": math.nan}, "pool[1].weight"),
    ({"weight": -1.0}, "pool[1].weight"),
    ({"tokens": -3}, "pool[1].tokens"),
    ({"span": SpanRef("a", 1, 5, 5)}, "pool[1].span.end"),
])
def test_an_invalid_candidate_is_refused_like_select_refuses_it(
    bad: dict[str, object], field: str
) -> None:
    good = PlannedSpan(span=SpanRef("a", 1, 0, 10), kind="body", span_class=SpanClass.TRUTH,
                       weight=0.5, tokens=4)
    pool = [good, PlannedSpan(**{**{f: getattr(good, f) for f in
                                    ("span", "kind", "span_class", "weight", "tokens")},
                                 **bad})]  # type: ignore[arg-type]
    with pytest.raises(InvalidRequest) as by_select:
        select(pool, 100, 1.0, 0.5)
    with pytest.raises(InvalidRequest) as by_columns:
        select_columns(Built(pool).columns(), 100, 1.0, 0.5)
    assert by_columns.value.field == by_select.value.field == field
    assert str(by_columns.value) == str(by_select.value)
