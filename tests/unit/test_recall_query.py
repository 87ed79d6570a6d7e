"""Validation of a PlanRequest into the internal EvidenceQuery (``evidence_query_from_proto``)."""

from __future__ import annotations

import pytest

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.limits import MAX_FILTER_CHARS, MAX_FILTER_LABELS, MAX_FILTER_PROPERTIES
from planner_svc.recall.request import EvidenceQuery, SemanticLeg, StructuredLeg
from planner_svc.recall.settings import RecallSettings
from planner_svc.server.convert import evidence_query_from_proto

NOW = 1_800_000_000_000_000


def _query(**kw: object) -> plan_pb2.PlanRequest:
    return plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="Paris", **kw))  # type: ignore[arg-type]


def _convert(msg: plan_pb2.PlanRequest) -> object:
    return evidence_query_from_proto(msg, now_us=NOW, config=SelectionSettings())


def test_filter_bounds_are_the_documented_ones() -> None:
    assert (MAX_FILTER_LABELS, MAX_FILTER_PROPERTIES, MAX_FILTER_CHARS) == (32, 32, 256)


def test_filters_at_the_bounds_are_accepted() -> None:
    labels = [f"l{i}" for i in range(MAX_FILTER_LABELS - 1)] + ["x" * MAX_FILTER_CHARS]
    props = {f"k{i}": "v" for i in range(MAX_FILTER_PROPERTIES - 1)}
    props["k" * MAX_FILTER_CHARS] = "v" * MAX_FILTER_CHARS
    query = evidence_query_from_proto(
        _query(labels=labels, properties=props), now_us=NOW, config=SelectionSettings()
    )
    assert query.structured is not None
    assert query.structured.labels == tuple(labels)
    assert dict(query.structured.properties) == props


@pytest.mark.parametrize(
    ("kw", "field", "words"),
    [
        ({"labels": [f"l{i}" for i in range(1100)]}, "structured.labels", "at most 32"),
        ({"labels": [f"l{i}" for i in range(33)]}, "structured.labels", "got 33"),
        ({"labels": ["ok", ""]}, "structured.labels", "[1]"),
        ({"labels": ["x" * 257]}, "structured.labels", "257"),
        ({"properties": {f"k{i}": "v" for i in range(33)}}, "structured.properties", "got 33"),
        ({"properties": {"": "v"}}, "structured.properties", "key"),
        ({"properties": {"k": ""}}, "structured.properties", "'k'"),
        ({"properties": {"k" * 257: "v"}}, "structured.properties", "257"),
        ({"properties": {"k": "v" * 257}}, "structured.properties", "257"),
    ],
)
def test_filters_out_of_bounds_name_the_field(kw: dict[str, object], field: str,
                                               words: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        _convert(_query(**kw))
    assert info.value.field == field
    assert words in info.value.reason


def test_absent_k_and_limit_take_the_recall_settings_defaults() -> None:
    both = plan_pb2.PlanRequest(
        structured=plan_pb2.StructuredRecall(text="Paris"),
        semantic=plan_pb2.SemanticRecall(text="Paris"),
    )
    custom = evidence_query_from_proto(both, now_us=NOW, config=SelectionSettings(),
                                   recall=RecallSettings(default_k=7, default_limit=9))
    assert custom.semantic is not None and custom.structured is not None
    assert (custom.semantic.k, custom.structured.limit) == (7, 9)
    plain = evidence_query_from_proto(both, now_us=NOW, config=SelectionSettings())
    assert plain.semantic is not None and plain.structured is not None
    defaults = RecallSettings()
    assert (plain.semantic.k, plain.structured.limit) == (
        defaults.default_k, defaults.default_limit)
    both.structured.limit, both.semantic.k = 3, 4  # an explicit value wins
    explicit = evidence_query_from_proto(both, now_us=NOW, config=SelectionSettings(),
                                     recall=RecallSettings(default_k=7, default_limit=9))
    assert explicit.semantic is not None and explicit.structured is not None
    assert (explicit.semantic.k, explicit.structured.limit) == (4, 3)


Q = "Which port is the world's busiest by cargo tonnage?"


def test_the_question_alone_is_the_question_in_both_legs() -> None:
    once = evidence_query_from_proto(plan_pb2.PlanRequest(question=Q, expand_depth=1),
                                     now_us=NOW, config=SelectionSettings())
    both = evidence_query_from_proto(
        plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text=Q),
                             semantic=plan_pb2.SemanticRecall(text=Q), expand_depth=1),
        now_us=NOW, config=SelectionSettings())
    assert once == both
    defaults = RecallSettings()
    assert once.structured == StructuredLeg(text=Q, limit=defaults.default_limit)
    assert once.semantic == SemanticLeg(text=Q, k=defaults.default_k, alpha=1.0)


def test_a_legs_own_input_replaces_the_question_for_that_leg_only() -> None:
    query = _convert(plan_pb2.PlanRequest(
        question=Q, structured=plan_pb2.StructuredRecall(text="port cargo tonnage", limit=7)))
    assert isinstance(query, EvidenceQuery)
    assert query.structured == StructuredLeg(text="port cargo tonnage", limit=7)
    assert query.semantic is not None and query.semantic.text == Q

    vector = plan_pb2.PlanRequest(question=Q, semantic=plan_pb2.SemanticRecall(
        vector=plan_pb2.VectorQuery(values=[0.5, 0.25]), k=3, alpha=0.5))
    query = _convert(vector)
    assert isinstance(query, EvidenceQuery)
    assert query.semantic == SemanticLeg(vector=(0.5, 0.25), k=3, alpha=0.5)
    assert query.structured is not None and query.structured.text == Q


def test_a_leg_without_its_own_input_refines_the_questions_leg() -> None:
    query = _convert(plan_pb2.PlanRequest(
        question=Q, structured=plan_pb2.StructuredRecall(labels=["port"]),
        semantic=plan_pb2.SemanticRecall(k=5)))
    assert isinstance(query, EvidenceQuery)
    assert query.structured is not None and query.semantic is not None
    assert (query.structured.text, query.structured.labels) == (Q, ("port",))
    assert (query.semantic.text, query.semantic.k) == (Q, 5)


def test_without_a_question_only_the_legs_present_run() -> None:
    query = _convert(plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(text="ports")))
    assert isinstance(query, EvidenceQuery)
    assert query.structured is None and query.semantic is not None
    filters = _convert(plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(labels=["port"])))
    assert isinstance(filters, EvidenceQuery)
    assert filters.structured is not None and filters.structured.text == ""  # filter-only
    assert filters.semantic is None


@pytest.mark.parametrize(
    ("msg", "field", "words"),
    [
        (plan_pb2.PlanRequest(), "question", "set question"),
        (plan_pb2.PlanRequest(question=" \n"), "question", "blank"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(limit=3)), "structured.text",
         "or question"),
        (plan_pb2.PlanRequest(question=Q, structured=plan_pb2.StructuredRecall(text="")),
         "structured.text", "non-empty unless labels"),
        (plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(k=3)), "semantic.text",
         "or question"),
        (plan_pb2.PlanRequest(question=Q, semantic=plan_pb2.SemanticRecall(text="")),
         "semantic.text", "non-empty"),
    ],
)
def test_missing_inputs_name_the_field(msg: plan_pb2.PlanRequest, field: str, words: str) -> None:
    with pytest.raises(InvalidRequest) as info:
        _convert(msg)
    assert info.value.field == field
    assert words in info.value.reason
