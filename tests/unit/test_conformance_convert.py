"""Proto <-> core conversion used by ``planner-svc select`` and by hash-verifying clients."""

from __future__ import annotations

import json
import math
from dataclasses import fields
from pathlib import Path

import pytest
from google.protobuf import json_format

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.errors import InvalidRequest
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
)
from planner_svc.core.plan_hash import plan_hash
from planner_svc.server.convert import (
    explanation_to_proto,
    location_to_proto,
    plan_from_proto,
    plan_to_proto,
    planned_span_from_proto,
    planned_span_to_proto,
    stats_to_proto,
)

VECTORS = Path(__file__).resolve().parents[1] / "vectors"


def vectors() -> list[dict[str, object]]:
    out = []
    for name in ("plan_hash_v1.jsonl", "plan_hash_v1_extra.jsonl"):
        out += [json.loads(x) for x in (VECTORS / name).read_text("utf-8").splitlines() if x]
    return out


@pytest.mark.parametrize("vector", vectors(), ids=lambda v: str(v["name"]))
def test_vectors_through_the_proto3_json_mapping(vector: dict[str, object]) -> None:
    body = {k: v for k, v in vector.items() if k != "name"}
    msg = plan_pb2.EvidencePlan()
    json_format.ParseDict(body, msg)
    plan = plan_from_proto(msg)
    assert plan_hash(plan.plan_model, plan.budget, plan.used, plan.spans) == vector["planHash"]
    # And back: the proto3 JSON of the converted plan hashes the same.
    again = plan_from_proto(plan_to_proto(plan))
    assert plan_hash(again.plan_model, again.budget, again.used, again.spans) == vector["planHash"]


def test_planned_span_round_trip_keeps_every_field() -> None:
    original = PlannedSpan(
        span=SpanRef("出典", -(2**63), 3, 2**64 - 1),
        kind="cell",
        span_class=SpanClass.CACHE,
        weight=-0.0,
        tokens=2**64 - 1,
        text="テキスト",
    )
    back = planned_span_from_proto(planned_span_to_proto(original), field="x")
    assert back == original
    assert math.copysign(1.0, back.weight) == -1.0


@pytest.mark.parametrize(
    "location",
    [
        Location(page=1),
        Location(page=12, heading_path=("Résumé", "表"), cell_index=0),
        Location(heading_path=("A", "B")),
        Location(cell_index=7),
    ],
)
def test_planned_span_location_round_trips(location: Location) -> None:
    span = PlannedSpan(span=SpanRef("doc.pdf", 5, 0, 9), kind="paragraph",
                       span_class=SpanClass.TRUTH, weight=0.5, tokens=3, location=location)
    msg = planned_span_to_proto(span)
    assert msg.HasField("location")
    assert msg.location.HasField("page") == (location.page is not None)
    assert msg.location.HasField("cell_index") == (location.cell_index is not None)
    assert planned_span_from_proto(msg, field="x") == span
    as_json = json_format.MessageToDict(msg)["location"]
    assert as_json == {k: v for k, v in (("page", location.page),
                                        ("headingPath", list(location.heading_path)),
                                        ("cellIndex", location.cell_index)) if v or v == 0}


def test_a_span_without_location_sends_none_and_page_0_is_refused() -> None:
    span = PlannedSpan(span=SpanRef("a", 5, 0, 9), kind="body", span_class=SpanClass.TRUTH,
                       weight=0.5, tokens=3)
    msg = planned_span_to_proto(span)
    assert not msg.HasField("location")
    assert planned_span_from_proto(msg, field="x").location == NOWHERE
    msg.location.page = 0
    with pytest.raises(InvalidRequest) as info:
        planned_span_from_proto(msg, field="pool[2]")
    assert info.value.field == "pool[2].location.page"


def test_missing_kind_is_rejected_not_defaulted() -> None:
    # The hash encodes the kind: turning "" into "body" would hash a span the caller never
    # described.
    msg = plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id="a", end=1), weight=0.5)
    msg.__setattr__("class", plan_pb2.SPAN_CLASS_TRUTH)
    with pytest.raises(InvalidRequest) as info:
        planned_span_from_proto(msg, field="pool[0]")
    assert info.value.field == "pool[0].kind"
    assert "non-empty" in info.value.reason
    with pytest.raises(InvalidRequest) as info:
        plan_from_proto(plan_pb2.EvidencePlan(plan_model="v1", spans=[msg]))
    assert info.value.field == "spans[0].kind"
    msg.kind = "body"
    assert planned_span_from_proto(msg, field="pool[0]").kind == "body"


@pytest.mark.parametrize(
    ("msg", "field"),
    [
        (plan_pb2.PlannedSpan(weight=0.5), "pool[4].span"),
        (plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(end=1), weight=0.5), "pool[4].span.sourceId"),
        (plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id="a", end=1), kind="body"),
         "pool[4].class"),
    ],
)
def test_conversion_errors_name_the_field(msg: plan_pb2.PlannedSpan, field: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        planned_span_from_proto(msg, field="pool[4]")
    assert info.value.field == field


@pytest.mark.parametrize("weight", [math.nan, math.inf, -1.0])
def test_bad_weights_are_rejected_at_the_boundary(weight: float) -> None:
    msg = plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id="a", end=1), kind="body",
                               weight=weight)
    msg.__setattr__("class", plan_pb2.SPAN_CLASS_TRUTH)
    with pytest.raises(InvalidRequest) as info:
        planned_span_from_proto(msg, field="pool[0]")
    assert info.value.field == "pool[0].weight"


def test_stats_cover_every_counter_both_ways() -> None:
    stats = PlanStats()
    for i, f in enumerate(fields(PlanStats)):
        setattr(stats, f.name, True if f.name == "token_estimate" else i + 1)
    msg = stats_to_proto(stats)
    assert {f.name for f in fields(PlanStats)} == {f.name for f in msg.DESCRIPTOR.fields}
    plan = EvidencePlan(
        plan_model="v1", spans=(), budget=5, used=0, stats=stats, plan_hash="b3:x"
    )
    assert plan_from_proto(plan_to_proto(plan)).stats == stats


def test_explanation_to_proto() -> None:
    cand = PlannedSpan(
        span=SpanRef("a", 1, 0, 10), kind="body", span_class=SpanClass.TRUTH, weight=0.5, tokens=4
    )
    msg = explanation_to_proto(
        Explanation(
            candidate=cand,
            fate=CandidateFate.DEDUPED,
            density=0.125,
            deduped_by=SpanRef("a", 1, 0, 20),
        )
    )
    assert msg.fate == plan_pb2.CANDIDATE_FATE_DEDUPED
    assert msg.density == 0.125
    assert (msg.deduped_by.source_id, msg.deduped_by.end) == ("a", 20)
    packed = explanation_to_proto(
        Explanation(candidate=cand, fate=CandidateFate.PACKED, density=0.125)
    )
    assert not packed.HasField("deduped_by")
    # Enum numbers of the core and the proto agree.
    for fate in CandidateFate:
        assert plan_pb2.CandidateFate.Value(f"CANDIDATE_FATE_{fate.name}") == int(fate)
    for cls in SpanClass:
        assert plan_pb2.SpanClass.Value(f"SPAN_CLASS_{cls.name}") == int(cls)


@pytest.mark.parametrize("location", [
    NOWHERE, Location(), Location(page=3), Location(cell_index=0), Location(heading_path=("A",)),
    Location(page=2, heading_path=("Intro", "Setup"), cell_index=4),
])
def test_a_planned_span_message_is_its_fields_message_by_message(location: Location) -> None:
    span = PlannedSpan(span=SpanRef("doc", 7, 1, 9), kind="cell", span_class=SpanClass.CACHE,
                       weight=0.25, tokens=3, text="some text", location=location)
    expected = plan_pb2.PlannedSpan(
        span=plan_pb2.SpanRef(source_id="doc", source_version_tx=7, start=1, end=9),
        kind="cell", weight=0.25, tokens=3, text="some text")
    setattr(expected, "class", int(SpanClass.CACHE))
    if not location.empty:
        expected.location.CopyFrom(location_to_proto(location))
    got = planned_span_to_proto(span)
    assert got == expected
    assert got.HasField("location") == (not location.empty)
    assert got.SerializeToString(deterministic=True) == expected.SerializeToString(
        deterministic=True)
