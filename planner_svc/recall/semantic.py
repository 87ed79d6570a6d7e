"""Semantic recall leg: nearest live vectors, similarity fused with confidence decay.

Source: docs/architecture.md, "Recall and selection" (leg 2) and "Reproducible
weights"; memory-planner seed, "Phase A" (``fuse(sim, decay,
alpha)``). The vector index only chooses candidates (it over-fetches :data:`CANDIDATE_MARGIN`
beyond ``k``); each candidate's cosine similarity is then computed here, exactly rounded in a
fixed order (:func:`exact_similarities`), and the ``k`` best by that similarity are kept (ties
by node id), so a weight never depends on how FAISS parallelises or which instruction set it
runs on. The similarity is clamped into [0, 1] before fusion; the decay of a node is its
confidence times ``0.5 ** (age / half_life)``, age being ``at_valid - valid_from`` (never
negative).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import BackendUnavailable, InvalidRequest
from planner_svc.core.fusion import clamp_unit, fuse
from planner_svc.embed.base import normalize_rows
from planner_svc.recall.dots import ordered_dots
from planner_svc.recall.ports import QueryEmbedder, RecallStore, VectorHitView, VectorSearch
from planner_svc.recall.request import SemanticLeg

DEFAULT_HALF_LIFE_US = 365 * 24 * 3600 * 1_000_000
"""Confidence half-life with age: one year, in microseconds."""
CANDIDATE_MARGIN = 16
"""Candidates fetched from the index beyond ``k`` (at least; ``2k`` for larger ``k``), so a
node whose index score sits a rounding error below the ``k``-th still competes exactly."""


def exact_similarities(
    query: npt.NDArray[np.float32], vectors: npt.NDArray[np.float32]
) -> npt.NDArray[np.float64]:
    """Inner products of float32 ``query`` ``(dim,)`` with float32 ``vectors`` ``(n, dim)``.

    Each product of two float32 values is exact in float64; the products are added in index
    order, each addition exactly rounded. The result is therefore the same bits on every
    machine. Returns float64 ``(n,)``.
    """
    matrix = np.asarray(vectors, dtype=np.float32)
    return ordered_dots(matrix, np.arange(matrix.shape[0], dtype=np.int64),
                        np.asarray(query, dtype=np.float32))


def confidence_decay(confidence: float, valid_from_us: int, at_valid_us: int,
                     half_life_us: int = DEFAULT_HALF_LIFE_US) -> float:
    """``confidence * 0.5 ** (age / half_life)`` clamped into [0, 1]."""
    age = max(0, at_valid_us - valid_from_us)
    return clamp_unit(confidence * math.pow(0.5, age / half_life_us))


def query_vector(leg: SemanticLeg, embedder: QueryEmbedder | None) -> npt.NDArray[np.float32]:
    """The leg's query as a unit float32 vector of the embedder's dimension.

    A caller's vector is normalised here (reproducibly, see
    :func:`~planner_svc.embed.base.normalize_rows`). Text may embed to the zero vector (no
    known token); the caller then gets no semantic hit.

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
        unit: npt.NDArray[np.float32] = normalize_rows(vec[None, :])[0]
        return unit
    if embedder is None:
        raise BackendUnavailable("semantic recall needs an embedder; none is configured")
    return np.asarray(embedder.embed([leg.text or ""])[0], dtype=np.float32)


def rescore(
    query: npt.NDArray[np.float32], hits: Sequence[VectorHitView], k: int
) -> list[tuple[str, float]]:
    """The ``k`` best hits by exact similarity (clamped into [0, 1]), ties by node id.

    The index's own scores are ignored: they only chose the candidates.
    """
    if not hits:
        return []
    sims = exact_similarities(query, np.stack([h.vector for h in hits])).tolist()
    best: dict[str, float] = {}
    for hit, sim in zip(hits, sims, strict=True):
        score = clamp_unit(sim)
        if score > best.get(hit.node_id, -1.0):
            best[hit.node_id] = score
    return sorted(best.items(), key=lambda item: (-item[1], item[0]))[:k]


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
    fetch = max(leg.k + CANDIDATE_MARGIN, 2 * leg.k)
    hits = rescore(vec, index.search(vec, fetch, valid_us=valid_us, tx_us=tx_us), leg.k)
    if not hits:
        return {}
    if leg.alpha == 1.0:
        return dict(hits)
    scores: dict[str, float] = {}
    nodes = store.get_many_as_of([n for n, _ in hits], valid_us, tx_us)
    for node_id, sim in hits:
        node = nodes.get(node_id)
        if node is None:
            continue
        decay = confidence_decay(node.confidence, node.valid_from_us, valid_us)
        scores[node_id] = fuse(sim, decay, leg.alpha)
    return scores
