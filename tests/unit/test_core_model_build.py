"""Spans built slot by slot are the objects their dataclass constructors build."""

from __future__ import annotations

import dataclasses
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.model import (
    NOWHERE,
    CandidateFate,
    EvidencePlan,
    Explanation,
    Location,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
    evidence_plan,
    planned_span,
    span_ref,
)

_TEXT = st.text(max_size=8)
_INT = st.integers(-(2**63), 2**63 - 1)


@settings(max_examples=200, deadline=None)
@given(source=_TEXT, tx=_INT, start=_INT, end=_INT, kind=_TEXT,
       span_class=st.sampled_from(list(SpanClass)),
       weight=st.floats(allow_nan=False), tokens=st.integers(0, 10**9), text=_TEXT,
       location=st.sampled_from([NOWHERE, Location(page=3, heading_path=("A", "B"))]),
       other=st.tuples(_TEXT, _INT, _INT, _INT))
def test_slot_built_spans_equal_the_constructed_ones(
        source: str, tx: int, start: int, end: int, kind: str, span_class: SpanClass,
        weight: float, tokens: int, text: str, location: Location,
        other: tuple[str, int, int, int]) -> None:
    ref = SpanRef(source, tx, start, end)
    built_ref = span_ref(source, tx, start, end)
    assert built_ref == ref and hash(built_ref) == hash(ref) and repr(built_ref) == repr(ref)
    assert (built_ref < SpanRef(*other)) == (ref < SpanRef(*other))
    assert (span_ref(*other) < ref) == (SpanRef(*other) < ref)
    expected = PlannedSpan(span=ref, kind=kind, span_class=span_class, weight=weight,
                           tokens=tokens, text=text, location=location)
    built = planned_span(built_ref, kind, span_class, weight, tokens, text, location)
    assert built == expected and hash(built) == hash(expected)
    assert repr(built) == repr(expected)
    assert dataclasses.astuple(built) == dataclasses.astuple(expected)
    assert pickle.loads(pickle.dumps(built)) == expected
    without = planned_span(ref, kind, span_class, weight, tokens)
    assert without == PlannedSpan(span=ref, kind=kind, span_class=span_class, weight=weight,
                                  tokens=tokens)
    assert without.with_text(text) == dataclasses.replace(without, text=text)
    assert built.with_text("other") == dataclasses.replace(expected, text="other")


def test_slot_built_spans_stay_frozen() -> None:
    built = planned_span(span_ref("a", 1, 2, 3), "body", SpanClass.TRUTH, 0.5, 4)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.weight = 1.0  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.span.start = 0  # type: ignore[misc]


@settings(max_examples=50, deadline=None)
@given(budget=st.integers(0, 2**64 - 1), used=st.integers(0, 2**64 - 1), hashed=_TEXT,
       explained=st.booleans())
def test_a_slot_built_plan_equals_the_constructed_one(budget: int, used: int, hashed: str,
                                                      explained: bool) -> None:
    span = planned_span(span_ref("a", 1, 2, 3), "body", SpanClass.TRUTH, 0.5, 4, "text")
    explanations = ((Explanation(candidate=span, fate=CandidateFate.PACKED, density=0.125,
                                 deduped_by=None),) if explained else ())
    stats = PlanStats(pool_spans=1)
    expected = EvidencePlan(plan_model="v1", spans=(span,), budget=budget, used=used,
                            stats=stats, plan_hash=hashed, explanations=explanations)
    built = evidence_plan("v1", (span,), budget, used, stats, hashed, explanations)
    assert built == expected and repr(built) == repr(expected)
    assert dataclasses.astuple(built) == dataclasses.astuple(expected)
    assert evidence_plan("v1", (span,), budget, used, stats, hashed) == EvidencePlan(
        plan_model="v1", spans=(span,), budget=budget, used=used, stats=stats,
        plan_hash=hashed)
    with pytest.raises(dataclasses.FrozenInstanceError):
        built.used = 0  # type: ignore[misc]


@pytest.mark.parametrize(("cls", "names"), [
    (SpanRef, ["source_id", "source_version_tx", "start", "end"]),
    (PlannedSpan, ["span", "kind", "span_class", "weight", "tokens", "text", "location"]),
    (EvidencePlan, ["plan_model", "spans", "budget", "used", "stats", "plan_hash",
                    "explanations"]),
])
def test_the_slot_builders_know_every_field(cls: type, names: list[str]) -> None:
    # the builders set these slots by name and skip __init__: a new field, or a
    # __post_init__ that checks or derives one, must reach them too
    assert [f.name for f in dataclasses.fields(cls)] == names
    assert not hasattr(cls, "__post_init__")
