"""The one place that converts between protobuf messages and core types.

Servicers, the conformance command and the clients all go through here, so field paths in
errors (``pool[3].weight``) and the proto3 JSON names stay consistent.
"""

from __future__ import annotations

import math
from dataclasses import fields

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.model import (
    EvidencePlan,
    Explanation,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)

_INT64_MIN = -(2**63)
_INT64_MAX = 2**63 - 1


def span_ref_from_proto(msg: plan_pb2.SpanRef) -> SpanRef:
    """Core SpanRef from its message (no validation beyond the proto types)."""
    return SpanRef(msg.source_id, msg.source_version_tx, msg.start, msg.end)


def span_ref_to_proto(ref: SpanRef) -> plan_pb2.SpanRef:
    """SpanRef message from the core type."""
    return plan_pb2.SpanRef(
        source_id=ref.source_id,
        source_version_tx=ref.source_version_tx,
        start=ref.start,
        end=ref.end,
    )


def planned_span_from_proto(msg: plan_pb2.PlannedSpan, *, field: str) -> PlannedSpan:
    """Core PlannedSpan from its message.

    Raises:
        InvalidRequest: ``{field}.span`` missing, ``{field}.class`` unspecified or unknown,
            ``{field}.weight`` not finite, ``{field}.span.sourceId`` empty.
    """
    if not msg.HasField("span"):
        raise InvalidRequest(f"{field}.span", "is required")
    if not msg.span.source_id:
        raise InvalidRequest(f"{field}.span.sourceId", "must be a non-empty string")
    try:
        span_class = SpanClass(msg.__getattribute__("class"))
    except ValueError:
        raise InvalidRequest(
            f"{field}.class", "must be SPAN_CLASS_TRUTH or SPAN_CLASS_CACHE"
        ) from None
    if not math.isfinite(msg.weight) or msg.weight < 0:
        raise InvalidRequest(f"{field}.weight", f"must be finite and >= 0, got {msg.weight!r}")
    return PlannedSpan(
        span=span_ref_from_proto(msg.span),
        kind=msg.kind or "body",
        span_class=span_class,
        weight=msg.weight,
        tokens=msg.tokens,
        text=msg.text,
    )


def planned_span_to_proto(span: PlannedSpan) -> plan_pb2.PlannedSpan:
    """PlannedSpan message from the core type."""
    msg = plan_pb2.PlannedSpan(
        span=span_ref_to_proto(span.span),
        kind=span.kind,
        weight=span.weight,
        tokens=span.tokens,
        text=span.text,
    )
    setattr(msg, "class", int(span.span_class))
    return msg


def stats_to_proto(stats: PlanStats) -> plan_pb2.PlanStats:
    """PlanStats message with every counter copied by name."""
    return plan_pb2.PlanStats(**{f.name: getattr(stats, f.name) for f in fields(PlanStats)})


def explanation_to_proto(exp: Explanation) -> plan_pb2.CandidateExplanation:
    """CandidateExplanation message (legs are filled by recall, not here)."""
    msg = plan_pb2.CandidateExplanation(
        candidate=planned_span_to_proto(exp.candidate),
        fate=plan_pb2.CandidateFate.ValueType(int(exp.fate)),
        density=exp.density,
    )
    if exp.deduped_by is not None:
        msg.deduped_by.CopyFrom(span_ref_to_proto(exp.deduped_by))
    return msg


def plan_to_proto(plan: EvidencePlan) -> plan_pb2.EvidencePlan:
    """EvidencePlan message from the core plan."""
    return plan_pb2.EvidencePlan(
        plan_model=plan.plan_model,
        spans=[planned_span_to_proto(s) for s in plan.spans],
        budget=plan.budget,
        used=plan.used,
        stats=stats_to_proto(plan.stats),
        plan_hash=plan.plan_hash,
        explanations=[explanation_to_proto(e) for e in plan.explanations],
    )


def plan_from_proto(msg: plan_pb2.EvidencePlan) -> EvidencePlan:
    """Core plan from its message (used by clients that verify hashes)."""
    return EvidencePlan(
        plan_model=msg.plan_model,
        spans=tuple(
            planned_span_from_proto(s, field=f"spans[{i}]") for i, s in enumerate(msg.spans)
        ),
        budget=msg.budget,
        used=msg.used,
        stats=PlanStats(**{f.name: getattr(msg.stats, f.name) for f in fields(PlanStats)}),
        plan_hash=msg.plan_hash,
    )
