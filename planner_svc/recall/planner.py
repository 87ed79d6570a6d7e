"""The evidence planner: Phase A recall, then Phase B selection, returning a hashed plan.

Source: memory-planner seed ("Phase A", "Exploding nodes to spans", "Phase B"); see also
docs/architecture.md, "Recall and selection". Phase A runs over the recall catalog, caught up
with the store first (:mod:`planner_svc.index.catalog_sync`), and scores documents, hops and
passages (:mod:`planner_svc.recall.engine`); each node's score becomes its spans' weights
through ``weigh``; Phase B (pure core) selects and hashes. A question nothing in the store
supports is declined (:class:`~planner_svc.core.errors.InsufficientEvidence`) from absolute
evidence, not from scores made relative to the best hit.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import repeat
from operator import attrgetter, itemgetter, lt
from typing import Protocol

import numpy as np
import numpy.typing as npt
import structlog

from planner_svc.clock import wall_clock_us
from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import (
    BackendUnavailable,
    Cancelled,
    InsufficientEvidence,
    PlannerError,
)
from planner_svc.core.model import (
    CoordKey,
    EvidencePlan,
    Explanation,
    PlannedSpan,
    PlanStats,
    SpanClass,
    evidence_plan,
    planned_span,
    span_ref,
)
from planner_svc.core.plan import assemble_plan, empty_plan
from planner_svc.core.select import PoolColumns, select_columns
from planner_svc.core.tokens import TokenAccounting, effective_budget
from planner_svc.core.weigh import prior_lookup
from planner_svc.index.catalog import Catalog, SpanInfo
from planner_svc.index.catalog_sync import CatalogFeed, FreshCatalog
from planner_svc.index.source import VectorRows, VersionIds
from planner_svc.jit import compile_all
from planner_svc.recall.dots import ordered_dots
from planner_svc.recall.engine import (
    DocumentScore,
    EngineQuery,
    Evidence,
    NodeScore,
    Recalled,
    filtered_nodes,
    recall_documents,
)
from planner_svc.recall.exact_rank import ranked_dots
from planner_svc.recall.ports import QueryEmbedder, RecallStore, VectorSearch
from planner_svc.recall.request import EvidenceQuery, question_query
from planner_svc.recall.semantic import CANDIDATE_MARGIN, query_vector
from planner_svc.recall.settings import RecallSettings
from planner_svc.recall.slots import PlanSlots
from planner_svc.recall.span_texts import DEFAULT_SPAN_TEXT_BYTES, SpanTexts
from planner_svc.recall.timing import StageClock

__all__ = ["Abstention", "EvidencePlanner", "EvidenceResult", "LegTrace"]

_ESTIMATED_TOKENS = attrgetter("estimated_tokens")
_NODE = itemgetter(2)

Vector = npt.NDArray[np.float32]


class PlannerStore(RecallStore, CatalogFeed, Protocol):
    """The store as the evidence planner reads it: the recall reads and the change feed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Abstention:
    """Recall's decision on whether the store supports an answer, and its inputs.

    Attributes:
        evidence: the absolute evidence measured (:class:`~planner_svc.recall.engine.Evidence`).
        min_coverage, min_similarity: the thresholds (recall settings).
        declined: True when coverage < min_coverage and either no document holds any of the
            question's terms (``evidence.best_source`` is None) or the similarity (when
            measured) is below min_similarity.
    """

    evidence: Evidence
    min_coverage: float
    min_similarity: float
    declined: bool

    def metadata(self) -> dict[str, str]:
        """The decision's inputs as strings (for ``ErrorInfo.metadata``); similarity is
        ``n/a`` without the semantic leg, and ``live_documents`` (a decimal count of the
        documents stored as of the plan's transaction time) ``n/a`` when not counted."""
        similarity = self.evidence.similarity
        live = self.evidence.live_documents
        return {
            "coverage": f"{self.evidence.coverage:.4f}",
            "similarity": "n/a" if similarity is None else f"{similarity:.4f}",
            "min_coverage": f"{self.min_coverage:.4f}",
            "min_similarity": f"{self.min_similarity:.4f}",
            "best_source": self.evidence.best_source or "",
            "live_documents": "n/a" if live is None else str(live),
        }

    def describe(self) -> str:
        """One line for an error message or a log: the decision and its inputs."""
        similarity = self.evidence.similarity
        shown = "n/a" if similarity is None else f"{similarity:.3f}"
        if self.evidence.live_documents == 0:
            return ("nothing is stored as of the plan's transaction time (at_tx): nothing was "
                    "written by then, or the store is empty")
        if self.evidence.best_source is None:
            return (f"no document holds any of the question's terms (coverage "
                    f"{self.evidence.coverage:.3f}, at least {self.min_coverage:.2f} needed); "
                    f"the closest passage's similarity {shown} does not count without one")
        return (f"the best documents hold {self.evidence.coverage:.3f} of the question's "
                f"information (at least {self.min_coverage:.2f} needed) and the closest passage "
                f"has similarity {shown} (at least {self.min_similarity:.2f} needed)")


@dataclass(frozen=True, slots=True, kw_only=True)
class LegTrace:
    """Why each candidate has its weight, for ``explain``.

    Attributes:
        structured, semantic, expanded: node id -> its document's structured, semantic and hop
            score (only nodes whose document the leg reached).
        fused: node id -> the node's score (what ``weigh`` turned into span weights).
        origin: each pool coordinate -> the node whose score gave its weight.
        documents: the candidate documents, best first.
        nodes: node id -> its score, local relevance and rank in its document.
        abstention: the abstention decision (None when the request has no question text).
        residual: for each document ranked by a hop, the question's terms it was ranked on.
    """

    structured: Mapping[str, float] = field(default_factory=dict)
    semantic: Mapping[str, float] = field(default_factory=dict)
    expanded: Mapping[str, float] = field(default_factory=dict)
    fused: Mapping[str, float] = field(default_factory=dict)
    origin: Mapping[CoordKey, str] = field(default_factory=dict)
    documents: tuple[DocumentScore, ...] = ()
    nodes: Mapping[str, NodeScore] = field(default_factory=dict)
    abstention: Abstention | None = None
    residual: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class EvidenceResult:
    """A plan and, when explain was asked, the trace behind its candidates."""

    plan: EvidencePlan
    trace: LegTrace | None = None


class _Semantic:
    """The semantic leg bound to one plan (``SemanticAccess`` of the engine): its as-of times,
    its recall catalog, and the index as it stood when the plan first needed it.

    Liveness of the index's candidates comes from the catalog, which the plan brought up to
    the store inside its snapshot: a version the catalog does not hold is not live for the
    plan, and no search asks the store. The index is caught up once per plan
    (:meth:`~planner_svc.recall.ports.VectorSearch.current`, inside the snapshot too), not on
    every search and read.
    """

    def __init__(self, index: VectorSearch, embedder: QueryEmbedder | None, catalog: Catalog,
                 *, valid_us: int, tx_us: int) -> None:
        self._source = index
        self._pinned: VectorSearch | None = None
        self._embedder = embedder
        self._session: QueryEmbedder | None = None
        self._catalog = catalog
        self._valid_us = valid_us
        self._tx_us = tx_us

    def _index(self) -> VectorSearch:
        if self._pinned is None:
            self._pinned = self._source.current()
        return self._pinned

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """The embedder's rows of ``texts``, every text of the plan through one session of
        the embedder when it has them (:class:`~planner_svc.recall.ports.SessionEmbedder`)."""
        session = self._session
        if session is None:
            if self._embedder is None:
                raise BackendUnavailable("semantic recall needs an embedder; none is configured")
            opener = getattr(self._embedder, "session", None)
            session = self._session = self._embedder if opener is None else opener()
        vectors: npt.NDArray[np.float32] = np.asarray(session.embed(list(texts)),
                                                     dtype=np.float32)
        return vectors

    def search(self, vector: Vector, k: int) -> list[tuple[int, float]]:
        """The ``k`` live versions nearest ``vector`` (a unit float32 vector, the embedder's
        or a validated caller's) by exact similarity, from candidates the index chose with a
        margin (ties by node id): ``(version id, similarity)``."""
        hits = self._index().search_columns(vector, max(k + CANDIDATE_MARGIN, 2 * k),
                                            valid_us=self._valid_us, tx_us=self._tx_us,
                                            live=self._catalog, unit=True)
        if not len(hits):
            return []
        # exact_similarities(vector, hits.vectors)'s bits, read where the index holds them,
        # ranked in the same call when they are distinct
        matrix, rows = hits.located()
        query = np.asarray(vector, dtype=np.float32)
        if matrix.dtype == np.float32 and matrix.flags.c_contiguous:
            exact, order, ordered = ranked_dots(matrix, rows, query)
            if order is not None and ordered is not None:
                return list(zip(hits.version_ids[order[:k]].tolist(), ordered[:k].tolist(),
                                strict=True))
        else:
            exact = ordered_dots(matrix, rows, query)
        order = (-exact).argsort(kind="stable")
        ordered = exact[order]
        if bool((ordered[1:] == ordered[:-1]).any()):  # equal similarities: by node id
            sims = exact.tolist()
            nodes = hits.node_ids
            chosen = sorted(range(len(sims)), key=lambda i: (-sims[i], nodes[i]))[:k]
            versions = hits.version_ids.tolist()
            return [(versions[i], sims[i]) for i in chosen]
        return list(zip(hits.version_ids[order[:k]].tolist(), ordered[:k].tolist(),
                        strict=True))

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        return self._index().vector_rows(version_ids)


def _no_passage_valid(recalled: Recalled) -> str | None:
    """The decline message when no passage is valid at the plan's valid time though documents
    are stored as of its transaction time (:attr:`~planner_svc.recall.engine.Recalled.
    no_passage_valid`), else None. It takes precedence over the no-span message and the
    abstention's: no plan can hold a span until the valid time changes. The abstention's
    inputs stay in the metadata; its coverage is measured over whole documents, where valid
    time does not apply, so a question it declines is declined again at a valid time with
    passages (for its own reason then)."""
    count = recalled.live_documents
    if not (recalled.no_passage_valid and count > 0):
        return None
    stored = "1 document is" if count == 1 else f"{count} documents are"
    return (f"no passage is valid at the plan's valid time (at_valid): {stored} stored as "
            f"of its transaction time, but none of their passages was valid then")


def _no_span(recalled: Recalled, stats: PlanStats) -> str:
    """Why recall left no span to plan, for the error message: :func:`_no_passage_valid`'s
    message when it applies, otherwise the recall counts."""
    return _no_passage_valid(recalled) or (
        f"recall found no evidence span ({stats.nodes_recalled} nodes recalled, "
        f"{stats.slices_missing} slices missing)")


_log = structlog.get_logger("planner_svc.recall")

WARM_UP_QUESTION = "What is the history of the city, and who founded it?"
"""The question :meth:`EvidencePlanner.warm` plans once before a server serves: common words,
so that on most stores every recall leg and a hop run."""


class EvidencePlanner:
    """Plans evidence over one store, its recall catalog, vector index and embedder.

    Thread-safe (it keeps no per-request state). Every store read of one plan runs inside the
    store's :meth:`~RecallStore.snapshot`, so a plan sees one state.

    Args:
        store: the store (recall reads and the change feed the catalog follows).
        index: vector search; None disables the semantic leg (a request that asks for it then
            fails with BackendUnavailable rather than silently skipping the leg).
        embedder: embeds question text; None means only query vectors are accepted.
        config: weighting and selection defaults.
        counter: exact token accounting per model; None = estimator only.
        recall: recall settings.
        catalog: the catalog to plan over (default: a new one following ``store``).
        span_text_bytes: memory bound of the span texts kept between plans, bytes
            (:mod:`planner_svc.recall.span_texts`); 0 reads every plan's texts from the store.
        plan_slots: plans computed at once; the others wait for a slot
            (:mod:`planner_svc.recall.slots`); None: no limit.
    """

    def __init__(
        self,
        store: PlannerStore,
        *,
        index: VectorSearch | None,
        embedder: QueryEmbedder | None,
        config: SelectionSettings,
        counter: TokenAccounting | None = None,
        recall: RecallSettings | None = None,
        catalog: FreshCatalog | None = None,
        span_text_bytes: int = DEFAULT_SPAN_TEXT_BYTES,
        plan_slots: int | None = None,
    ) -> None:
        self.slots = PlanSlots(plan_slots)
        self._store = store
        self._texts = SpanTexts(store, max_bytes=span_text_bytes)
        self._index = index
        self._embedder = embedder
        self.config = config
        self._counter = counter
        self.recall = recall or RecallSettings()
        self.catalog = catalog or FreshCatalog(store)

    def warm(self) -> None:
        """Bring the recall catalog up to the store now, so that the first plan does not pay
        for reading the whole store (seconds on a large one); later plans only catch up. Then
        compute every document's entry and links (:meth:`~planner_svc.index.catalog.Catalog.warm`),
        compile every numba kernel (:func:`~planner_svc.jit.compile_all`: ranking, search,
        postings, relevance, similarity, pooling) and make one plan (:data:`WARM_UP_QUESTION`,
        its result dropped), so the first caller's plan does not pay for first uses either (the
        embedder's, the index's, the caches')."""
        with self._store.snapshot():
            catalog = self.catalog.current()
        started = time.perf_counter()
        documents = catalog.warm(wall_clock_us())
        _log.info("startup.catalog_entries", documents=documents,
                  seconds=round(time.perf_counter() - started, 2))
        semantic = self._index is not None and self._embedder is not None
        started = time.perf_counter()
        kernels = compile_all()
        _log.info("startup.kernels", kernels=kernels,
                  seconds=round(time.perf_counter() - started, 2))
        query = question_query(WARM_UP_QUESTION, config=self.config, recall=self.recall,
                               now_us=wall_clock_us(), semantic=semantic)
        try:
            self.plan(query)
        except InsufficientEvidence:  # a store that cannot answer it: nothing more to warm
            pass
        except PlannerError as exc:  # the first caller's plan will meet it too, and say so
            _log.warning("startup.warm_plan_failed", error=f"{type(exc).__name__}: {exc}")

    def plan(
        self,
        query: EvidenceQuery,
        *,
        cancelled: Callable[[], bool] = lambda: False,
        clock: StageClock | None = None,
    ) -> EvidenceResult:
        """Recall, select and hash.

        Args:
            query: the validated query.
            cancelled: polled between stages; True stops the plan.
            clock: receives each stage's wall time (:mod:`planner_svc.recall.timing`).

        Raises:
            InsufficientEvidence: the question is declined (too little absolute evidence) or
                recall found no span, and ``allow_ungrounded`` is false.
            BackendUnavailable: the semantic leg was asked for without an index/embedder.
            InvalidRequest: the query vector or settings are invalid.
            Cancelled: ``cancelled()`` turned true between stages, or while the plan waited
                for a planning slot.
        """
        clock = clock if clock is not None else StageClock()
        if self.slots.size is None:
            return self._plan(query, cancelled, clock)
        with clock.stage("queue"):
            held = self.slots.take(cancelled)
        with held:
            return self._plan(query, cancelled, clock)

    def _plan(self, query: EvidenceQuery, cancelled: Callable[[], bool],
              clock: StageClock) -> EvidenceResult:
        stats = PlanStats()
        # One consistent store state for every read of the plan: a write committed while the
        # plan runs is seen by none of its reads rather than by the later ones only.
        with self._store.snapshot():
            with clock.stage("catalog"):
                catalog = self.catalog.current()
            self._check(cancelled)
            # the trace is None unless explain was asked for
            recalled, abstention, trace = self._recall(catalog, query, stats, clock)
            self._check(cancelled)
            if abstention is not None and abstention.declined:
                if query.allow_ungrounded:
                    return EvidenceResult(plan=empty_plan(stats), trace=trace)
                raise InsufficientEvidence(
                    _no_passage_valid(recalled)
                    or f"the store does not support an answer: {abstention.describe()}",
                    metadata=abstention.metadata())
            with clock.stage("pool"):
                keys, entries = self._pool(catalog, recalled, query, stats)
            with clock.stage("tokens"):
                pool, estimate_mode = self._counted(catalog, keys, entries, query.model)
            if trace is not None:
                trace = dataclasses.replace(trace, origin=dict(zip(keys, map(_NODE, entries),
                                                                   strict=True)))
            self._check(cancelled)
            if len(pool) == 0:
                if query.allow_ungrounded:
                    return EvidenceResult(plan=empty_plan(stats), trace=trace)
                raise InsufficientEvidence(
                    _no_span(recalled, stats),
                    metadata={"live_documents": str(recalled.live_documents)})
            context_window = (
                self._counter.context_window(query.model)
                if self._counter is not None and query.model
                else None
            )
            with clock.stage("select"):
                budget = effective_budget(query.budget_tokens, context_window, estimate_mode)
                selection = select_columns(pool, budget, query.max_frac_per_source,
                                           query.dedup_overlap, explain=query.explain)
            with clock.stage("hash"):
                plan = assemble_plan(selection, budget=budget, estimate_mode=estimate_mode,
                                     recall_stats=stats)
            with clock.stage("texts"):
                plan = self._with_texts(plan)
        return EvidenceResult(plan=plan, trace=trace)

    # ---------------------------------------------------------------- phase A

    def _recall(self, catalog: Catalog, query: EvidenceQuery, stats: PlanStats,
                clock: StageClock) -> tuple[Recalled, Abstention | None, LegTrace | None]:
        """Phase A: the recall, its abstention decision (None when none is measured: no
        question text, no structured leg, or both abstain thresholds 0) and, when explain was
        asked for, its trace (else None)."""
        valid_us, tx_us = query.at_valid_us, query.at_tx_us
        settings = self.recall
        structured, semantic = query.structured, query.semantic
        text = (structured.text if structured is not None and structured.text.strip()
                else semantic.text if semantic is not None and semantic.text else "")
        filtered: dict[str, float] | None = None
        if structured is not None and (structured.labels or structured.properties):
            with clock.stage("structured"):
                filtered = filtered_nodes(
                    catalog, structured.text, labels=structured.labels,
                    properties=structured.properties, valid_us=valid_us, tx_us=tx_us,
                    limit=structured.limit,
                )
        access = None
        vector: Vector | None = None
        if semantic is not None:
            if self._index is None:
                raise BackendUnavailable("semantic recall needs a vector index; none is "
                                         "configured")
            if semantic.vector is not None:
                vector = query_vector(semantic, self._embedder)
            elif self._embedder is None:
                raise BackendUnavailable("semantic recall needs an embedder; none is configured")
            access = _Semantic(self._index, self._embedder, catalog, valid_us=valid_us,
                               tx_us=tx_us)
        recalled = recall_documents(
            catalog,
            EngineQuery(
                text=text, structured=structured is not None, filtered=filtered,
                semantic=semantic is not None, vector=vector,
                alpha=semantic.alpha if semantic is not None else 1.0,
                document_k=structured.limit if structured is not None else settings.default_limit,
                semantic_k=semantic.k if semantic is not None else settings.default_k,
                expand_depth=query.expand_depth, valid_us=valid_us, tx_us=tx_us,
            ),
            settings=settings,
            semantic=access,
            measure=settings.abstain_coverage > 0.0 or settings.abstain_similarity > 0.0,
            clock=clock,
        )
        abstention = None
        evidence = recalled.evidence
        if evidence is not None:
            # No document holding any of the question's terms leaves the similarity alone,
            # and a static embedding finds passages close to any text, gibberish included:
            # similarity then answers nothing.
            declined = evidence.coverage < settings.abstain_coverage and (
                evidence.similarity is None or evidence.best_source is None
                or evidence.similarity < settings.abstain_similarity
            )
            abstention = Abstention(evidence=evidence, min_coverage=settings.abstain_coverage,
                                    min_similarity=settings.abstain_similarity,
                                    declined=declined)
        stats.structured_hits = recalled.structured_documents
        stats.semantic_hits = recalled.semantic_hits
        stats.expanded_hits = recalled.expanded_documents
        stats.nodes_recalled = recalled.node_count
        stats.nodes_without_spans = recalled.without_spans
        if not query.explain:
            return recalled, abstention, None
        with clock.stage("trace"):
            trace = self._trace(catalog, recalled, abstention)
        return recalled, abstention, trace

    @staticmethod
    def _trace(catalog: Catalog, recalled: Recalled, abstention: Abstention | None
               ) -> LegTrace:
        """The explain trace of a recall (its ``origin`` is filled once the pool is built)."""
        documents = recalled.documents
        by_source = {d.source_id: d for d in documents}
        nodes = recalled.nodes
        names = {vid: v.node_id for vid in nodes if (v := catalog.version(vid)) is not None}
        return LegTrace(
            structured={names[v]: by_source[n.source_id].structured
                        for v, n in nodes.items()
                        if by_source[n.source_id].structured > 0.0},
            semantic={names[v]: by_source[n.source_id].semantic for v, n in nodes.items()
                      if by_source[n.source_id].semantic > 0.0},
            expanded={names[v]: by_source[n.source_id].hop for v, n in nodes.items()
                      if by_source[n.source_id].hop > 0.0},
            fused={names[v]: n.score for v, n in nodes.items()},
            documents=documents,
            nodes={names[v]: n for v, n in nodes.items()},
            abstention=abstention,
            residual=recalled.residual,
        )

    def _pool(self, catalog: Catalog, recalled: Recalled, query: EvidenceQuery,
              stats: PlanStats) -> tuple[list[CoordKey], list[tuple[float, SpanInfo, str]]]:
        """Explode node scores into weighted spans (Phase A's last step): the spans in
        coordinate order, and each one's weight, its kind and estimate, and the node that gave
        the weight (in the same order).

        Every node's spans, nodes in version id order, a span keeping the first of its largest
        weights; counted per node and span (a span missing or of unknown kind once for each
        node citing it, a duplicate once for each node citing it after the first). The nodes
        of a span group cite the same spans with the same score, so the group's first node
        stands for all of them (:attr:`~planner_svc.recall.engine.Recalled.firsts`, groups in
        the order of their first node): a later node of a group repeats a weight its span
        already met, which never replaces it, and its counts are the first node's."""
        best: dict[CoordKey, tuple[float, SpanInfo, str]] = {}
        setdefault = best.setdefault
        at_tx = query.at_tx_us
        prior = prior_lookup(self.config)  # weigh(score, kind, TRUTH, config) = score x prior
        missing = kind_missing = cited = 0
        for version, score, size in zip(catalog.versions(recalled.firsts),
                                        recalled.first_scores, recalled.first_sizes,
                                        strict=True):
            if version is None:
                continue
            node_id = version.node_id
            for key, info in version.cited:
                if info is None or info.estimated_tokens is None or key[1] > at_tx:
                    missing += size
                    continue
                if not info.kind_known:
                    kind_missing += size
                cited += size
                entry = (score * prior(info.kind, 1.0), info, node_id)
                current = setdefault(key, entry)
                # the span came with an earlier group: keep the first of the largest weights
                if current is not entry and entry[0] > current[0]:
                    best[key] = entry
        stats.slices_missing += missing
        stats.kind_missing += kind_missing
        stats.pool_duplicates += cited - len(best)  # every citation after a span's first
        keys = list(best)
        # the groups' first nodes mostly come in coordinate order: sorted only when they do not
        if any(map(lt, keys[1:], keys)):
            keys.sort()
            return keys, list(map(best.__getitem__, keys))
        return keys, list(best.values())

    def _counted(self, catalog: Catalog, keys: Sequence[CoordKey],
                 entries: Sequence[tuple[float, SpanInfo, str]],
                 model: str) -> tuple[PoolColumns, bool]:
        """The pool (``keys`` and their ``entries`` as :meth:`_pool` gives them) with token
        counts, as selection's columns: the model's exact counts (counted once per tokenizer
        and span, then cached in the catalog), else the estimates; and whether any count is
        an estimate. Selection builds a candidate's :class:`PlannedSpan` only when it needs
        the whole candidate (the spans it returns, ties, explain)."""
        tokenizer = (self._counter.tokenizer_of(model)
                     if self._counter is not None and model else None)
        weights, infos, _nodes = zip(*entries, strict=True) if entries else ((), (), ())
        tokens: list[int]
        if tokenizer is None:  # the estimator's counts, kept in the catalog since ingest
            # (a pool span always has an estimate: :meth:`_pool` leaves out the others)
            tokens = list(map(_ESTIMATED_TOKENS, infos))
            estimated = bool(keys)
        else:
            tokens, estimated = self._exact_counts(catalog, keys, entries, tokenizer, model)
        truth = SpanClass.TRUTH

        def candidate(i: int) -> PlannedSpan:
            weight, info, _node = entries[i]
            return planned_span(span_ref(*keys[i]), info.kind, truth, weight, tokens[i], "",
                                info.location)

        # the coordinates' columns by one transposition (zip of the keys, in C)
        source_ids, txs, starts, ends = zip(*keys, strict=True) if keys else ((), (), (), ())
        columns = PoolColumns(source_ids=source_ids, txs=txs, starts=starts, ends=ends,
                              weights=weights, tokens=tokens, candidate=candidate)
        return columns, estimated

    def _exact_counts(self, catalog: Catalog, keys: Sequence[CoordKey],
                      entries: Sequence[tuple[float, SpanInfo, str]], tokenizer: str,
                      model: str) -> tuple[list[int], bool]:
        """Each candidate's token count under ``model``'s tokenizer (cached in the catalog,
        or counted from its text now and cached), else its estimate; and whether any count
        is an estimate."""
        counts: dict[CoordKey, int] = {}
        missing: list[CoordKey] = []
        for key in keys:
            cached = catalog.count_tokens(key, tokenizer)
            if cached is None:
                missing.append(key)
            else:
                counts[key] = cached
        if missing and self._counter is not None:
            texts = self._texts.slices(missing)
            learned: dict[tuple[str, CoordKey], int] = {}
            for key in missing:
                count = self._counter.count(model, texts.get(key, ""))
                if count is None:
                    break  # the tokenizer cannot count: every span is estimated
                learned[(tokenizer, key)] = count
                counts[key] = count
            catalog.remember_tokens(learned)
        tokens = [counts.get(key, info.estimated_tokens or 0)
                  for key, (_weight, info, _node) in zip(keys, entries, strict=True)]
        return tokens, len(counts) < len(keys)

    def _with_texts(self, plan: EvidencePlan) -> EvidencePlan:
        """The plan with each span's text (and each explained candidate's), sliced once
        (kept texts from memory, the others read from the store)."""
        candidates = [e.candidate for e in plan.explanations]
        keys = [(r.source_id, r.source_version_tx, r.start, r.end)
                for r in [s.span for s in (*plan.spans, *candidates)]]
        sliced = self._texts.slices(keys)
        texts = list(map(sliced.get, keys, repeat("")))  # "" for a span that cannot be sliced
        spans = tuple(map(PlannedSpan.with_text, plan.spans, texts))
        explanations: tuple[Explanation, ...] = ()
        if candidates:
            # a selected span is explained too: filled once
            filled = dict(zip(map(id, plan.spans), spans, strict=True))
            explanations = tuple([
                Explanation(candidate=filled.get(id(c)) or c.with_text(text), fate=e.fate,
                            density=e.density, deduped_by=e.deduped_by)
                for c, e, text in zip(candidates, plan.explanations, texts[len(spans):],
                                      strict=True)])
        # every field, in their order (tests/unit/test_core_plan.py pins the field lists)
        return evidence_plan(plan.plan_model, spans, plan.budget, plan.used, plan.stats,
                             plan.plan_hash, explanations)

    @staticmethod
    def _check(cancelled: Callable[[], bool]) -> None:
        if cancelled():
            raise Cancelled("request cancelled")
