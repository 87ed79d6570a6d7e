"""The validated, internal form of a plan request (one input dataclass per operation).

Built from ``planner.v1.PlanRequest`` by :func:`planner_svc.convert.plan_query_from_proto`;
every field is already range-checked, so recall code never re-validates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True, kw_only=True)
class StructuredLeg:
    """Structured recall leg: full-text terms plus label/property filters.

    ``limit`` is the maximum number of nodes the leg returns.
    """

    text: str
    labels: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    limit: int = 50


@dataclass(frozen=True, slots=True, kw_only=True)
class SemanticLeg:
    """Semantic recall leg: query text to embed or a caller-embedded unit vector.

    Exactly one of ``text`` / ``vector`` is set. ``alpha`` in [0, 1] blends similarity with
    confidence decay (1.0 = similarity only). ``k`` is the number of nearest live vectors.
    """

    text: str | None = None
    vector: tuple[float, ...] | None = None
    k: int = 50
    alpha: float = 1.0


@dataclass(frozen=True, slots=True, kw_only=True)
class PlanQuery:
    """A validated plan request.

    Attributes:
        structured, semantic: the recall legs (at least one is set).
        expand_depth: hop expansion depth, 0..2.
        at_valid_us, at_tx_us: as-of times in microseconds since the epoch.
        budget_tokens: requested budget in tokens.
        model: model whose token accounting applies ("" = estimator only).
        allow_ungrounded: empty plan instead of InsufficientEvidence.
        explain: attach each candidate's fate and leg scores.
        max_frac_per_source, dedup_overlap: selection settings.
    """

    structured: StructuredLeg | None
    semantic: SemanticLeg | None
    expand_depth: int
    at_valid_us: int
    at_tx_us: int
    budget_tokens: int
    model: str
    allow_ungrounded: bool
    explain: bool
    max_frac_per_source: float
    dedup_overlap: float
