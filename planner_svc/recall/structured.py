"""Structured recall leg: label/property filters plus FTS5 BM25 full text.

Source: docs/architecture.md, "Recall and selection" (leg 1). Raw BM25 scores are unbounded; they
are mapped into [0, 1] once, here, by dividing by the best score of the result set, so the strongest
match scores 1.0 and the order is kept; a filter-only result scores every hit 1.0. The planner then
only applies the leg's sharpness (:func:`planner_svc.core.fusion.sharpen`).
"""

from __future__ import annotations

from planner_svc.recall.ports import RecallStore
from planner_svc.recall.request import StructuredLeg


def normalise_scores(hits: list[tuple[str, float]]) -> dict[str, float]:
    """Map raw scores (higher = better, may be <= 0) into [0, 1] by the top score.

    A result set whose best score is not positive (filter-only recall) scores every hit 1.0.
    """
    if not hits:
        return {}
    top = max(score for _, score in hits)
    if top <= 0.0:
        return {node_id: 1.0 for node_id, _ in hits}
    return {node_id: max(0.0, min(1.0, score / top)) for node_id, score in hits}


def structured_leg(
    store: RecallStore, leg: StructuredLeg, *, valid_us: int, tx_us: int
) -> dict[str, float]:
    """Node id -> score in [0, 1] for the nodes live as-of that match the leg."""
    hits = store.search_text(
        leg.text,
        labels=leg.labels,
        properties=dict(leg.properties),
        valid_us=valid_us,
        tx_us=tx_us,
        limit=leg.limit,
    )
    return normalise_scores(hits)
