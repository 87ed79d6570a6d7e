"""Plan messages <-> core types: requests, spans, plans, stats, explanations.

Servicers, the ``select`` command and the clients all go through here, so field paths in
errors (``pool[3].weight``) and the proto3 JSON names stay consistent.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import fields

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import ConfigError, InvalidRequest, echo
from planner_svc.core.limits import (
    BUDGET_TOKENS,
    EXPAND_DEPTH,
    FILTER_CHARS,
    MAX_BUDGET_TOKENS,
    MAX_FILTER_CHARS,
    MAX_FILTER_LABELS,
    MAX_FILTER_PROPERTIES,
    MAX_LEG_RESULTS,
)
from planner_svc.core.model import (
    NOWHERE,
    EvidencePlan,
    Explanation,
    Location,
    PlannedSpan,
    PlanStats,
    SpanClass,
    SpanRef,
)
from planner_svc.recall.planner import Abstention, EvidenceResult, LegTrace
from planner_svc.recall.request import EvidenceQuery, SemanticLeg, StructuredLeg
from planner_svc.recall.settings import RecallSettings
from planner_svc.recall.timing import StageClock


def span_ref_from_proto(msg: plan_pb2.SpanRef) -> SpanRef:
    """Core SpanRef from its message (no validation beyond the proto types)."""
    return SpanRef(msg.source_id, msg.source_version_tx, msg.start, msg.end)


def span_ref_to_proto(ref: SpanRef) -> plan_pb2.SpanRef:
    """SpanRef message from the core type."""
    msg = plan_pb2.SpanRef()
    _fill_span_ref(msg, ref)
    return msg


def _fill_span_ref(out: plan_pb2.SpanRef, ref: SpanRef) -> None:
    """Write ``ref`` into the (empty) message ``out``."""
    out.source_id = ref.source_id
    out.source_version_tx = ref.source_version_tx
    out.start = ref.start
    out.end = ref.end


def planned_span_from_proto(msg: plan_pb2.PlannedSpan, *, field: str) -> PlannedSpan:
    """Core PlannedSpan from its message.

    Raises:
        InvalidRequest: ``{field}.span`` missing, ``{field}.span.sourceId`` empty,
            ``{field}.kind`` empty, ``{field}.class`` unspecified or unknown, ``{field}.weight``
            not finite or negative.
    """
    if not msg.HasField("span"):
        raise InvalidRequest(f"{field}.span", "is required")
    if not msg.span.source_id:
        raise InvalidRequest(f"{field}.span.sourceId", "must be a non-empty string")
    if not msg.kind:
        # Never defaulted: the plan hash encodes the kind the caller sent.
        raise InvalidRequest(
            f"{field}.kind", "must be a non-empty string (paragraph, heading, cell, code, body)"
        )
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
        kind=msg.kind,
        span_class=span_class,
        weight=msg.weight,
        tokens=msg.tokens,
        text=msg.text,
        location=location_from_proto(msg.location, field=f"{field}.location")
        if msg.HasField("location") else NOWHERE,
    )


def location_from_proto(msg: plan_pb2.SpanLocation, *, field: str) -> Location:
    """Core Location from its message.

    Raises:
        InvalidRequest: ``{field}.page`` set to 0 (pages are numbered from 1).
    """
    if msg.HasField("page") and msg.page < 1:
        raise InvalidRequest(f"{field}.page", "must be >= 1 when set (pages are numbered from 1)")
    return Location(
        page=msg.page if msg.HasField("page") else None,
        heading_path=tuple(msg.heading_path),
        cell_index=msg.cell_index if msg.HasField("cell_index") else None,
    )


def location_to_proto(location: Location) -> plan_pb2.SpanLocation:
    """SpanLocation message from the core type (only the fields that are set)."""
    msg = plan_pb2.SpanLocation()
    _fill_location(msg, location)
    return msg


def _fill_location(out: plan_pb2.SpanLocation, location: Location) -> None:
    """Write the fields of ``location`` that are set into the (empty) message ``out``."""
    out.heading_path.extend(location.heading_path)
    if location.page is not None:
        out.page = location.page
    if location.cell_index is not None:
        out.cell_index = location.cell_index


def planned_span_to_proto(span: PlannedSpan) -> plan_pb2.PlannedSpan:
    """PlannedSpan message from the core type (``location`` left out when nothing is
    known)."""
    msg = plan_pb2.PlannedSpan()
    _fill_planned_span(msg, span)
    return msg


def _fill_planned_span(out: plan_pb2.PlannedSpan, span: PlannedSpan) -> None:
    """Write ``span`` into the (empty) message ``out``: fields are set in place, no
    intermediate messages are built and copied (a plan converts one per span). What
    :func:`_fill_span_ref` and :func:`_fill_location` write, written here without a call
    each."""
    ref = span.span
    target = out.span
    target.source_id = ref.source_id
    target.source_version_tx = ref.source_version_tx
    target.start = ref.start
    target.end = ref.end
    out.kind = span.kind
    setattr(out, "class", int(span.span_class))
    out.weight = span.weight
    out.tokens = span.tokens
    out.text = span.text
    location = span.location
    if location is not NOWHERE:
        heading_path, page, cell_index = (location.heading_path, location.page,
                                          location.cell_index)
        if heading_path or page is not None or cell_index is not None:  # not empty
            where = out.location
            where.heading_path.extend(heading_path)
            if page is not None:
                where.page = page
            if cell_index is not None:
                where.cell_index = cell_index


_STATS_FIELDS = tuple(f.name for f in fields(PlanStats))
"""PlanStats' counters, copied by name (the message has a field of each name)."""


def stats_to_proto(stats: PlanStats) -> plan_pb2.PlanStats:
    """PlanStats message with every counter copied by name."""
    msg = plan_pb2.PlanStats()
    _fill_stats(msg, stats)
    return msg


def _fill_stats(out: plan_pb2.PlanStats, stats: PlanStats) -> None:
    for name in _STATS_FIELDS:
        setattr(out, name, getattr(stats, name))


def explanation_to_proto(exp: Explanation) -> plan_pb2.CandidateExplanation:
    """CandidateExplanation message (legs are filled by recall, not here)."""
    msg = plan_pb2.CandidateExplanation()
    _fill_explanation(msg, exp)
    return msg


def _fill_explanation(out: plan_pb2.CandidateExplanation, exp: Explanation,
                      copied: plan_pb2.PlannedSpan | None = None) -> None:
    """Write ``exp`` into the (empty) message ``out``; its candidate copied from ``copied``
    when given (the message of the same span, already written)."""
    if copied is None:
        _fill_planned_span(out.candidate, exp.candidate)
    else:
        out.candidate.CopyFrom(copied)
    out.fate = plan_pb2.CandidateFate.ValueType(int(exp.fate))
    out.density = exp.density
    if exp.deduped_by is not None:
        _fill_span_ref(out.deduped_by, exp.deduped_by)


def plan_to_proto(plan: EvidencePlan) -> plan_pb2.EvidencePlan:
    """EvidencePlan message from the core plan."""
    msg = plan_pb2.EvidencePlan()
    fill_plan(msg, plan)
    return msg


def fill_plan(out: plan_pb2.EvidencePlan, plan: EvidencePlan, *, explained: bool = True
              ) -> None:
    """Write ``plan`` into the (empty) message ``out`` (the field of a response that carries
    it), building each span in place: what :func:`plan_to_proto` returns, without the
    copy (its explanations left out when ``explained`` is false)."""
    out.plan_model = plan.plan_model
    add_span = out.spans.add
    for span in plan.spans:
        _fill_planned_span(add_span(), span)
    out.budget = plan.budget
    out.used = plan.used
    _fill_stats(out.stats, plan.stats)
    out.plan_hash = plan.plan_hash
    if not explained:
        return
    add_explanation = out.explanations.add
    for exp in plan.explanations:
        _fill_explanation(add_explanation(), exp)


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


def _check_filters(labels: Sequence[str], properties: Mapping[str, str]) -> None:
    """Bound the structured leg's filters (count, and each string 1..MAX_FILTER_CHARS).

    Raises:
        InvalidRequest: ``structured.labels`` or ``structured.properties``, naming the offending
            entry.
    """
    if len(labels) > MAX_FILTER_LABELS:
        raise InvalidRequest(
            "structured.labels",
            f"at most {MAX_FILTER_LABELS} labels are allowed, got {len(labels)}",
        )
    for i, label in enumerate(labels):
        if len(label) not in FILTER_CHARS:
            raise InvalidRequest(
                "structured.labels",
                f"label [{i}] must be 1..{MAX_FILTER_CHARS} characters, got {len(label)}",
            )
    if len(properties) > MAX_FILTER_PROPERTIES:
        raise InvalidRequest(
            "structured.properties",
            f"at most {MAX_FILTER_PROPERTIES} properties are allowed, got {len(properties)}",
        )
    for key, value in sorted(properties.items()):
        if len(key) not in FILTER_CHARS:
            raise InvalidRequest(
                "structured.properties",
                f"a key must be 1..{MAX_FILTER_CHARS} characters, got {len(key)}",
            )
        if len(value) not in FILTER_CHARS:
            raise InvalidRequest(
                "structured.properties",
                f"the value of {echo(key)} must be 1..{MAX_FILTER_CHARS} characters, "
                f"got {len(value)}",
            )


def _structured_leg(
    msg: plan_pb2.PlanRequest, question: str | None, settings: RecallSettings
) -> StructuredLeg | None:
    """The structured leg: ``structured`` refined, else the question's full-text leg, else
    none."""
    if not msg.HasField("structured"):
        if question is None:
            return None
        return StructuredLeg(text=question, limit=settings.default_limit)
    q = msg.structured
    if q.HasField("text"):
        text = q.text
    elif question is not None:
        text = question
    elif q.labels or q.properties:
        text = ""
    else:
        raise InvalidRequest(
            "structured.text", "set structured.text, a label or property filter, or question"
        )
    if not text.strip() and not q.labels and not q.properties:
        raise InvalidRequest(
            "structured.text", "must be non-empty unless labels or properties filter"
        )
    if q.limit > MAX_LEG_RESULTS:
        raise InvalidRequest("structured.limit", f"must be <= {MAX_LEG_RESULTS}, got {q.limit}")
    _check_filters(q.labels, q.properties)
    return StructuredLeg(
        text=text,
        labels=tuple(q.labels),
        properties=dict(sorted(q.properties.items())),
        limit=q.limit or settings.default_limit,
    )


def _semantic_leg(
    msg: plan_pb2.PlanRequest, question: str | None, settings: RecallSettings
) -> SemanticLeg | None:
    """The semantic leg: ``semantic`` refined, else the question embedded, else none."""
    if not msg.HasField("semantic"):
        if question is None:
            return None
        return SemanticLeg(text=question, k=settings.default_k)
    s = msg.semantic
    which = s.WhichOneof("input")
    if which is None and question is None:
        raise InvalidRequest(
            "semantic.text", "set semantic.text, semantic.vector or question"
        )
    if which == "text" and not s.text.strip():
        raise InvalidRequest("semantic.text", "must be non-empty")
    if which == "vector" and not s.vector.values:
        raise InvalidRequest("semantic.vector.values", "must be non-empty")
    if s.k > MAX_LEG_RESULTS:
        raise InvalidRequest("semantic.k", f"must be <= {MAX_LEG_RESULTS}, got {s.k}")
    alpha = s.alpha if s.HasField("alpha") else 1.0
    if not math.isfinite(alpha) or not 0.0 <= alpha <= 1.0:
        raise InvalidRequest("semantic.alpha", f"must be in [0, 1], got {alpha!r}")
    vector = tuple(s.vector.values) if which == "vector" else None
    return SemanticLeg(
        text=None if vector is not None else (s.text if which == "text" else question),
        vector=vector,
        k=s.k or settings.default_k,
        alpha=alpha,
    )


def evidence_query_from_proto(
    msg: plan_pb2.PlanRequest,
    *,
    now_us: int,
    config: SelectionSettings,
    recall: RecallSettings | None = None,
) -> EvidenceQuery:
    """Validate a PlanRequest into the internal :class:`EvidenceQuery`.

    Recall legs: a non-empty ``question`` turns on both legs with its text; a leg message
    refines its leg (filters, limit, k, alpha) and its own input (``structured.text``,
    ``semantic.text`` or ``semantic.vector``), when set, replaces the question for that leg.
    Without a question only the leg messages present run, each with its own input. So a request
    with only ``question`` is the request that repeats it as both legs' text.

    Absent as-of times become ``now_us``; absent budget/settings take ``config``'s defaults;
    an absent (0) ``structured.limit`` / ``semantic.k`` takes ``recall.default_limit`` /
    ``recall.default_k`` (``RecallSettings()`` when ``recall`` is None; pass the planner's
    settings so its defaults apply).
    Structured filters are bounded: at most :data:`MAX_FILTER_LABELS` labels and
    :data:`MAX_FILTER_PROPERTIES` properties, each label, key and value 1..
    :data:`MAX_FILTER_CHARS` characters.

    Raises:
        InvalidRequest: naming the first offending field (proto field path) and the reason.
    """
    settings = recall if recall is not None else RecallSettings()
    question: str | None = None
    if msg.question:
        if not msg.question.strip():
            raise InvalidRequest("question", "must not be blank")
        question = msg.question
    if question is None and not msg.HasField("structured") and not msg.HasField("semantic"):
        raise InvalidRequest("question", "set question, or at least one of structured or semantic")
    structured = _structured_leg(msg, question, settings)
    semantic = _semantic_leg(msg, question, settings)
    if msg.expand_depth not in EXPAND_DEPTH:
        raise InvalidRequest("expand_depth", f"must be in {EXPAND_DEPTH}, got {msg.expand_depth}")
    budget = msg.budget_tokens if msg.HasField("budget_tokens") else config.default_budget_tokens
    if budget < 1:
        raise InvalidRequest("budget_tokens", "must be >= 1 (omit it for the server default)")
    if budget not in BUDGET_TOKENS:
        raise InvalidRequest("budget_tokens", f"must be <= {MAX_BUDGET_TOKENS}, got {budget}")
    max_frac = msg.max_frac_per_source if msg.HasField("max_frac_per_source") else None
    overlap = msg.dedup_overlap if msg.HasField("dedup_overlap") else None
    effective = config
    if max_frac is not None or overlap is not None:  # the defaults are already valid
        try:
            effective = config.with_overrides(max_frac_per_source=max_frac,
                                              dedup_overlap=overlap)
        except ConfigError as exc:
            raise InvalidRequest(exc.field, exc.reason) from None
    return EvidenceQuery(
        structured=structured,
        semantic=semantic,
        expand_depth=msg.expand_depth,
        at_valid_us=msg.at_valid if msg.HasField("at_valid") else now_us,
        at_tx_us=msg.at_tx if msg.HasField("at_tx") else now_us,
        budget_tokens=budget,
        model=msg.model,
        allow_ungrounded=msg.allow_ungrounded,
        explain=msg.explain,
        max_frac_per_source=effective.max_frac_per_source,
        dedup_overlap=effective.dedup_overlap,
    )


def _fill_legs(msg: plan_pb2.LegScores, trace: LegTrace, node_id: str) -> None:
    """Write the scores behind ``node_id`` into the (empty) message ``msg`` (each optional
    leg only when the trace has it: a score is never None)."""
    msg.node_id = node_id
    msg.fused = trace.fused.get(node_id, 0.0)
    structured = trace.structured.get(node_id)
    if structured is not None:
        msg.structured = structured
    semantic = trace.semantic.get(node_id)
    if semantic is not None:
        msg.semantic = semantic
    expanded = trace.expanded.get(node_id)
    if expanded is not None:
        msg.expanded = expanded
    node = trace.nodes.get(node_id)
    if node is not None:
        msg.local = node.local
        msg.rank = node.rank


def _fill_explained(out: plan_pb2.EvidencePlan, plan: EvidencePlan, trace: LegTrace) -> None:
    """Write ``plan``'s explanations into ``out`` (whose explanations are still empty), each
    with the leg scores of the node its candidate came from (when ``trace.origin`` names
    one): what :func:`fill_plan` writes of them, and the legs, in one pass. A candidate that
    is one of the plan's spans (the same object) is copied from its message in ``out``."""
    origin = trace.origin
    add_explanation = out.explanations.add
    selected = {id(span): at for at, span in enumerate(plan.spans)}
    for exp in plan.explanations:
        written = add_explanation()
        candidate = exp.candidate
        at = selected.get(id(candidate))
        _fill_explanation(written, exp, None if at is None else out.spans[at])
        ref = candidate.span
        node_id = origin.get((ref.source_id, ref.source_version_tx, ref.start, ref.end))
        if node_id is not None:
            _fill_legs(written.legs, trace, node_id)


def abstention_to_proto(abstention: Abstention) -> plan_pb2.Abstention:
    """Abstention message: the decision and its inputs."""
    evidence = abstention.evidence
    msg = plan_pb2.Abstention(
        coverage=evidence.coverage, best_source=evidence.best_source or "",
        min_coverage=abstention.min_coverage, min_similarity=abstention.min_similarity,
        declined=abstention.declined,
    )
    if evidence.similarity is not None:
        msg.similarity = evidence.similarity
    return msg


def recall_trace_to_proto(trace: LegTrace) -> plan_pb2.RecallTrace:
    """RecallTrace message: the candidate documents, best first, and the abstention."""
    msg = plan_pb2.RecallTrace()
    _fill_recall_trace(msg, trace)
    return msg


def _fill_recall_trace(out: plan_pb2.RecallTrace, trace: LegTrace) -> None:
    """Write :func:`recall_trace_to_proto`'s content into the (empty) message ``out``, each
    document built in place (no message built and copied)."""
    add_document = out.documents.add
    residual = trace.residual
    for d in trace.documents:
        add_document(source_id=d.source_id, score=d.score, structured=d.structured,
                     semantic=d.semantic, hop=d.hop, hop_from=d.hop_from or "",
                     residual_terms=residual.get(d.source_id, ()))
    if trace.abstention is not None:
        out.abstention.CopyFrom(abstention_to_proto(trace.abstention))


def stage_timings_to_proto(clock: StageClock) -> list[plan_pb2.StageTiming]:
    """StageTiming messages: each stage of ``clock`` that ran, in the order the stages first run,
    with its wall time in microseconds."""
    return [plan_pb2.StageTiming(stage=stage, duration_us=us)
            for stage, us in clock.durations_us.items()]


def evidence_result_to_proto(result: EvidenceResult) -> plan_pb2.PlanResponse:
    """PlanResponse message; with a trace (explain), leg scores on each explanation and the
    recall trace beside the plan."""
    msg = plan_pb2.PlanResponse()
    trace = result.trace
    if trace is None:
        fill_plan(msg.plan, result.plan)
        return msg
    fill_plan(msg.plan, result.plan, explained=False)
    _fill_explained(msg.plan, result.plan, trace)
    _fill_recall_trace(msg.recall, trace)
    return msg
