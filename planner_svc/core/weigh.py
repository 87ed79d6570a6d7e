"""Span weighting: w(span) = S(node) x kind prior (x cache discount).

Source: memory-planner seed, "Exploding nodes to spans". The multiplication order is fixed
(score x prior first, then the discount) so every platform computes the identical IEEE-754 double,
which the plan hash encodes bit for bit.
"""

from __future__ import annotations

from collections.abc import Callable

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


def prior_lookup(config: SelectionSettings) -> Callable[[str, float], float]:
    """``weigh``'s prior lookup as one bound ``dict.get``, for a loop over many spans:
    ``score * prior_lookup(config)(kind, 1.0)`` is ``weigh(score, kind, SpanClass.TRUTH,
    config)``, the same double (the same single product), without a call per span."""
    return dict(config.kind_priors).get
