"""Hop expansion: spread scores over live edges from the nodes the legs reached.

Source: docs/architecture.md, "Recall and selection" (leg 3). One hop from a node with score ``s``
over an edge of weight ``w`` gives ``s * w * hop_decay``; a node keeps the max over paths. Up to
``depth`` hops (0..2). Each hop keeps at most ``max_frontier`` new nodes (highest score, then node
id) so a hub node cannot flood the pool.
"""

from __future__ import annotations

from collections.abc import Mapping

from planner_svc.core.model import Direction
from planner_svc.recall.ports import RecallStore


def expand(
    store: RecallStore,
    seeds: Mapping[str, float],
    depth: int,
    *,
    valid_us: int,
    tx_us: int,
    hop_decay: float,
    max_frontier: int,
    direction: Direction = "out",
) -> dict[str, float]:
    """Node id -> best score reached by 1..depth hops (seed nodes only when improved).

    ``hop_decay`` and ``max_frontier`` have no default here: they come from
    :class:`planner_svc.recall.settings.RecallSettings`, the one place defaults live.

    Returns only nodes whose expanded score beats their seed score, so fusing with the seeds
    by max is exact.
    """
    best: dict[str, float] = dict(seeds)
    reached: dict[str, float] = {}
    frontier = dict(seeds)
    for _ in range(depth):
        if not frontier:
            break
        edges = store.edges_as_of(sorted(frontier), valid_us, tx_us, direction=direction)
        improved: dict[str, float] = {}
        for edge in edges:
            src, dst = (edge.src, edge.dst) if edge.src in frontier else (edge.dst, edge.src)
            if src not in frontier:
                continue
            score = frontier[src] * edge.weight * hop_decay
            if score > best.get(dst, 0.0) and score > improved.get(dst, 0.0):
                improved[dst] = score
        ranked = sorted(improved.items(), key=lambda item: (-item[1], item[0]))[:max_frontier]
        frontier = dict(ranked)
        for node_id, score in ranked:
            best[node_id] = score
            reached[node_id] = score
    return {node_id: reached[node_id] for node_id in sorted(reached)}
