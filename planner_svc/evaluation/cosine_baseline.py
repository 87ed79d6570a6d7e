"""The naive cosine baseline: top-k passages by cosine similarity, packed in rank order.

It uses the same store, embedder and vector index as the planner, with no structured leg, no
hop expansion, no dedup, no density packing and no per-source cap: passages are taken in rank
order and the first one whose spans do not fit the remaining budget ends the plan
(:func:`planner_svc.evaluation.packing.pack_until_full`). Tokens are counted with the planner's
estimator so both spend the same currency.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from planner_svc.core.tokens import estimate_tokens
from planner_svc.evaluation.packing import Candidate

if TYPE_CHECKING:
    from planner_svc.embed.base import Embedder
    from planner_svc.index.vector_index import VectorIndex
    from planner_svc.store.open import AnyStore

DEFAULT_COSINE_K = 50
"""Passages the cosine baseline considers by default."""


def cosine_candidates(
    store: AnyStore,
    index: VectorIndex,
    embedder: Embedder,
    question: str,
    *,
    k: int,
    valid_us: int,
    tx_us: int,
) -> list[Candidate]:
    """The top-``k`` passages by cosine similarity to ``question``, best first.

    Each candidate holds the passage's provenance spans that can be sliced, costed with
    :func:`~planner_svc.core.tokens.estimate_tokens`; a passage missing as of the given times,
    without provenance, or with no sliceable span is left out (so fewer than ``k`` may return).

    Args:
        store, index, embedder: the planner's backends.
        question: the question text, embedded as the query.
        k: passages considered.
        valid_us, tx_us: as-of times, microseconds since the epoch.
    """
    vec = embedder.embed([question])[0]
    hits = index.search(vec, k, valid_us=valid_us, tx_us=tx_us, live=store)
    nodes = store.get_many_as_of([hit.node_id for hit in hits], valid_us, tx_us)
    out: list[Candidate] = []
    for hit in hits:
        node = nodes.get(hit.node_id)
        if node is None or not node.provenance:
            continue
        keys = [ref.key for ref in node.provenance]
        slices = store.canonical_slices(keys)
        pieces = tuple((key[0], slices[key]) for key in keys if key in slices)
        if pieces:
            out.append(Candidate(pieces=pieces,
                                 tokens=sum(estimate_tokens(text) for _, text in pieces)))
    return out
