"""Recall settings: how documents, hops and passages are scored, and when recall abstains.

Validated at construction (rejected, never clamped); every field names its unit or range. The
defaults were chosen on the development questions of the demo corpus (README, "Plan quality"):
leg scores relative to the leg's best raised to 4 (BM25) and 8 (cosine, whose unrelated
neighbours sit close to the best one), hops worth the edge's weight times 0.8, a document's
score squared before it weights its passages, its least relevant passage keeping 0.3 of that
and each later rank half the one before, and
abstention when the best documents hold less than 0.40 of the question's information and no
passage is closer than 0.65 to it. The development questions the corpus cannot answer reach at
most 0.39 and 0.63 (one question past both); the answerable ones at least 0.52. A wrong refusal
costs more than a junk plan the caller can still judge, so the thresholds sit just above the
unanswerable questions rather than midway.
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
"""A score's sharpness exponent."""
UNIT_OPEN = Bounds(0.0, 1.0, low_open=True)
"""A factor in (0, 1]."""
UNIT = Bounds(0.0, 1.0)
"""A share or a threshold in [0, 1]."""
DEFAULT_RESULTS = Bounds(1, MAX_LEG_RESULTS)
"""A leg's default ``k`` / ``limit``."""
DOCUMENTS = Bounds(1, 10000)
"""Candidate documents of one plan."""
HOP_SOURCES = Bounds(0, 1000)
"""Documents whose edges are followed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RecallSettings:
    """Tunable recall behaviour (see :mod:`planner_svc.recall.engine` for what each does).

    Attributes:
        structured_sharpness: exponent on a document's structured score relative to the leg's
            best, in [0.1, 16] (integral values are exactly reproducible).
        semantic_sharpness: the same for the semantic leg, in [0.1, 16].
        hop_decay: score factor per hop, times the edge's weight, in (0, 1].
        hop_sources: best documents whose edges to other documents are followed, 0..1000.
        candidate_documents: documents whose passages enter the pool, 1..10000.
        document_sharpness: exponent on a candidate document's score before it weights the
            document's passages, in [0.1, 16]: above 1, the best documents' further passages
            come before the best passages of documents far below them.
        passage_floor: share of its document's score a document's least relevant passage
            keeps, in [0, 1].
        passage_decay: score factor per rank of a passage within its document, in (0, 1].
        local_sharpness: exponent on a passage's cosine relative to its document's best (and
            on a hop target's residual cosine relative to the best target), in [0.1, 16].
        abstain_coverage: recall abstains when the best document (or linked pair) holds less
            than this share of the question's idf-weighted terms ...
        abstain_similarity: ... and no passage's cosine similarity to the question reaches
            this (the similarity does not count when no document holds any of the question's
            terms); in [0, 1] each (0 and 0 switch abstention off).
        default_k: semantic neighbours when a request names none, 1..1000.
        default_limit: documents the structured leg keeps when a request names none, 1..1000.
    """

    structured_sharpness: float = 4.0
    semantic_sharpness: float = 8.0
    hop_decay: float = 0.8
    hop_sources: int = 10
    candidate_documents: int = 60
    document_sharpness: float = 2.0
    passage_floor: float = 0.3
    passage_decay: float = 0.5
    local_sharpness: float = 4.0
    abstain_coverage: float = 0.40
    abstain_similarity: float = 0.65
    default_k: int = 50
    default_limit: int = 50

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "structured_sharpness": SHARPNESS,
        "semantic_sharpness": SHARPNESS,
        "hop_decay": UNIT_OPEN,
        "hop_sources": HOP_SOURCES,
        "candidate_documents": DOCUMENTS,
        "document_sharpness": SHARPNESS,
        "passage_floor": UNIT,
        "passage_decay": UNIT_OPEN,
        "local_sharpness": SHARPNESS,
        "abstain_coverage": UNIT,
        "abstain_similarity": UNIT,
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
