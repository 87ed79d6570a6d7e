"""The evidence planner: Phase A recall, then Phase B selection, returning a hashed plan.

Source: memory-planner seed ("Phase A", "Exploding nodes to spans", "Phase B"); see also
docs/architecture.md, "Recall and selection". Legs run in a fixed order (structured, semantic,
expansion); their node maps are fused by max; the pool goes to the pure core for selection and
hashing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import Cancelled, InsufficientEvidence
from planner_svc.core.fusion import max_fuse, relative_scores, sharpen
from planner_svc.core.model import CoordKey, EvidencePlan, PlanStats
from planner_svc.core.plan import build_plan, empty_plan
from planner_svc.core.tokens import TokenAccounting
from planner_svc.recall.expand import expand
from planner_svc.recall.explode import Pool, explode
from planner_svc.recall.ports import QueryEmbedder, RecallStore, VectorSearch
from planner_svc.recall.request import EvidenceQuery
from planner_svc.recall.semantic import semantic_leg
from planner_svc.recall.settings import RecallSettings
from planner_svc.recall.structured import structured_leg


@dataclass(frozen=True, slots=True, kw_only=True)
class LegTrace:
    """Per-node scores from each leg, for ``explain``.

    ``origin`` maps each pool coordinate to the node whose score gave its weight.
    """

    structured: Mapping[str, float] = field(default_factory=dict)
    semantic: Mapping[str, float] = field(default_factory=dict)
    expanded: Mapping[str, float] = field(default_factory=dict)
    fused: Mapping[str, float] = field(default_factory=dict)
    origin: Mapping[CoordKey, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceResult:
    """A plan and, when explain was asked, the leg trace behind its candidates."""

    plan: EvidencePlan
    trace: LegTrace | None = None


class EvidencePlanner:
    """Plans evidence over one store, vector index and embedder.

    Thread-safe when its backends are (it keeps no per-request state). Every store read of one
    plan runs inside the store's :meth:`~RecallStore.snapshot`, so a plan sees one state.

    Args:
        store: node, edge, span-ledger and source reads.
        index: vector search; None disables the semantic leg (a request that asks for it then
            fails with BackendUnavailable rather than silently skipping the leg).
        embedder: embeds semantic query text; None means only query vectors are accepted.
        config: weighting and selection defaults.
        counter: exact token accounting per model; None = estimator only.
        recall: leg calibration and expansion settings.
    """

    def __init__(
        self,
        store: RecallStore,
        *,
        index: VectorSearch | None,
        embedder: QueryEmbedder | None,
        config: SelectionSettings,
        counter: TokenAccounting | None = None,
        recall: RecallSettings | None = None,
    ) -> None:
        self._store = store
        self._index = index
        self._embedder = embedder
        self.config = config
        self._counter = counter
        self.recall = recall or RecallSettings()

    def plan(
        self, query: EvidenceQuery, *, cancelled: Callable[[], bool] = lambda: False
    ) -> EvidenceResult:
        """Recall, select and hash.

        Raises:
            InsufficientEvidence: the pool is empty and ``allow_ungrounded`` is false.
            BackendUnavailable: the semantic leg was asked for without an index/embedder.
            InvalidRequest: the query vector or settings are invalid.
            Cancelled: ``cancelled()`` turned true between stages.
        """
        stats = PlanStats()
        # One consistent store state for every read of the plan: a write committed while the
        # legs run is seen by none of them rather than by the later ones only.
        with self._store.snapshot():
            legs, pool = self._recall(query, stats, cancelled)
        self._check(cancelled)
        if not pool.candidates:
            if query.allow_ungrounded:
                return EvidenceResult(plan=empty_plan(stats))
            raise InsufficientEvidence(
                f"recall found no evidence span ({len(legs.fused)} nodes recalled, "
                f"{stats.nodes_without_spans} without spans, {stats.slices_missing} slices missing)"
            )
        context_window = (
            self._counter.context_window(query.model)
            if self._counter is not None and query.model
            else None
        )
        plan = build_plan(
            pool.candidates,
            requested_budget=query.budget_tokens,
            context_window=context_window,
            estimate_mode=pool.estimate_mode,
            max_frac_per_source=query.max_frac_per_source,
            dedup_overlap=query.dedup_overlap,
            recall_stats=stats,
            explain=query.explain,
        )
        return EvidenceResult(plan=plan, trace=legs if query.explain else None)

    def _recall(
        self, query: EvidenceQuery, stats: PlanStats, cancelled: Callable[[], bool]
    ) -> tuple[LegTrace, Pool]:
        """Phase A: the legs, their fusion and the candidate pool (every store read)."""
        valid_us, tx_us = query.at_valid_us, query.at_tx_us
        structured: dict[str, float] = {}
        semantic: dict[str, float] = {}
        settings = self.recall
        if query.structured is not None:
            # Already in [0, 1] relative to the best hit (filter-only: 1.0); only sharpen.
            structured = sharpen(
                structured_leg(self._store, query.structured, valid_us=valid_us, tx_us=tx_us),
                settings.structured_sharpness,
            )
        self._check(cancelled)
        if query.semantic is not None:
            semantic = relative_scores(
                semantic_leg(self._store, self._index, self._embedder, query.semantic,
                             valid_us=valid_us, tx_us=tx_us),
                settings.semantic_sharpness,
            )
        self._check(cancelled)
        seeds = max_fuse([structured, semantic])
        expanded: dict[str, float] = {}
        if query.expand_depth > 0 and seeds:
            best_seeds = dict(
                sorted(seeds.items(), key=lambda item: (-item[1], item[0]))[
                    : settings.expand_seeds
                ]
            )
            expanded = expand(self._store, best_seeds, query.expand_depth, valid_us=valid_us,
                              tx_us=tx_us, hop_decay=settings.hop_decay,
                              max_frontier=settings.max_frontier)
        self._check(cancelled)
        fused = max_fuse([seeds, expanded])
        stats.structured_hits = len(structured)
        stats.semantic_hits = len(semantic)
        stats.expanded_hits = len(expanded)
        stats.nodes_recalled = len(fused)
        pool = explode(self._store, fused, valid_us=valid_us, tx_us=tx_us, config=self.config,
                       counter=self._counter, model=query.model, stats=stats,
                       cancelled=cancelled)
        legs = LegTrace(structured=structured, semantic=semantic, expanded=expanded,
                        fused=fused, origin=pool.origin)
        return legs, pool

    @staticmethod
    def _check(cancelled: Callable[[], bool]) -> None:
        if cancelled():
            raise Cancelled("request cancelled")
