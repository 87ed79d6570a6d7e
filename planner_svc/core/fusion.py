"""Recall-leg fusion helpers: the similarity/decay blend and max-fusion of node scores.

Sources: memory-planner seed, "Phase A: the three recall legs" (max over legs, the
``fuse(sim, decay, alpha)`` blend); docs/architecture.md, "Recall and selection".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping


def fuse(sim: float, decay: float, alpha: float) -> float:
    """Blend a similarity with a confidence decay: ``sim**alpha * decay**(1 - alpha)``.

    ``alpha == 1`` returns ``sim`` and ``alpha == 0`` returns ``decay`` exactly (fast paths that
    also avoid ``0**0``). Inputs are clamped by the caller to [0, 1].
    """
    if alpha == 1.0:
        return sim
    if alpha == 0.0:
        return decay
    return math.pow(sim, alpha) * math.pow(decay, 1.0 - alpha)


def clamp_unit(value: float) -> float:
    """Clamp a score into [0, 1]; NaN becomes 0."""
    if value != value:  # NaN
        return 0.0
    return 0.0 if value < 0.0 else 1.0 if value > 1.0 else value


def max_fuse(legs: Iterable[Mapping[str, float]]) -> dict[str, float]:
    """Merge per-leg ``node_id -> score`` maps, keeping the max score of each node.

    Returns a dict ordered by node_id so iteration order never depends on leg order.
    """
    merged: dict[str, float] = {}
    for leg in legs:
        for node_id, score in leg.items():
            current = merged.get(node_id)
            if current is None or score > current:
                merged[node_id] = score
    return {node_id: merged[node_id] for node_id in sorted(merged)}


def unit_power(base: float, exponent: float) -> float:
    """``base ** exponent`` computed the same way on every machine when ``exponent`` is integral.

    Weights enter the plan hash as raw IEEE-754 bits, so a weight must not depend on the
    platform's ``pow``, which is not correctly rounded everywhere. For an integral exponent
    ``n >= 1`` (the default sharpnesses 4 and 8) the power is a fixed chain of IEEE-754 double
    multiplications, each correctly rounded, hence bit-for-bit reproducible in any language:
    right-to-left binary exponentiation, i.e. ``result = 1.0; square = base``; for each bit of
    ``n`` from the lowest, ``result *= square`` when the bit is set, then ``square *= square``
    while higher bits remain (``n = 4``: ``(b*b)*(b*b)``; ``n = 8``: ``((b*b)**2)**2``).
    A non-integral exponent falls back to :func:`math.pow` and is reproducible only where the
    C library's ``pow`` agrees. ``exponent == 0`` gives 1.0.
    """
    exponent = float(exponent)
    if exponent.is_integer() and 0.0 <= exponent <= 1024.0:
        n = int(exponent)
        result = 1.0
        square = base
        while n:
            if n & 1:
                result *= square
            n >>= 1
            if n:
                square *= square
        return result
    return math.pow(base, exponent)


def sharpen(scores: Mapping[str, float], sharpness: float) -> dict[str, float]:
    """Raise scores already in [0, 1] to the power ``sharpness``: ``clamp(score) ** sharpness``.

    A sharpness above 1 widens the gap between strong and weak matches, so a long passage that
    answers outweighs a short one that merely resembles the question when packing by weight per
    token; 1.0 keeps each score. The power is :func:`unit_power` (exactly reproducible for an
    integral sharpness). Order of the returned dict: node id.
    """
    return {
        node_id: clamp_unit(unit_power(clamp_unit(scores[node_id]), sharpness))
        for node_id in sorted(scores)
    }


def relative_scores(scores: Mapping[str, float], sharpness: float) -> dict[str, float]:
    """Calibrate one leg: ``(score / best) ** sharpness`` for every node, in [0, 1].

    Dividing by the leg's best score puts legs with different raw scales on one footing before
    max-fusion; then :func:`sharpen`. A leg whose best score is not positive carries no signal
    (for instance every fused similarity underflowed to 0) and returns ``{}``: its nodes must
    not outrank real hits of another leg. Negative scores count as 0. Order: node id.
    """
    if not scores:
        return {}
    best = max(scores.values())
    if not best > 0.0:
        return {}
    return sharpen(
        {node_id: max(0.0, score) / best for node_id, score in scores.items()}, sharpness
    )
