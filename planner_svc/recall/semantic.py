"""Semantic recall leg: nearest live vectors, similarity fused with confidence decay.

Source: DESIGN section 5, leg 2; memory-planner seed, "Phase A" (``fuse(sim, decay, alpha)``).
Cosine similarity is rounded to :data:`SIMILARITY_DECIMALS` decimal places and clamped into
[0, 1] before fusion; the decay of a node is its confidence times ``0.5 ** (age / half_life)``,
age being ``at_valid - valid_from`` (never negative).
"""

from __future__ import annotations

import math

import numpy as np

from planner_svc.core.errors import BackendUnavailable, InvalidRequest
from planner_svc.core.fusion import clamp_unit, fuse
from planner_svc.recall.ports import QueryEmbedder, RecallStore, VectorSearch
from planner_svc.recall.request import SemanticLeg

DEFAULT_HALF_LIFE_US = 365 * 24 * 3600 * 1_000_000
"""Confidence half-life with age: one year, in microseconds."""
SIMILARITY_DECIMALS = 6
"""Decimal places kept of a cosine similarity. FAISS computes inner products in float32 and
sums them in an order that depends on the SIMD code path of the machine, so the same query can
differ in the last bits (about 1e-7) across machines; weights enter the plan hash bit for bit.
Rounding (Python's :func:`round`, exact decimal rounding of the double) absorbs those
differences, except for a similarity within about 1e-7 of a rounding boundary."""


def _similarity(raw: float) -> float:
    """A raw float32 similarity, rounded to :data:`SIMILARITY_DECIMALS` places and clamped."""
    return clamp_unit(round(float(raw), SIMILARITY_DECIMALS))


def confidence_decay(confidence: float, valid_from_us: int, at_valid_us: int,
                     half_life_us: int = DEFAULT_HALF_LIFE_US) -> float:
    """``confidence * 0.5 ** (age / half_life)`` clamped into [0, 1]."""
    age = max(0, at_valid_us - valid_from_us)
    return clamp_unit(confidence * math.pow(0.5, age / half_life_us))


def query_vector(leg: SemanticLeg, embedder: QueryEmbedder | None) -> np.ndarray:
    """The leg's query as a float32 vector of the embedder's dimension.

    Text may embed to the zero vector (no known token); the caller then gets no semantic hit.

    Raises:
        InvalidRequest: ``semantic.vector`` of the wrong dimension, not finite, or all zeros.
        BackendUnavailable: text was given but no embedder is configured.
    """
    if leg.vector is not None:
        vec = np.asarray(leg.vector, dtype=np.float32)
        if embedder is not None and vec.shape != (embedder.dim,):
            raise InvalidRequest(
                "semantic.vector",
                f"must have {embedder.dim} values (the index dimension), got {vec.shape[0]}",
            )
        if not np.all(np.isfinite(vec)):
            raise InvalidRequest("semantic.vector", "values must be finite")
        if not np.any(vec):
            raise InvalidRequest("semantic.vector", "has norm 0; a direction is needed")
        return vec
    if embedder is None:
        raise BackendUnavailable("semantic recall needs an embedder; none is configured")
    return np.asarray(embedder.embed([leg.text or ""])[0], dtype=np.float32)


def semantic_leg(
    store: RecallStore,
    index: VectorSearch | None,
    embedder: QueryEmbedder | None,
    leg: SemanticLeg,
    *,
    valid_us: int,
    tx_us: int,
) -> dict[str, float]:
    """Node id -> fused score in [0, 1] for the ``leg.k`` nearest live node versions.

    Raises:
        BackendUnavailable: no vector index is configured (the leg never silently skips).
        InvalidRequest: see :func:`query_vector`.
    """
    if index is None:
        raise BackendUnavailable("semantic recall needs a vector index; none is configured")
    vec = query_vector(leg, embedder)
    if not np.any(vec):  # text with no known token: no direction, so no semantic hit
        return {}
    hits = index.search(vec, leg.k, valid_us=valid_us, tx_us=tx_us, source=store)
    if not hits:
        return {}
    scores: dict[str, float] = {}
    if leg.alpha == 1.0:
        for node_id, sim in hits:
            scores[node_id] = _similarity(sim)
        return scores
    nodes = store.get_many_as_of([n for n, _ in hits], valid_us, tx_us)
    for node_id, sim in hits:
        node = nodes.get(node_id)
        if node is None:
            continue
        decay = confidence_decay(node.confidence, node.valid_from_us, valid_us)
        scores[node_id] = fuse(_similarity(sim), decay, leg.alpha)
    return scores
