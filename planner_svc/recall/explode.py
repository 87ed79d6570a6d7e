"""Explode recalled nodes to their provenance spans: the candidate pool.

Source: memory-planner seed, "Exploding nodes to spans". Each node is re-read
as-of; a node with no live version or no provenance is dropped (counted); each span's kind comes
from the span ledger (missing row: ``body``, counted), its text from the source version (missing
slice, or a source version committed after the plan's transaction time: skipped, counted as
``slices_missing``), its tokens from the exact tokenizer of the model or the estimator, its
weight from ``weigh``. The pool is deduplicated on the exact coordinate, keeping the heaviest
candidate (ties: the first node in node-id order).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import CoordKey, PlannedSpan, PlanStats, SpanClass, SpanRef
from planner_svc.core.tokens import TokenAccounting, estimate_tokens
from planner_svc.core.weigh import weigh
from planner_svc.recall.ports import RecallStore


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """The candidate pool of one request.

    Attributes:
        candidates: unique by coordinate, in canonical coordinate order.
        origin: coordinate -> node id whose score produced the kept weight.
        estimate_mode: True when any candidate's tokens came from the estimator.
    """

    candidates: tuple[PlannedSpan, ...]
    origin: Mapping[CoordKey, str]
    estimate_mode: bool


def explode(
    store: RecallStore,
    scores: Mapping[str, float],
    *,
    valid_us: int,
    tx_us: int,
    config: SelectionSettings,
    counter: TokenAccounting | None,
    model: str,
    stats: PlanStats,
    cancelled: Callable[[], bool] = lambda: False,
) -> Pool:
    """Build the candidate pool from fused node scores (``node_id -> S(node)`` in [0, 1]).

    Updates ``stats`` (nodes_not_live, nodes_without_spans, kind_missing, slices_missing,
    pool_duplicates). ``cancelled`` is polled between nodes.
    """
    node_ids = sorted(scores)
    nodes = store.get_many_as_of(node_ids, valid_us, tx_us)
    refs: list[tuple[str, CoordKey]] = []
    for node_id in node_ids:
        node = nodes.get(node_id)
        if node is None:
            stats.nodes_not_live += 1
            continue
        if not node.provenance:
            stats.nodes_without_spans += 1
            continue
        for ref in node.provenance:
            if ref.source_version_tx > tx_us:
                # the version was not committed as of the plan: nothing there to cite
                stats.slices_missing += 1
            else:
                refs.append((node_id, ref.key))

    keys = {key for _, key in refs}
    kinds = store.span_kinds(keys)
    texts = store.canonical_slices(keys)
    best: dict[CoordKey, tuple[PlannedSpan, str]] = {}
    estimate_mode = False
    for node_id, key in refs:
        if cancelled():
            break
        text = texts.get(key)
        if text is None:
            stats.slices_missing += 1
            continue
        kind = kinds.get(key)
        if kind is None:
            stats.kind_missing += 1
            kind = "body"
        exact = counter.count(model, text) if counter is not None and model else None
        if exact is None:
            estimate_mode = True
            tokens = estimate_tokens(text)
        else:
            tokens = exact
        candidate = PlannedSpan(
            span=SpanRef(*key),
            kind=kind,
            span_class=SpanClass.TRUTH,
            weight=weigh(scores[node_id], kind, SpanClass.TRUTH, config),
            tokens=tokens,
            text=text,
        )
        current = best.get(key)
        if current is not None:
            stats.pool_duplicates += 1
            if candidate.weight <= current[0].weight:
                continue
        best[key] = (candidate, node_id)
    ordered = sorted(best)
    return Pool(
        candidates=tuple(best[k][0] for k in ordered),
        origin={k: best[k][1] for k in ordered},
        estimate_mode=estimate_mode,
    )
