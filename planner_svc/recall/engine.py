"""Phase A over the recall catalog: documents, hops between them, passages within them.

Source: memory-planner seed, "Phase A: the three recall legs" and "Exploding nodes to spans"
(legs fused into node scores, nodes exploded to weighted provenance spans). Retrieval over
short documents needs two levels, so this module scores:

1. **Documents.** A document's structured score is BM25 over its whole text (or over its nodes,
   when the request filters on labels or properties); its semantic score is the best exact
   cosine similarity of its nodes among the semantic leg's neighbours. Each leg is divided by
   its best and raised to its sharpness; with both legs a document scores their mean, so one
   both legs find outranks one only a leg finds. A multi-part question (a comparison or
   choice, :mod:`planner_svc.recall.question`) is also scored part by part, and a document
   keeps its best score: every part's best document scores like the question's.
2. **Hops.** From the best documents, edges to nodes of other documents (title mentions, in
   either direction) lead to documents the question does not describe directly: the second
   step of a two-hop question. A target scores ``source score x edge weight x hop decay x r``:
   ``r`` in [0, 1] is how well the target matches the *residual* of the question (its terms
   the source document does not hold, by BM25 and by the embedding of the residual words),
   relative to the source's best target, so the target that answers what the source leaves
   open wins.
3. **Passages.** Within each candidate document, the live nodes (grouped by the spans they
   cite) are ranked by local relevance: the better of their BM25 and their sharpened cosine
   similarity to the question (to the residual, for a document reached by a hop), each
   relative to the document's best. A group scores ``document score x (floor + (1 - floor) x
   local) x decay ** rank``: the passage that states the fact outranks the document's lead,
   and every document's best passage comes before the documents' second passages.

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

from planner_svc.core.fusion import clamp_unit, unit_power
from planner_svc.index.analysis import STOPWORDS, query_terms
from planner_svc.index.catalog import Catalog
from planner_svc.recall.question import Question, analyze_question
from planner_svc.recall.semantic import exact_similarities

__all__ = ["DocumentScore", "EngineSettings", "Evidence", "NodeScore", "Recalled",
           "SemanticAccess", "measure_evidence", "recall_documents"]

Vector = npt.NDArray[np.float32]
_WORD = re.compile(r"\w+")


class SemanticAccess(Protocol):
    """The semantic leg as the engine uses it, bound to one plan's as-of times."""

    def embed(self, text: str) -> Vector:
        """Unit float32 vector of ``text`` (all zeros when it holds no known token)."""
        ...

    def search(self, vector: Vector, k: int) -> Sequence[tuple[int, Vector]]:
        """Up to ``k`` candidate live node versions near ``vector``: ``(version_id, stored
        unit vector)``. The order and the index's own scores do not matter."""
        ...

    def vectors(self, version_ids: Sequence[int]) -> Mapping[int, Vector]:
        """Stored unit vectors by version id; versions without a vector are absent."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class EngineSettings:
    """How documents, hops and passages are scored (defaults chosen on the development set).

    Attributes:
        document_k: documents the structured leg keeps, >= 1.
        semantic_k: node versions the semantic leg keeps, >= 1.
        structured_sharpness, semantic_sharpness: exponents on leg scores relative to the
            leg's best (integral values are exactly reproducible).
        hop_sources: best documents whose edges are followed, >= 0.
        hop_decay: factor per hop, times the edge's weight, in (0, 1].
        candidate_documents: documents whose nodes enter the pool, >= 1.
        passage_floor: share of its document's score the least relevant node keeps, [0, 1].
        passage_decay: factor per rank within a document, in (0, 1].
        local_sharpness: exponent on a cosine relative to the best of its document (and on a
            hop target's residual cosine relative to the best target).
    """

    document_k: int = 50
    semantic_k: int = 50
    structured_sharpness: float = 4.0
    semantic_sharpness: float = 8.0
    hop_sources: int = 10
    hop_decay: float = 0.8
    candidate_documents: int = 60
    passage_floor: float = 0.3
    passage_decay: float = 0.5
    local_sharpness: float = 4.0


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
    """One candidate node: its score, its document, its local relevance and rank there."""

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
    """

    nodes: Mapping[int, NodeScore]
    documents: tuple[DocumentScore, ...]
    question: Question
    best_similarity: float | None = None
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


class _Planner:
    """One plan's Phase A state (the catalog and the legs, bound to the as-of times)."""

    def __init__(self, catalog: Catalog, settings: EngineSettings, semantic: SemanticAccess | None,
                 *, valid_us: int, tx_us: int) -> None:
        self.catalog = catalog
        self.settings = settings
        self.semantic = semantic
        self.valid_us = valid_us
        self.tx_us = tx_us

    # ---------------------------------------------------------------- documents

    def structured(self, terms: Sequence[str]) -> dict[str, float]:
        hits = self.catalog.documents.search(terms, valid_us=self.valid_us, tx_us=self.tx_us,
                                             limit=self.settings.document_k)
        raw: dict[str, float] = {}
        for row_id, score in hits:
            source = self.catalog.source_of_document(row_id)
            if source is not None:
                raw[source] = max(raw.get(source, 0.0), score)
        return _relative(raw, self.settings.structured_sharpness)

    def nearest(self, vector: Vector) -> tuple[dict[str, float], float | None]:
        if self.semantic is None or not np.any(vector):
            return {}, None
        hits = self.semantic.search(vector, self.settings.semantic_k)
        if not hits:
            return {}, None
        sims = exact_similarities(vector, np.stack([v for _, v in hits])).tolist()
        raw: dict[str, float] = {}
        for (version_id, _vector), sim in zip(hits, sims, strict=True):
            version = self.catalog.version(version_id)
            if version is not None and version.source is not None:
                raw[version.source] = max(raw.get(version.source, -1.0), sim)
        return _relative(raw, self.settings.semantic_sharpness), max(sims)

    def documents(self, text: str, vector: Vector | None
                  ) -> tuple[dict[str, tuple[float, float, float]], float | None]:
        """source -> (score, structured, semantic) for ``text``; the best raw similarity."""
        structured = self.structured(query_terms(text))
        semantic, best = self.nearest(vector) if vector is not None else ({}, None)
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

    # ---------------------------------------------------------------- hops

    def hops(self, question: Question, scores: Mapping[str, float]) -> dict[str, _Hop]:
        """target -> its best hop over the best ``hop_sources`` documents."""
        settings = self.settings
        sources = sorted(scores.items(), key=lambda kv: (-kv[1], kv[0]))[: settings.hop_sources]
        words = _WORD.findall(question.text)
        out: dict[str, _Hop] = {}
        for source, score in sources:
            if not score > 0.0:
                continue
            own = self.catalog.live_nodes_of(source, self.valid_us, self.tx_us)
            links: dict[str, float] = {}
            for _mine, other, weight in self.catalog.neighbours(own, self.valid_us, self.tx_us):
                if other.source is not None:
                    links[other.source] = max(links.get(other.source, 0.0), weight)
            if not links:
                continue
            held: set[str] = set()
            for version in own:
                held |= self.catalog.passages.row_terms(version.version_id)
            terms = tuple(t for t in question.terms if t not in held)
            kept = [w for w in words if w.casefold() not in STOPWORDS
                    and not set(query_terms(w)) & held]
            vector = self.embed(" ".join(kept)) if kept else None
            lexical: dict[str, float] = {}
            cosine: dict[str, float] = {}
            for target in sorted(links):
                ids = [m.version_id for m in
                       self.catalog.live_nodes_of(target, self.valid_us, self.tx_us)]
                found = self.catalog.passages.score_rows(terms, ids, valid_us=self.valid_us,
                                                         tx_us=self.tx_us)
                lexical[target] = max(found.values(), default=0.0)
                if vector is not None:
                    cosine[target] = max(self.similarities(vector, ids).values(), default=0.0)
            lex_rel = _relative(lexical, 1.0)
            cos_rel = _relative(cosine, settings.local_sharpness)
            for target, weight in sorted(links.items()):
                relevance = max(lex_rel.get(target, 0.0), cos_rel.get(target, 0.0))
                value = score * weight * settings.hop_decay * relevance
                current = out.get(target)
                if value > 0.0 and (current is None or value > current.score):
                    out[target] = _Hop(score=value, source=source, terms=terms, vector=vector)
        return out

    def similarities(self, vector: Vector, ids: Sequence[int]) -> dict[int, float]:
        """Exact cosine of ``vector`` with each stored vector of ``ids``."""
        if self.semantic is None or not ids:
            return {}
        stored = self.semantic.vectors(ids)
        have = [i for i in ids if i in stored]
        if not have:
            return {}
        sims = exact_similarities(vector, np.stack([stored[i] for i in have])).tolist()
        return dict(zip(have, sims, strict=True))

    # ---------------------------------------------------------------- passages

    def rank(self, source: str, terms: Sequence[str], vector: Vector | None
             ) -> list[tuple[list[int], float]]:
        """The live nodes of ``source`` grouped by the spans they cite, most relevant group
        first (ties by their smallest version id): ``(version ids, local relevance)``."""
        members = self.catalog.live_nodes_of(source, self.valid_us, self.tx_us)
        if not members:
            return []
        ids = [m.version_id for m in members]
        lexical = self.catalog.passages.score_rows(terms, ids, valid_us=self.valid_us,
                                                   tx_us=self.tx_us)
        lex_rel = _relative({str(k): s for k, s in lexical.items()}, 1.0)
        cos_rel: dict[str, float] = {}
        if vector is not None:
            cos_rel = _relative({str(k): max(0.0, s) for k, s in
                                 self.similarities(vector, ids).items()},
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


def recall_documents(
    catalog: Catalog,
    text: str,
    *,
    valid_us: int,
    tx_us: int,
    settings: EngineSettings,
    semantic: SemanticAccess | None,
    expand: bool,
) -> Recalled:
    """Score documents, hop from the best, and score every live node of the candidates (see
    the module docstring).

    Args:
        catalog: the read model.
        text: the question (non-empty).
        valid_us, tx_us: as-of times, microseconds.
        settings: scoring settings.
        semantic: the semantic leg, or None for the structured leg alone.
        expand: follow edges between documents (a request's ``expand_depth >= 1``).
    """
    question = analyze_question(text)
    state = _Planner(catalog, settings, semantic, valid_us=valid_us, tx_us=tx_us)
    vector = state.embed(text)
    direct, best_similarity = state.documents(text, vector)
    for part in question.parts:
        scored, _best = state.documents(part, state.embed(part))
        for source, legs in scored.items():
            if legs[0] > direct.get(source, (0.0, 0.0, 0.0))[0]:
                direct[source] = legs
    scores = {source: value[0] for source, value in direct.items()}
    hops = state.hops(question, scores) if expand and settings.hop_sources > 0 else {}
    combined = dict(scores)
    for target, reached in hops.items():
        combined[target] = max(combined.get(target, 0.0), reached.score)
    ranked = [(s, v) for s, v in sorted(combined.items(), key=lambda kv: (-kv[1], kv[0]))
              if v > 0.0][: settings.candidate_documents]
    nodes: dict[int, NodeScore] = {}
    documents = []
    residual: dict[str, tuple[str, ...]] = {}
    for source, score in ranked:
        hop = hops.get(source)
        by_hop = hop is not None and hop.score >= scores.get(source, 0.0)
        terms = hop.terms if by_hop and hop is not None else question.terms
        local_vector = hop.vector if by_hop and hop is not None and hop.vector is not None \
            else vector
        if by_hop and hop is not None:
            residual[source] = hop.terms
        for rank, (versions, relevance) in enumerate(state.rank(source, terms, local_vector)):
            value = score * (settings.passage_floor + (1.0 - settings.passage_floor) * relevance)
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
                    question=question, best_similarity=best_similarity, residual=residual)


@dataclass(frozen=True, slots=True, kw_only=True)
class Evidence:
    """How much of the question the best documents actually match, in absolute terms.

    Attributes:
        coverage: the largest share of the question's information (its terms weighted by
            idf over whole documents, as of the plan) that one document holds, or that a
            document and one document it links to hold together; in [0, 1].
        best_source: the document (or ``"A + B"`` pair) reaching it.
        similarity: the best cosine similarity of a node to the question (None without the
            semantic leg).
    """

    coverage: float
    best_source: str | None
    similarity: float | None


COVERAGE_DOCUMENTS = 20
"""Documents (best by BM25 over whole documents) whose coverage is measured."""
COVERAGE_LINKED = 5
"""Of those, the best ones whose linked documents are measured with them."""


def measure_evidence(catalog: Catalog, question: Question, best_similarity: float | None, *,
                     valid_us: int, tx_us: int) -> Evidence:
    """The absolute evidence for ``question`` (see :class:`Evidence`)."""
    terms = sorted(set(question.terms))
    weights = {t: catalog.documents.idf(t, valid_us=valid_us, tx_us=tx_us) for t in terms}
    total = 0.0
    for t in terms:
        total += weights[t]
    if not terms or not total > 0.0:
        return Evidence(coverage=0.0, best_source=None, similarity=best_similarity)

    def share(held: frozenset[str]) -> float:
        got = 0.0
        for t in terms:
            if t in held:
                got += weights[t]
        return got / total

    hits = catalog.documents.search(terms, valid_us=valid_us, tx_us=tx_us,
                                    limit=COVERAGE_DOCUMENTS)
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
    return Evidence(coverage=best, best_source=where, similarity=best_similarity)
