"""Span weighting: w(span) = S(node) x kind prior (x cache discount).

Source: memory-planner seed, "Exploding nodes to spans". The multiplication order is fixed
(score x prior first, then the discount) so every platform computes the identical IEEE-754 double,
which the plan hash encodes bit for bit.
"""

from __future__ import annotations

from collections.abc import Sequence

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import SpanClass


def weigh(score: float, kind: str, span_class: SpanClass, config: SelectionSettings) -> float:
    """Weight of one span exploded from a node with fused score ``score``.

    Args:
        score: fused node score S(node), in [0, 1].
        kind: span kind; unknown kinds get prior 1.0.
        span_class: TRUTH keeps the base weight; CACHE multiplies it by ``cache_discount``.
        config: priors and discount.
    Returns:
        The weight, a finite double >= 0 for finite non-negative inputs.
    """
    prior = config.kind_priors.get(kind, 1.0)
    base = score * prior
    if span_class is SpanClass.CACHE:
        return base * config.cache_discount
    return base


def weigh_all(scores: Sequence[float], kinds: Sequence[str], span_class: SpanClass,
              config: SelectionSettings) -> list[float]:
    """:func:`weigh` of each ``(scores[i], kinds[i])`` pair, in order: the same operations in
    the same order per span (so the same bits), in one call for a whole pool.

    Raises:
        ValueError: ``scores`` and ``kinds`` differ in length.
    """
    if len(scores) != len(kinds):
        raise ValueError(f"{len(scores)} scores but {len(kinds)} kinds")
    priors = config.kind_priors
    bases = [score * priors.get(kind, 1.0) for score, kind in zip(scores, kinds, strict=True)]
    if span_class is SpanClass.CACHE:
        discount = config.cache_discount
        return [base * discount for base in bases]
    return bases
