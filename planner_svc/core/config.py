"""Selection settings of the evidence planner (weighting, cap, overlap, default budget) and their
validation.

Ratios are validated when the settings are built and rejected outright, never clamped
(memory-planner seed, "Configuration"). Every error names the field, the value and the allowed
range.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from planner_svc.core.errors import ConfigError
from planner_svc.core.limits import BUDGET_TOKENS, MAX_BUDGET_TOKENS, Bounds

DEFAULT_KIND_PRIORS: Mapping[str, float] = MappingProxyType(
    {"paragraph": 1.0, "cell": 0.9, "code": 0.9, "body": 1.0, "heading": 0.6}
)
"""Per-kind weight multipliers; a kind not listed gets 1.0."""

RATIO = Bounds(0.0, 1.0)
"""A ratio: ``dedup_overlap``, ``cache_discount``."""
MAX_FRAC_PER_SOURCE = Bounds(0.0, 1.0, low_open=True)
"""The per-source cap as a fraction of the budget."""
KIND_PRIOR = Bounds(0.0, 10.0)
"""A kind prior (weight multiplier)."""


def check_ratio(name: str, value: float, *, low: float = 0.0, high: float = 1.0) -> None:
    """Raise ConfigError unless ``low <= value <= high`` and ``value`` is finite.

    Raises:
        ConfigError: naming ``name``, the value and the allowed range.
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ConfigError(name, f"must be a number in [{low}, {high}], got {value!r}")
    if not math.isfinite(value) or not low <= value <= high:
        raise ConfigError(name, f"must be in [{low}, {high}], got {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class SelectionSettings:
    """Selection and weighting settings.

    Attributes:
        max_frac_per_source: hard per-source cap as a fraction of the budget, in (0, 1].
        dedup_overlap: overlap ratio above which two spans of one source version are
            duplicates, in [0, 1] (a span contained in another is always a duplicate).
        cache_discount: weight multiplier for CACHE-class spans, in [0, 1].
        kind_priors: weight multiplier per span kind, each in [0, 10].
        default_budget_tokens: budget when a request names none, tokens, 1..10,000,000.
    """

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "max_frac_per_source": MAX_FRAC_PER_SOURCE,
        "dedup_overlap": RATIO,
        "cache_discount": RATIO,
        "default_budget_tokens": BUDGET_TOKENS,
    })
    """The allowed interval of each scalar field (validation, flags and their help read it)."""

    max_frac_per_source: float = 0.4
    dedup_overlap: float = 0.5
    cache_discount: float = 0.5
    kind_priors: Mapping[str, float] = field(default_factory=lambda: dict(DEFAULT_KIND_PRIORS))
    default_budget_tokens: int = 6000

    def __post_init__(self) -> None:
        check_ratio("max_frac_per_source", self.max_frac_per_source)
        if self.max_frac_per_source not in MAX_FRAC_PER_SOURCE:
            raise ConfigError(
                "max_frac_per_source", f"must be in {MAX_FRAC_PER_SOURCE}, got 0.0"
            )
        check_ratio("dedup_overlap", self.dedup_overlap)
        check_ratio("cache_discount", self.cache_discount)
        for kind, prior in self.kind_priors.items():
            check_ratio(f"kind_priors.{kind}", prior, high=KIND_PRIOR.high)
        if (
            isinstance(self.default_budget_tokens, bool)
            or not isinstance(self.default_budget_tokens, int)
            or self.default_budget_tokens <= 0
        ):
            raise ConfigError(
                "default_budget_tokens",
                f"must be a positive integer, got {self.default_budget_tokens!r}",
            )
        if self.default_budget_tokens not in BUDGET_TOKENS:
            raise ConfigError(
                "default_budget_tokens",
                f"must be <= {MAX_BUDGET_TOKENS}, got {self.default_budget_tokens}",
            )
        object.__setattr__(self, "kind_priors", MappingProxyType(dict(self.kind_priors)))

    def __reduce__(self) -> tuple[object, tuple[dict[str, object]]]:
        """Pickle support (worker processes): the read-only priors travel as a plain dict."""
        return (_config_from_fields, ({
            "max_frac_per_source": self.max_frac_per_source,
            "dedup_overlap": self.dedup_overlap,
            "cache_discount": self.cache_discount,
            "kind_priors": dict(self.kind_priors),
            "default_budget_tokens": self.default_budget_tokens,
        },))

    def with_overrides(
        self, *, max_frac_per_source: float | None = None, dedup_overlap: float | None = None
    ) -> SelectionSettings:
        """A copy with per-request overrides applied (validated the same way)."""
        return SelectionSettings(
            max_frac_per_source=(
                self.max_frac_per_source if max_frac_per_source is None else max_frac_per_source
            ),
            dedup_overlap=self.dedup_overlap if dedup_overlap is None else dedup_overlap,
            cache_discount=self.cache_discount,
            kind_priors=self.kind_priors,
            default_budget_tokens=self.default_budget_tokens,
        )


def _config_from_fields(fields: dict[str, object]) -> SelectionSettings:
    return SelectionSettings(**fields)  # type: ignore[arg-type]
