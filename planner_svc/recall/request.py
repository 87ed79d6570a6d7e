"""The validated, internal form of a plan request (one input dataclass per operation).

Built from ``planner.v1.PlanRequest`` by
:func:`planner_svc.server.convert.evidence_query_from_proto`, or for a plain question by
:func:`question_query`; every field is already range-checked, so recall code never
re-validates.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import InvalidRequest
from planner_svc.core.limits import BUDGET_TOKENS
from planner_svc.recall.settings import RecallSettings


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
class EvidenceQuery:
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


QUESTION_EXPAND_DEPTH = 1
"""Hop expansion of the default request for a question (one hop over title mentions)."""


def question_query(
    question: str,
    *,
    config: SelectionSettings,
    recall: RecallSettings,
    now_us: int,
    semantic: bool = True,
    budget_tokens: int | None = None,
    at_valid_us: int | None = None,
    at_tx_us: int | None = None,
) -> EvidenceQuery:
    """The default query for a natural-language question: both recall legs from its text
    (the semantic one only when ``semantic``), one hop of expansion, the settings' defaults.

    It is the query the Plan RPC builds from ``planner-svc plan QUESTION``'s request
    (:func:`planner_svc.client.common.question_request`), so a research sub-question and the
    same question asked over gRPC get the same plan.

    Args:
        question: the question text.
        config: selection defaults (budget, cap, overlap).
        recall: leg defaults (``k``, ``limit``).
        now_us: the as-of times when absent, microseconds.
        semantic: add the semantic leg (False on a server without a vector index).
        budget_tokens: requested budget, tokens; None takes ``config.default_budget_tokens``.
        at_valid_us, at_tx_us: as-of times, microseconds; None = ``now_us``.

    Raises:
        InvalidRequest: (``question``) the question is blank; (``budget_tokens``) outside
            :data:`~planner_svc.core.limits.BUDGET_TOKENS`.
    """
    if not question.strip():
        raise InvalidRequest("question", "must not be blank")
    budget = config.default_budget_tokens if budget_tokens is None else budget_tokens
    if budget not in BUDGET_TOKENS:
        raise InvalidRequest("budget_tokens", f"must be in {BUDGET_TOKENS}, got {budget}")
    return EvidenceQuery(
        structured=StructuredLeg(text=question, limit=recall.default_limit),
        semantic=SemanticLeg(text=question, k=recall.default_k) if semantic else None,
        expand_depth=QUESTION_EXPAND_DEPTH,
        at_valid_us=now_us if at_valid_us is None else at_valid_us,
        at_tx_us=now_us if at_tx_us is None else at_tx_us,
        budget_tokens=budget,
        model="",
        allow_ungrounded=False,
        explain=False,
        max_frac_per_source=config.max_frac_per_source,
        dedup_overlap=config.dedup_overlap,
    )
