"""The naive baseline: top-k passages by cosine, added in rank order until the budget is full.

It uses the same store, embedder and vector index as the planner, with no structured leg, no
hop expansion, no dedup, no density packing and no per-source cap: the first passage whose
spans do not fit the remaining budget ends the plan. Tokens are counted with the planner's
estimator so both spend the same currency.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from planner_svc.core.tokens import estimate_tokens


@dataclass(frozen=True, slots=True, kw_only=True)
class BaselinePlan:
    """Selected spans as parallel tuples (source ids, texts) and tokens used."""

    source_ids: tuple[str, ...]
    texts: tuple[str, ...]
    used: int


def baseline_plan(
    store: Any,
    index: Any,
    embedder: Any,
    question: str,
    *,
    budget: int,
    k: int,
    valid_us: int,
    tx_us: int,
) -> BaselinePlan:
    """Top-``k`` passages by cosine similarity to ``question`` packed in rank order.

    Args:
        store, index, embedder: the planner's backends.
        budget: tokens available.
        k: passages considered.
        valid_us, tx_us: as-of times, microseconds.
    """
    vec = embedder.embed([question])[0]
    hits = index.search(vec, k, valid_us=valid_us, tx_us=tx_us, source=store)
    nodes = store.get_many_as_of([hit.node_id for hit in hits], valid_us, tx_us)
    source_ids: list[str] = []
    texts: list[str] = []
    used = 0
    for node_id in (hit.node_id for hit in hits):
        node = nodes.get(node_id)
        if node is None or not node.provenance:
            continue
        keys = [ref.key for ref in node.provenance]
        slices = store.canonical_slices(keys)
        pieces = [(key[0], slices[key]) for key in keys if key in slices]
        cost = sum(estimate_tokens(text) for _, text in pieces)
        if used + cost > budget:
            break
        used += cost
        for source_id, text in pieces:
            source_ids.append(source_id)
            texts.append(text)
    return BaselinePlan(source_ids=tuple(source_ids), texts=tuple(texts), used=used)
