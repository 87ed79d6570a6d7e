"""The plan model: span coordinates, planned spans, plan stats and the evidence plan (and the
edge direction of graph reads, shared by the store and recall).

Source: seed ``memory-planner`` section "Data model" (EvidencePlan, PlannedSpan, SpanClass).
All types are frozen; ``PlanStats`` is the one mutable accumulator, filled by recall and
selection and frozen into the plan at the end.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Literal

PLAN_MODEL = "v1"
"""The plan model version every plan carries and hashes."""

SPAN_KINDS = ("paragraph", "heading", "cell", "code", "body")
"""Structural span kinds the span ledger records; ``body`` is the default for a missing row."""


class SpanClass(enum.IntEnum):
    """Whether a span is verbatim source text (TRUTH) or a derived artifact (CACHE).

    The integer value is the byte the plan hash encodes and the proto enum number.
    """

    TRUTH = 1
    CACHE = 2


class CandidateFate(enum.IntEnum):
    """What selection did with one pool candidate (numbers match the proto enum)."""

    PACKED = 1
    DEDUPED = 2
    UNPACKABLE = 3
    BUDGET_FULL = 4
    CAP_BLOCKED = 5


CoordKey = tuple[str, int, int, int]
"""``(source_id, source_version_tx, start, end)`` of a span: microseconds for the version, UTF-8
byte offsets for the half-open range. The total order every tie breaks on, and the key of every
span-keyed map (ledger kinds, text slices, pool origins)."""

Direction = Literal["out", "in", "both"]
"""Which edges of a node a graph read follows: leaving it (``out``), entering it (``in``) or
both."""


@dataclass(frozen=True, slots=True, order=True)
class SpanRef:
    """Half-open UTF-8 byte range [start, end) of one source version's canonical text.

    ``source_version_tx`` is the version's transaction time in microseconds since the epoch.
    Ordering is the canonical coordinate order.
    """

    source_id: str
    source_version_tx: int
    start: int
    end: int

    @property
    def key(self) -> CoordKey:
        """The coordinate tuple used for every tie-break and the canonical order."""
        return (self.source_id, self.source_version_tx, self.start, self.end)

    @property
    def length(self) -> int:
        """Length in UTF-8 bytes."""
        return self.end - self.start


_PATH_SEPARATOR = " \u203a "


@dataclass(frozen=True, slots=True, kw_only=True)
class Location:
    """Where a span sits in the original document: what a citation sends a person to.

    Recorded by ingestion with each span (the span ledger row), carried by every planned span.
    Never part of the plan hash: two plans with the same spans are the same plan wherever
    their spans were found.

    Attributes:
        page: 1-based page number (PDF), else None.
        heading_path: texts of the enclosing headings, outermost first (whitespace collapsed);
            a heading's own path ends with itself; empty when no heading encloses the span
            (plain text, or text before the first heading).
        cell_index: 0-based notebook cell, else None.

    Raises:
        ValueError: ``page`` below 1, ``cell_index`` below 0, or a heading that is not a
            string.
    """

    page: int | None = None
    heading_path: tuple[str, ...] = ()
    cell_index: int | None = None

    def __post_init__(self) -> None:
        if self.page is not None and self.page < 1:
            raise ValueError(f"page {self.page} is below 1 (pages are numbered from 1)")
        if self.cell_index is not None and self.cell_index < 0:
            raise ValueError(f"cell_index {self.cell_index} is below 0")
        if not all(isinstance(h, str) for h in self.heading_path):
            raise ValueError(f"heading_path {self.heading_path!r} holds a non-string")

    @property
    def empty(self) -> bool:
        """True when nothing is known: no page, no heading, no cell."""
        return self.page is None and not self.heading_path and self.cell_index is None

    def render(self) -> str:
        """One line for a citation: ``p. 3``, ``cell 4``, ``Intro › Setup``, joined by `` · ``
        in that order when several are set (``p. 3 · Results``); empty when nothing is."""
        parts: list[str] = []
        if self.page is not None:
            parts.append(f"p. {self.page}")
        if self.cell_index is not None:
            parts.append(f"cell {self.cell_index}")
        if self.heading_path:
            parts.append(_PATH_SEPARATOR.join(self.heading_path))
        return " \u00b7 ".join(parts)

    def __str__(self) -> str:
        return self.render()


NOWHERE = Location()
"""The location of a span without pages, cells or headings (and of a span whose ledger row
records none)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedSpan:
    """A candidate or selected span.

    Attributes:
        span: coordinates.
        kind: structural kind (``paragraph``, ``heading``, ``cell``, ``code``, ``body``).
        span_class: TRUTH or CACHE.
        weight: ``weigh(S(node), kind, class)``; finite, >= 0.
        tokens: token count of ``text`` under the plan's accounting.
        text: canonical text slice (not hashed).
        location: where the span sits in its original document (page, heading path, notebook
            cell) as its ledger row records it; :data:`NOWHERE` when unknown. Not hashed.
    """

    span: SpanRef
    kind: str
    span_class: SpanClass
    weight: float
    tokens: int
    text: str = ""
    location: Location = NOWHERE

    def with_text(self, text: str) -> PlannedSpan:
        """This span with ``text`` (``dataclasses.replace(self, text=text)``, built by
        :func:`planned_span`: every plan fills the texts of its spans this way)."""
        return planned_span(self.span, self.kind, self.span_class, self.weight, self.tokens,
                            text, self.location)


# A frozen dataclass's __init__ sets each field through object.__setattr__ (a generic
# attribute lookup a field). The two constructors below set the same slots through their
# descriptors: the same objects (equal, hashed, ordered and printed alike), for the spans a
# plan builds one by one (its candidates, then its spans with their texts).
_NEW = object.__new__
_REF_SLOTS = tuple(SpanRef.__dict__[name].__set__
                   for name in ("source_id", "source_version_tx", "start", "end"))
_SPAN_SLOTS = tuple(PlannedSpan.__dict__[name].__set__
                    for name in ("span", "kind", "span_class", "weight", "tokens", "text",
                                 "location"))


def span_ref(source_id: str, source_version_tx: int, start: int, end: int) -> SpanRef:
    """``SpanRef(source_id, source_version_tx, start, end)``, built slot by slot."""
    ref: SpanRef = _NEW(SpanRef)
    set_source, set_tx, set_start, set_end = _REF_SLOTS
    set_source(ref, source_id)
    set_tx(ref, source_version_tx)
    set_start(ref, start)
    set_end(ref, end)
    return ref


def planned_span(span: SpanRef, kind: str, span_class: SpanClass, weight: float, tokens: int,
                 text: str = "", location: Location = NOWHERE) -> PlannedSpan:
    """``PlannedSpan(span=span, kind=kind, ...)`` with its fields in their order, built slot by
    slot."""
    out: PlannedSpan = _NEW(PlannedSpan)
    set_span, set_kind, set_class, set_weight, set_tokens, set_text, set_location = _SPAN_SLOTS
    set_span(out, span)
    set_kind(out, kind)
    set_class(out, span_class)
    set_weight(out, weight)
    set_tokens(out, tokens)
    set_text(out, text)
    set_location(out, location)
    return out


@dataclass(slots=True)
class PlanStats:
    """Counters of one plan (seed "PlanStats" plus one per skip outcome).

    Recall counters (Phase A) and selection counters (Phase B) share this one record.
    """

    pool_spans: int = 0
    selected_spans: int = 0
    deduped: int = 0
    skipped_unpackable: int = 0
    skipped_budget_full: int = 0
    cap_skipped: int = 0
    budget_stranded_by_cap: int = 0
    cap_tokens: int = 0
    token_estimate: bool = False
    nodes_recalled: int = 0
    nodes_without_spans: int = 0
    kind_missing: int = 0
    slices_missing: int = 0
    pool_duplicates: int = 0
    structured_hits: int = 0
    semantic_hits: int = 0
    expanded_hits: int = 0
    nodes_not_live: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Explanation:
    """Why one pool candidate is or is not in the plan.

    ``deduped_by`` is set only for ``CandidateFate.DEDUPED``; ``density`` is
    ``weight / max(1, tokens)``.
    """

    candidate: PlannedSpan
    fate: CandidateFate
    density: float
    deduped_by: SpanRef | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidencePlan:
    """The planner's answer.

    Attributes:
        plan_model: ``"v1"``.
        spans: selected spans in canonical coordinate order.
        budget: effective budget B in tokens.
        used: tokens packed (``used <= budget``).
        stats: counters.
        plan_hash: ``b3:`` + 64 lowercase hex (plan hash v1).
        explanations: every candidate's fate, when requested; else empty.
    """

    plan_model: str
    spans: tuple[PlannedSpan, ...]
    budget: int
    used: int
    stats: PlanStats
    plan_hash: str
    explanations: tuple[Explanation, ...] = field(default=())


_PLAN_SLOTS = tuple(EvidencePlan.__dict__[name].__set__
                    for name in ("plan_model", "spans", "budget", "used", "stats", "plan_hash",
                                 "explanations"))


def evidence_plan(plan_model: str, spans: tuple[PlannedSpan, ...], budget: int, used: int,
                  stats: PlanStats, plan_hash: str,
                  explanations: tuple[Explanation, ...] = ()) -> EvidencePlan:
    """``EvidencePlan(plan_model=plan_model, ...)`` with its fields in their order, built slot
    by slot (as :func:`planned_span`: every plan builds one, then one with its texts)."""
    out: EvidencePlan = _NEW(EvidencePlan)
    set_model, set_spans, set_budget, set_used, set_stats, set_hash, set_explanations = (
        _PLAN_SLOTS)
    set_model(out, plan_model)
    set_spans(out, spans)
    set_budget(out, budget)
    set_used(out, used)
    set_stats(out, stats)
    set_hash(out, plan_hash)
    set_explanations(out, explanations)
    return out
