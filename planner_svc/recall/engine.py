"""Phase A over the recall catalog: documents, hops between them, passages within them.

Source: memory-planner seed, "Phase A: the three recall legs" and "Exploding nodes to spans"
(legs fused into node scores, nodes exploded to weighted provenance spans). Retrieval over
short documents needs two levels, so this module scores:

1. **Documents.** A document's structured score is BM25 over its whole text (or, when the
   request filters on labels or properties, the best BM25 of its nodes that pass the filter);
   its semantic score is the best exact cosine similarity of its nodes (blended with confidence
   decay when ``alpha < 1``). The candidates are the structured leg's best documents and the
   documents of the semantic leg's neighbours; when both legs ran, each candidate one leg missed
   gets that leg's score too (its BM25, or the best cosine of its live nodes), so a document is
   never penalised for falling just outside a leg's cut. Each leg is divided by its best and
   raised to its sharpness; with both legs a document scores their mean. A multi-part question
   (a comparison or choice, :mod:`planner_svc.recall.question`) is also scored part by part,
   and a document keeps its best score: every part's best document scores like the question's.
2. **Hops.** From the best documents, edges to nodes of other documents (title mentions, in
   either direction) lead to documents the question does not describe directly: the second
   step of a two-hop question. A target scores ``source score x edge weight x hop decay x r``:
   ``r`` in [0, 1] is how well the target matches the *residual* of the question (its terms
   the source document does not hold, by BM25 and by the embedding of the residual words),
   relative to the source's best target, so the target that answers what the source leaves
   open wins. A second hop (``expand_depth`` 2) starts from the best targets of the first.
3. **Passages.** Within each candidate document the live nodes, grouped by the spans they cite,
   are ranked by local relevance: the better of their BM25 and their sharpened cosine
   similarity to the question (to the residual, for a document reached by a hop), each
   relative to the document's best. A group scores ``document score ** document sharpness x
   (floor + (1 - floor) x local) x decay ** rank``: the passage that states the fact outranks
   the document's lead; the best documents' further passages come before the best passages of
   documents far below them, and every document's best passage before its own second.

:func:`measure_evidence` gives the absolute evidence recall abstains on: how much of the
question the best documents hold (idf-weighted terms), and how close the nearest passage is.

Every number is computed exactly or in a fixed order (BM25 per
:mod:`planner_svc.index.lexical`, cosine per :func:`planner_svc.recall.semantic.
exact_similarities`, integral powers by :func:`planner_svc.core.fusion.unit_power`), so a
score is the same bits on every machine.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
import numpy.typing as npt

from planner_svc.core.exactmath import ln
from planner_svc.core.fusion import clamp_unit, fuse, unit_power
from planner_svc.index.analysis import STOPWORDS, is_cjk, query_terms
from planner_svc.index.catalog import Catalog, CatalogVersion
from planner_svc.recall.question import Question, analyze_question
from planner_svc.recall.semantic import confidence_decay, exact_similarities
from planner_svc.recall.settings import RecallSettings

__all__ = [
    "DocumentScore",
    "EngineQuery",
    "Evidence",
    "NodeScore",
    "Recalled",
    "SemanticAccess",
    "filtered_nodes",
    "measure_evidence",
    "recall_documents",
]

Vector = npt.NDArray[np.float32]
_WORD = re.compile(r"\w+")
COVERAGE_DOCUMENTS = 20
"""Documents (the best by BM25 over whole documents) whose coverage of the question is measured."""
COVERAGE_LINKED = 5
"""Of those, the best whose linked documents are measured together with them."""


class SemanticAccess(Protocol):
    """The semantic leg as the engine uses it, bound to one plan's as-of times."""

    def embed(self, text: str) -> Vector:
        """Unit float32 vector of ``text`` (all zeros when it holds no known token)."""
        ...

    def search(self, vector: Vector, k: int) -> Sequence[tuple[int, Vector]]:
        """Up to ``k`` live node versions near ``vector``: ``(version_id, stored unit
        vector)``. Candidates only: their order and the index's own scores never matter."""
        ...

    def vectors(self, version_ids: Sequence[int]) -> Mapping[int, Vector]:
        """Stored unit vectors by version id; versions without a vector are absent."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineQuery:
    """What one plan asks of recall.

    Attributes:
        text: the question ("" when the request has no text: filters or a vector only).
        structured: the structured leg is asked for.
        filtered: node id -> raw score (higher is better) from a label/property-filtered
            search; it replaces BM25 over whole documents as the structured leg. None = none.
        semantic: the semantic leg is asked for.
        vector: the caller's unit query vector, or None to embed ``text``.
        alpha: similarity/decay blend of the semantic leg, in [0, 1] (1 = similarity only).
        document_k: documents the structured leg keeps; semantic_k: neighbours it keeps.
        expand_depth: hops between documents, 0..2.
        valid_us, tx_us: as-of times, microseconds.
    """

    text: str
    structured: bool
    filtered: Mapping[str, float] | None = None
    semantic: bool
    vector: Vector | None = None
    alpha: float = 1.0
    document_k: int
    semantic_k: int
    expand_depth: int
    valid_us: int
    tx_us: int


@dataclass(frozen=True, slots=True, kw_only=True)
class DocumentScore:
    """How one document became a candidate.

    Attributes:
        source_id: the document.
        score: its score in [0, 1]: the better of its direct and its hop score.
        structured, semantic: its direct leg scores (relative, sharpened; 0 when missed).
        hop: its hop score (0 when no hop reached it); ``hop_from`` the document it came from.
    """

    source_id: str
    score: float
    structured: float = 0.0
    semantic: float = 0.0
    hop: float = 0.0
    hop_from: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeScore:
    """One candidate node: its score in [0, 1], its document, its local relevance in [0, 1]
    and its rank (0 = most relevant) within the document."""

    score: float
    source_id: str
    local: float
    rank: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Recalled:
    """Phase A's result.

    Attributes:
        nodes: node version id -> its score, for every live node of every candidate document,
            in ascending version id.
        documents: the candidate documents, best first (ties by source id).
        question: the analysed question.
        best_similarity: the best raw cosine similarity of the semantic leg (None without it).
        semantic_hits: node versions the semantic leg returned.
        without_spans: versions a leg reached that cite no source (never evidence).
    """

    nodes: Mapping[int, NodeScore]
    documents: tuple[DocumentScore, ...]
    question: Question
    best_similarity: float | None = None
    semantic_hits: int = 0
    without_spans: int = 0
    residual: Mapping[str, tuple[str, ...]] = field(default_factory=dict)


def _relative(scores: Mapping[str, float], sharpness: float) -> dict[str, float]:
    """``clamp((score / best) ** sharpness)`` per key; empty when the best is not positive."""
    best = max(scores.values(), default=0.0)
    if not best > 0.0:
        return {}
    return {k: clamp_unit(unit_power(clamp_unit(max(0.0, s) / best), sharpness))
            for k, s in sorted(scores.items())}


@dataclass(frozen=True, slots=True)
class _Hop:
    score: float
    source: str
    terms: tuple[str, ...]
    vector: Vector | None


class _Recall:
    """One plan's Phase A (the catalog and the legs, bound to the query)."""

    def __init__(self, catalog: Catalog, query: EngineQuery, settings: RecallSettings,
                 semantic: SemanticAccess | None) -> None:
        self.catalog = catalog
        self.query = query
        self.settings = settings
        self.semantic = semantic if query.semantic else None
        self.valid_us = query.valid_us
        self.tx_us = query.tx_us
        self.passages = catalog.passages.view(valid_us=query.valid_us, tx_us=query.tx_us)
        self.documents_view = catalog.documents.view(valid_us=query.valid_us, tx_us=query.tx_us)
        self.semantic_hits = 0
        self.unsourced: set[int] = set()  # versions a leg reached that cite no source
        self._members: dict[str, list[CatalogVersion]] = {}
        self._vectors: dict[int, Vector | None] = {}

    def members(self, source: str) -> list[CatalogVersion]:
        """The live nodes of ``source`` (read once per plan)."""
        found = self._members.get(source)
        if found is None:
            found = self._members[source] = self.catalog.live_nodes_of(
                source, self.valid_us, self.tx_us)
        return found

    # ---------------------------------------------------------------- documents

    def structured(self, terms: Sequence[str]) -> dict[str, float]:
        """source -> raw structured score (BM25 over whole documents, or the filtered
        search's score)."""
        if not self.query.structured:
            return {}
        raw: dict[str, float] = {}
        if self.query.filtered is not None:
            for node_id, score in sorted(self.query.filtered.items()):
                version = self.catalog.live_version(node_id, self.valid_us, self.tx_us)
                if version is not None and version.source is not None:
                    raw[version.source] = max(raw.get(version.source, 0.0), score)
                elif version is not None:
                    self.unsourced.add(version.version_id)
            return raw
        for row_id, score in self.documents_view.search(terms, limit=self.query.document_k):
            source = self.catalog.source_of_document(row_id)
            if source is not None:
                raw[source] = max(raw.get(source, 0.0), score)
        return raw

    def _semantic_score(self, version: CatalogVersion, sim: float) -> float:
        score = clamp_unit(sim)
        if self.query.alpha != 1.0:
            decay = confidence_decay(version.confidence, version.valid_from, self.valid_us)
            score = fuse(score, decay, self.query.alpha)
        return score

    def nearest(self, vector: Vector | None) -> tuple[dict[str, float], float | None]:
        """source -> raw semantic score (its best neighbour's); the best raw similarity."""
        if self.semantic is None or vector is None or not np.any(vector):
            return {}, None
        hits = self.semantic.search(vector, self.query.semantic_k)
        self.semantic_hits = max(self.semantic_hits, len(hits))
        if not hits:
            return {}, None
        sims = exact_similarities(vector, np.stack([v for _, v in hits])).tolist()
        raw: dict[str, float] = {}
        for (version_id, _vector), sim in zip(hits, sims, strict=True):
            version = self.catalog.version(version_id)
            if version is None or version.source is None:
                self.unsourced.add(version_id)
                continue
            score = self._semantic_score(version, sim)
            raw[version.source] = max(raw.get(version.source, 0.0), score)
        return raw, max(sims)

    def complete(self, terms: Sequence[str], vector: Vector | None,
                 structured: dict[str, float], semantic: dict[str, float]) -> None:
        """Give every document one leg found the other leg's raw score too (in place)."""
        if self.query.filtered is None:
            missing = sorted(set(semantic) - set(structured))
            rows = {}
            for source in missing:
                row = self.catalog.document_row(source, self.tx_us)
                if row is not None:
                    rows[row] = source
            for row, score in self.documents_view.score_rows(terms, sorted(rows)).items():
                structured[rows[row]] = score
        if vector is not None:
            for source in sorted(set(structured) - set(semantic)):
                members = self.members(source)
                sims = self.similarities(vector, [m.version_id for m in members])
                best = 0.0
                for m in members:
                    if m.version_id in sims:
                        best = max(best, self._semantic_score(m, sims[m.version_id]))
                if best > 0.0:
                    semantic[source] = best

    def documents(self, text: str, vector: Vector | None
                  ) -> tuple[dict[str, tuple[float, float, float]], float | None]:
        """source -> (score, structured, semantic); the best raw similarity."""
        terms = query_terms(text)
        raw_structured = self.structured(terms)
        raw_semantic, best = self.nearest(vector)
        if raw_structured and raw_semantic:
            self.complete(terms, vector, raw_structured, raw_semantic)
        structured = _relative(raw_structured, self.settings.structured_sharpness)
        semantic = _relative(raw_semantic, self.settings.semantic_sharpness)
        both = bool(structured) and bool(semantic)
        out = {}
        for source in sorted(set(structured) | set(semantic)):
            s, v = structured.get(source, 0.0), semantic.get(source, 0.0)
            out[source] = ((s + v) / 2.0 if both else max(s, v), s, v)
        return out, best

    def embed(self, text: str) -> Vector | None:
        if self.semantic is None or not text.strip():
            return None
        vector = self.semantic.embed(text)
        return vector if np.any(vector) else None

    def similarities(self, vector: Vector, ids: Sequence[int]) -> dict[int, float]:
        """Exact cosine of ``vector`` with each stored vector of ``ids`` (those that have one),
        in the order of ``ids``. Stored vectors are read once per plan."""
        if self.semantic is None or not ids:
            return {}
        missing = [i for i in ids if i not in self._vectors]
        if missing:
            stored = self.semantic.vectors(missing)
            for i in missing:
                self._vectors[i] = stored.get(i)
        have = [i for i in ids if self._vectors[i] is not None]
        if not have:
            return {}
        matrix = np.stack([v for i in have if (v := self._vectors[i]) is not None])
        sims = exact_similarities(vector, matrix).tolist()
        return dict(zip(have, sims, strict=True))

    def local(self, sources: Sequence[str], terms: Sequence[str], vector: Vector | None
              ) -> tuple[dict[int, float], dict[int, float]]:
        """BM25 of ``terms`` and cosine with ``vector`` of every live node of ``sources``:
        ``(version id -> BM25, version id -> cosine)``, one batch for all of them."""
        ids = [m.version_id for source in sources for m in self.members(source)]
        lexical = self.passages.score_rows(terms, ids)
        cosine = self.similarities(vector, ids) if vector is not None else {}
        return lexical, cosine

    # ---------------------------------------------------------------- hops

    def hops(self, question: Question, scores: Mapping[str, float], vector: Vector | None
             ) -> dict[str, _Hop]:
        """target -> its best hop from the best ``hop_sources`` documents of ``scores``."""
        settings = self.settings
        sources = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.hop_sources]
        words = _WORD.findall(question.text)
        out: dict[str, _Hop] = {}
        for source, score in sources:
            if not score > 0.0:
                continue
            own = self.members(source)
            links: dict[str, float] = {}
            for _mine, other, weight in self.catalog.neighbours(own, self.valid_us, self.tx_us):
                if other.source is not None:
                    links[other.source] = max(links.get(other.source, 0.0), weight)
            if not links:
                continue
            held = self.passages.held_terms(v.version_id for v in own)
            terms = tuple(t for t in question.terms if t not in held)
            kept = [w for w in words if w.casefold() not in STOPWORDS
                    and not set(query_terms(w)) & held]
            residual = self.embed(" ".join(kept)) if kept else None
            probe = residual if residual is not None or question.text else vector
            targets = sorted(links)
            found, sims = self.local(targets, terms, probe)
            lexical: dict[str, float] = {}
            cosine: dict[str, float] = {}
            for target in targets:
                ids = [m.version_id for m in self.members(target)]
                lexical[target] = max((found[i] for i in ids if i in found), default=0.0)
                if probe is not None:
                    cosine[target] = max((sims[i] for i in ids if i in sims), default=0.0)
            lex_rel = _relative(lexical, 1.0)
            cos_rel = _relative(cosine, settings.local_sharpness)
            for target, weight in sorted(links.items()):
                relevance = max(lex_rel.get(target, 0.0), cos_rel.get(target, 0.0))
                value = score * weight * settings.hop_decay * relevance
                current = out.get(target)
                if value > 0.0 and (current is None or value > current.score):
                    out[target] = _Hop(score=value, source=source, terms=terms, vector=probe)
        return out

    # ---------------------------------------------------------------- passages

    def rank(self, source: str, lexical: Mapping[int, float], cosine: Mapping[int, float]
             ) -> list[tuple[list[int], float]]:
        """The live nodes of ``source`` grouped by the spans they cite, most relevant group
        first (ties by their smallest version id): ``(version ids, local relevance)``, from
        the nodes' BM25 (``lexical``) and cosine (``cosine``) by version id."""
        members = self.members(source)
        if not members:
            return []
        ids = [m.version_id for m in members]
        lex_rel = _relative({str(i): lexical[i] for i in ids if i in lexical}, 1.0)
        cos_rel = _relative({str(i): max(0.0, cosine[i]) for i in ids if i in cosine},
                            self.settings.local_sharpness)
        groups: dict[tuple[object, ...], list[int]] = {}
        for m in members:
            groups.setdefault(m.spans, []).append(m.version_id)
        ranked = []
        for versions in groups.values():
            relevance = max(max(lex_rel.get(str(i), 0.0), cos_rel.get(str(i), 0.0))
                            for i in versions)
            ranked.append((sorted(versions), relevance))
        ranked.sort(key=lambda g: (-g[1], g[0][0]))
        return ranked


def filtered_nodes(
    catalog: Catalog,
    text: str,
    *,
    labels: Sequence[str],
    properties: Mapping[str, str],
    valid_us: int,
    tx_us: int,
    limit: int,
) -> dict[str, float]:
    """The structured leg's hits when a request filters on labels or properties.

    The candidates are the node versions live at ``(valid_us, tx_us)`` carrying every label
    and every ``key = value`` (:meth:`Catalog.matching`). With query words
    (:func:`planner_svc.index.analysis.query_terms`), a candidate holding one scores its BM25
    among the live passages (the catalog's passage index, statistics as of the plan: the
    same bits on every backend and machine), and the ``limit`` best are kept (ties by node
    id); without one, every candidate scores 1.0 and the first ``limit`` by node id are kept.

    Returns:
        node id -> score (higher is better); empty when ``limit`` is 0 or nothing passes.
    """
    if limit <= 0:
        return {}
    candidates = catalog.matching(labels, properties, valid_us, tx_us)
    terms = query_terms(text)
    if not terms:
        return {node_id: 1.0 for node_id in sorted({v.node_id for v in candidates})[:limit]}
    view = catalog.passages.view(valid_us=valid_us, tx_us=tx_us)
    scores = view.score_rows(terms, [v.version_id for v in candidates])
    ranked = sorted(((v.node_id, scores[v.version_id]) for v in candidates
                     if v.version_id in scores), key=lambda hit: (-hit[1], hit[0]))
    return dict(ranked[:limit])


def recall_documents(
    catalog: Catalog,
    query: EngineQuery,
    *,
    settings: RecallSettings,
    semantic: SemanticAccess | None,
) -> Recalled:
    """Score documents, hop from the best, and score every live node of the candidates (see
    the module docstring)."""
    # The question's words (parts, BM25, residuals) belong to the structured leg; a request for
    # the semantic leg alone plans from its vector alone, so text and its embedding agree.
    question = (analyze_question(query.text) if query.structured
                else Question(text="", terms=(), parts=()))
    state = _Recall(catalog, query, settings, semantic)
    vector = query.vector if query.vector is not None else state.embed(query.text)
    direct, best_similarity = state.documents(query.text, vector)
    for part in question.parts:
        scored, _best = state.documents(part, state.embed(part))
        for source, legs in scored.items():
            if legs[0] > direct.get(source, (0.0, 0.0, 0.0))[0]:
                direct[source] = legs
    scores = {source: legs[0] for source, legs in direct.items()}
    hops: dict[str, _Hop] = {}
    if query.expand_depth > 0 and settings.hop_sources > 0:
        hops = state.hops(question, scores, vector)
        if query.expand_depth > 1 and hops:
            second = state.hops(question, {t: h.score for t, h in hops.items()}, vector)
            for target, reached in second.items():
                if target not in hops or reached.score > hops[target].score:
                    hops[target] = reached
    combined = dict(scores)
    for target, reached in hops.items():
        combined[target] = max(combined.get(target, 0.0), reached.score)
    ranked = [(s, v) for s, v in sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))
              if v > 0.0][: settings.candidate_documents]
    nodes: dict[int, NodeScore] = {}
    documents = []
    residual: dict[str, tuple[str, ...]] = {}
    # Local relevance is computed in one batch per (terms, vector) pair: the question's, and
    # each hop's residual.
    local_query: dict[str, tuple[tuple[str, ...], Vector | None]] = {}
    for source, _score in ranked:
        hop = hops.get(source)
        if hop is not None and hop.score >= scores.get(source, 0.0):
            residual[source] = hop.terms
            local_query[source] = (hop.terms, hop.vector if hop.vector is not None else vector)
        else:
            local_query[source] = (question.terms, vector)
    batches: dict[tuple[tuple[str, ...], int], list[str]] = {}
    for source, (terms, local_vector) in local_query.items():
        batches.setdefault((terms, id(local_vector)), []).append(source)
    local: dict[str, tuple[dict[int, float], dict[int, float]]] = {}
    for (terms, _vector_id), batch in batches.items():
        batch_scores = state.local(batch, terms, local_query[batch[0]][1])
        for source in batch:
            local[source] = batch_scores
    for source, score in ranked:
        hop = hops.get(source)
        sharp = unit_power(score, settings.document_sharpness)
        lexical, cosine = local[source]
        for rank, (versions, relevance) in enumerate(state.rank(source, lexical, cosine)):
            value = sharp * (settings.passage_floor + (1.0 - settings.passage_floor) * relevance)
            value *= unit_power(settings.passage_decay, rank)
            for version_id in versions:
                nodes[version_id] = NodeScore(score=value, source_id=source, local=relevance,
                                              rank=rank)
        s, v = direct.get(source, (0.0, 0.0, 0.0))[1:]
        documents.append(DocumentScore(
            source_id=source, score=score, structured=s, semantic=v,
            hop=hop.score if hop is not None else 0.0,
            hop_from=hop.source if hop is not None else None,
        ))
    return Recalled(nodes={k: nodes[k] for k in sorted(nodes)}, documents=tuple(documents),
                    question=question, best_similarity=best_similarity,
                    semantic_hits=state.semantic_hits, without_spans=len(state.unsourced),
                    residual=residual)


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """How much of the question the best documents actually match, in absolute terms.

    Attributes:
        coverage: the largest share of the question's information (its distinct terms weighted
            by their idf over whole documents, as of the plan) that one document holds, one
            document and a document it links to together, or (for a multi-part question) the
            best documents of its parts together; in [0, 1].
        best_source: the document (or ``"A + B"`` group) reaching it; None when none holds any.
        similarity: the best cosine similarity of a passage to the question (None without the
            semantic leg).
    """

    coverage: float
    best_source: str | None
    similarity: float | None


def measure_evidence(catalog: Catalog, question: Question, similarity: float | None, *,
                     valid_us: int, tx_us: int) -> Evidence:
    """The absolute evidence for ``question`` (see :class:`Evidence`): the documents measured
    are the :data:`COVERAGE_DOCUMENTS` best by BM25, the documents linked to the
    :data:`COVERAGE_LINKED` best of them, and, for a multi-part question, the best document of
    every part together."""
    documents = catalog.documents.view(valid_us=valid_us, tx_us=tx_us)
    count, frequency = documents.frequencies(question.terms)
    # A CJK character pair no document holds is a cut across two words of the question (CJK
    # text has no spaces, so its terms are character pairs), not a name the store lacks.
    terms = [t for t in sorted(frequency) if frequency[t] > 0 or not is_cjk(t)]
    weights = {t: ln(1.0 + (count - frequency[t] + 0.5) / (frequency[t] + 0.5)) for t in terms}
    total = 0.0
    for t in terms:
        total += weights[t]
    if not total > 0.0:
        return Evidence(coverage=0.0, best_source=None, similarity=similarity)

    def share(held: frozenset[str]) -> float:
        got = 0.0
        for t in terms:
            if t in held:
                got += weights[t]
        return got / total

    hits = documents.search(terms, limit=COVERAGE_DOCUMENTS)
    sources = [s for row, _ in hits if (s := catalog.source_of_document(row)) is not None]
    best, where = 0.0, None
    for rank, source in enumerate(sources):
        held = catalog.document_terms(source, tx_us)
        value = share(held)
        if value > best:
            best, where = value, source
        if rank >= COVERAGE_LINKED:
            continue
        own = catalog.live_nodes_of(source, valid_us, tx_us)
        linked = sorted({o.source for _m, o, _w in catalog.neighbours(own, valid_us, tx_us)
                         if o.source is not None})
        for other in linked:
            value = share(held | catalog.document_terms(other, tx_us))
            if value > best:
                best, where = value, f"{source} + {other}"
    if question.parts:  # a comparison is answered by its alternatives' documents together
        chosen: list[str] = []
        for part in question.parts:
            top = documents.search(query_terms(part), limit=1)
            found = catalog.source_of_document(top[0][0]) if top else None
            if found is not None and found not in chosen:
                chosen.append(found)
        if len(chosen) > 1:
            held = frozenset[str]().union(*(catalog.document_terms(s, tx_us) for s in chosen))
            value = share(held)
            if value > best:
                best, where = value, " + ".join(chosen)
    return Evidence(coverage=best, best_source=where, similarity=similarity)
