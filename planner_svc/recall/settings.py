"""Recall settings: how each leg's scores are calibrated and how far expansion spreads.

Validated at construction (rejected, never clamped); every field names its unit or range.
The defaults were chosen on the development questions of the demo corpus (README, "Plan
quality"): per-leg calibration with sharpness 4 for BM25 and 8 for cosine similarity (whose
unrelated neighbours sit close to the best one), and one hop of decay 0.8.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import ClassVar

from planner_svc.core.errors import ConfigError
from planner_svc.core.limits import MAX_LEG_RESULTS, Bounds

SHARPNESS = Bounds(0.1, 16.0)
"""A leg's sharpness exponent."""
HOP_DECAY = Bounds(0.0, 1.0, low_open=True)
"""Score multiplier per hop."""
FRONTIER = Bounds(1, 10000)
"""Nodes kept per hop; leg hits seeding expansion."""
DEFAULT_RESULTS = Bounds(1, MAX_LEG_RESULTS)
"""A leg's default ``k`` / ``limit``."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSettings:
    """Tunable recall behaviour.

    Attributes:
        structured_sharpness: exponent applied to structured scores after dividing by the
            leg's best score; > 1 widens the gap between strong and weak matches, in [0.1, 16].
        semantic_sharpness: the same for semantic (fused) scores, in [0.1, 16].
        hop_decay: score multiplier per hop (times the edge weight), in (0, 1].
        max_frontier: nodes kept per hop, highest score first, 1..10000.
        expand_seeds: only the best this many leg hits seed hop expansion, 1..10000.
        default_k: semantic neighbours when a request names none, 1..1000.
        default_limit: structured hits when a request names none, 1..1000.
    """

    structured_sharpness: float = 4.0
    semantic_sharpness: float = 8.0
    hop_decay: float = 0.8
    max_frontier: int = 200
    expand_seeds: int = 10000
    default_k: int = 50
    default_limit: int = 50

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "structured_sharpness": SHARPNESS,
        "semantic_sharpness": SHARPNESS,
        "hop_decay": HOP_DECAY,
        "max_frontier": FRONTIER,
        "expand_seeds": FRONTIER,
        "default_k": DEFAULT_RESULTS,
        "default_limit": DEFAULT_RESULTS,
    })
    """The allowed interval of each field (validation, flags and their help read it)."""

    def __post_init__(self) -> None:
        for name, bounds in self.BOUNDS.items():
            value = getattr(self, name)
            if bounds.integral:
                if isinstance(value, bool) or not isinstance(value, int) or value not in bounds:
                    raise ConfigError(name, f"must be an integer in {bounds}, got {value!r}")
            elif not math.isfinite(value) or value not in bounds:
                raise ConfigError(name, f"must be in {bounds}, got {value!r}")
