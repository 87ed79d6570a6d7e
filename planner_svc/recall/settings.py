"""Recall settings: how each leg's scores are calibrated and how far expansion spreads.

Validated at construction (rejected, never clamped); every field names its unit or range.
The defaults were chosen on the development questions of the demo corpus (README, "Plan
quality"): per-leg calibration with sharpness 4 for BM25 and 8 for cosine similarity (whose
unrelated neighbours sit close to the best one), and one hop of decay 0.8.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from planner_svc.core.errors import ConfigError


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

    def __post_init__(self) -> None:
        for name in ("structured_sharpness", "semantic_sharpness"):
            value = getattr(self, name)
            if not math.isfinite(value) or not 0.1 <= value <= 16.0:
                raise ConfigError(name, f"must be in [0.1, 16], got {value!r}")
        if not math.isfinite(self.hop_decay) or not 0.0 < self.hop_decay <= 1.0:
            raise ConfigError("hop_decay", f"must be in (0, 1], got {self.hop_decay!r}")
        for name, high in (("max_frontier", 10000), ("expand_seeds", 10000),
                           ("default_k", 1000), ("default_limit", 1000)):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= high:
                raise ConfigError(name, f"must be an integer in 1..{high}, got {value!r}")
