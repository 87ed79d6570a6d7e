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

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache, partial
from itertools import accumulate, chain, compress, filterfalse, groupby, pairwise, repeat
from operator import attrgetter, ge, is_not, itemgetter, lt, sub
from typing import NamedTuple, Protocol, cast

import numpy as np
import numpy.typing as npt

from planner_svc.core.fusion import clamp_unit, fuse, unit_power
from planner_svc.index.analysis import CONNECTIVES, STOPWORDS, is_cjk, query_terms
from planner_svc.index.catalog import Catalog, CatalogVersion, SourceEntry, group_columns
from planner_svc.index.lexical import LexicalView, cached_ln
from planner_svc.index.postings import postings_sums, postings_sums_many
from planner_svc.index.source import VectorRows, VersionIds
from planner_svc.recall.dots import gathered_dots, ordered_dots_many
from planner_svc.recall.question import Question, analyze_question
from planner_svc.recall.ranking import best_share, rank_groups, relative_scores
from planner_svc.recall.relevance import hop_values, relative_rows, segment_max
from planner_svc.recall.semantic import confidence_decay
from planner_svc.recall.settings import RecallSettings
from planner_svc.recall.timing import StageClock

__all__ = [
    "DocumentScore",
    "EngineQuery",
    "Evidence",
    "NodeArrays",
    "NodeGroups",
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

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Unit float32 vectors of ``texts``, ``(len(texts), dim)`` (a zero row for a text
        that holds no known token); each row depends on its text alone."""
        ...

    def search(self, vector: Vector, k: int) -> Sequence[tuple[int, float]]:
        """Up to ``k`` live node versions near ``vector``: ``(version_id, similarity)``, the
        similarity exact (:func:`~planner_svc.recall.semantic.exact_similarities` of
        ``vector`` and the stored vector). Their order never matters."""
        ...

    def vector_rows(self, version_ids: VersionIds) -> VectorRows:
        """Where the stored unit vectors of ``version_ids`` sit (a matrix and a row each, in
        their order), and which versions have one."""
        ...


@dataclass(slots=True, kw_only=True)
class EngineQuery:
    """What one plan asks of recall (not to be changed; not frozen: one is built every plan,
    and a frozen dataclass sets each field through ``object.__setattr__``).

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


DocumentRow = tuple[str, float, float, float, float, str | None]
"""A :class:`DocumentScore`'s fields in their order, as :class:`Recalled` keeps them."""


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeScore:
    """One candidate node: its score in [0, 1], its document, its local relevance in [0, 1]
    and its rank (0 = most relevant) within the document."""

    score: float
    source_id: str
    local: float
    rank: int


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeGroups:
    """The candidate nodes' span groups as columns, one row per group (the nodes of a group
    cite the same spans of one document and share its row): documents best first, each one's
    groups most relevant first.

    Attributes (one value per group, :class:`NodeScore`'s fields as columns):
        score: each group's score in [0, 1].
        source_id: its document.
        local: its local relevance in [0, 1].
        rank: its rank within the document (0 = most relevant).
    """

    score: tuple[float, ...]
    source_id: tuple[str, ...]
    local: tuple[float, ...]
    rank: tuple[int, ...]


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
        live_documents: the number of source documents with a version written by the plan's
            transaction time (whole documents: valid time does not apply); None when not
            counted.
    """

    coverage: float
    best_source: str | None
    similarity: float | None
    live_documents: int | None = None


@dataclass(slots=True, kw_only=True, eq=False)
class NodeArrays:
    """The candidate nodes' span groups as arrays, one row per group: documents best first,
    each one's groups most relevant first (what :class:`Recalled` builds its node and group
    views from, when asked). Not to be changed (not frozen: one is built every plan, and a
    frozen dataclass sets each field through ``object.__setattr__``).

    Attributes:
        score: each group's score in [0, 1], float64.
        owner: its document, an index into ``sources``, int64.
        sources: the candidate documents, best first.
        relevance: its local relevance in [0, 1], float64.
        rank: its rank within its document (0 = most relevant), int64.
        sizes: its number of nodes, int64.
        versions: the groups' version ids laid end to end, in group order (each group's
            ascending), int64.
    """

    score: npt.NDArray[np.float64]
    owner: npt.NDArray[np.int64]
    sources: Sequence[str]
    relevance: npt.NDArray[np.float64]
    rank: npt.NDArray[np.int64]
    sizes: npt.NDArray[np.int64]
    versions: npt.NDArray[np.int64]


@dataclass(slots=True, kw_only=True)
class Recalled:
    """Phase A's result (not to be changed; not frozen: one is built every plan, and a frozen
    dataclass sets each field through ``object.__setattr__``).

    Attributes:
        node_count: the number of live nodes of the candidate documents (:attr:`node_versions`
            lists them, :attr:`nodes` gives each one's :class:`NodeScore`).
        arrays: the nodes' span groups as arrays (:attr:`groups` gives their columns): a
            group's nodes share their score, local relevance and rank (and cite the same
            spans).
        firsts: each span group's first node (its smallest version id), ascending: one node
            standing for its group's spans.
        first_scores: the score of the group of each of ``firsts``, in their order.
        first_sizes: the number of nodes of the group of each of ``firsts``, in their order.
        document_rows: the candidate documents, best first (ties by source id), each as
            the fields of its :class:`DocumentScore` in their order (``source_id, score,
            structured, semantic, hop, hop_from``); :attr:`documents` gives the objects.
        question: the analysed question.
        best_similarity: the best raw cosine similarity of the semantic leg (None without it).
        semantic_hits: node versions the semantic leg returned.
        without_spans: versions a leg reached that cite no source (never evidence).
        residual: for each document ranked by a hop, the question's terms it was ranked on.
        evidence: the absolute evidence (:func:`measure_evidence`), when it was asked for.
        live_documents: the number of source documents with a version current at the plan's
            transaction time (whole documents: valid time does not apply).
        no_passage_valid: True when node versions are current at the plan's transaction time
            but none of them is valid at its valid time (every one's valid interval starts
            after it or ends at or before it), so recall can reach no passage.
    """

    node_count: int
    arrays: NodeArrays = field(repr=False)
    firsts: tuple[int, ...]
    first_scores: tuple[float, ...]
    first_sizes: tuple[int, ...]
    document_rows: tuple[DocumentRow, ...]
    question: Question
    best_similarity: float | None = None
    semantic_hits: int = 0
    without_spans: int = 0
    residual: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    evidence: Evidence | None = None
    live_documents: int = 0
    no_passage_valid: bool = False

    @property
    def groups(self) -> NodeGroups:
        """The nodes' span groups as columns (built on each call: for explain and tests, not
        the plan's hot path)."""
        arrays = self.arrays
        return NodeGroups(score=tuple(arrays.score.tolist()),
                          source_id=tuple(map(arrays.sources.__getitem__,
                                              arrays.owner.tolist())),
                          local=tuple(arrays.relevance.tolist()),
                          rank=tuple(arrays.rank.tolist()))

    def _by_version(self) -> tuple[list[int], list[int]]:
        """Every node once (a version cites one document first, so it sits in one group), by
        version id ascending, and each one's group (an index into :attr:`groups`)."""
        arrays = self.arrays
        flat = arrays.versions
        group_of = np.arange(arrays.sizes.shape[0], dtype=np.int64).repeat(arrays.sizes)
        order = flat.argsort(kind="stable")
        return flat[order].tolist(), group_of[order].tolist()

    @property
    def node_versions(self) -> tuple[int, ...]:
        """The version id of every live node of every candidate document, ascending (built
        on each call: for explain and tests, not the plan's hot path)."""
        return tuple(self._by_version()[0])

    @property
    def node_groups(self) -> tuple[int, ...]:
        """Each node's span group, an index into :attr:`groups`, in :attr:`node_versions`
        order (built on each call)."""
        return tuple(self._by_version()[1])

    @property
    def node_scores(self) -> tuple[float, ...]:
        """Each node's score in [0, 1], in :attr:`node_versions` order (its group's; built on
        each call: for tests, not the plan's hot path)."""
        return tuple(map(self.arrays.score.tolist().__getitem__, self.node_groups))

    @property
    def documents(self) -> tuple[DocumentScore, ...]:
        """The candidate documents, best first (ties by source id; built on each call: for
        explain and tests, not the plan's hot path)."""
        return tuple(DocumentScore(source_id=source, score=score, structured=structured,
                                   semantic=semantic, hop=hop, hop_from=hop_from)
                     for source, score, structured, semantic, hop, hop_from
                     in self.document_rows)

    @property
    def structured_documents(self) -> int:
        """Candidate documents the structured leg found (a structured score above 0)."""
        return sum(map(_IS_POSITIVE, map(itemgetter(2), self.document_rows)))

    @property
    def expanded_documents(self) -> int:
        """Candidate documents a hop reached (a hop score above 0)."""
        return sum(map(_IS_POSITIVE, map(itemgetter(4), self.document_rows)))

    @property
    def nodes(self) -> dict[int, NodeScore]:
        """Node version id -> its score, document, local relevance and rank, in ascending
        version id (built on each call: for explain and tests, not the plan's hot path)."""
        groups = self.groups
        scores = [NodeScore(score=score, source_id=source, local=local, rank=rank)
                  for score, source, local, rank in zip(groups.score, groups.source_id,
                                                        groups.local, groups.rank,
                                                        strict=True)]
        versions, group_of = self._by_version()
        return {version: scores[group] for version, group
                in zip(versions, group_of, strict=True)}


def _relative(scores: Mapping[str, float], sharpness: float) -> dict[str, float]:
    """``clamp((score / best) ** sharpness)`` per key; empty when the best is not positive.
    Every key at once (:func:`_relative_rows`'s operations per value, with one best: in one
    compiled pass, :func:`~planner_svc.recall.ranking.relative_scores`, for an integral
    sharpness, else in numpy) when the scores are finite; element by element otherwise."""
    if not scores:
        return {}
    values = np.fromiter(scores.values(), dtype=np.float64, count=len(scores))
    # Python's max of the values: numpy's when none is NaN (numpy's is NaN then); the sign of
    # a zero best never counts (it is not above 0.0)
    best = float(np.maximum.reduce(values))
    if math.isnan(best):
        best = max(scores.values())
    if not best > 0.0:
        return {}
    compiled = relative_scores(values, best, sharpness)
    if compiled is not None:
        return dict(zip(scores, compiled.tolist(), strict=True))
    # max(0.0, nan) and clamp_unit(nan) are 0.0 in Python, nan in numpy
    if not (np.logical_and.reduce(np.isfinite(values)) and math.isfinite(sharpness)):
        return {k: clamp_unit(unit_power(clamp_unit(max(0.0, s) / best), sharpness))
                for k, s in scores.items()}
    # _relative_rows with every value's best this one, above 0.0: nothing to mask
    ratio = (np.maximum(0.0, values) + 0.0) / best
    powered = _unit_powers(np.minimum(1.0, ratio), sharpness)
    relative = np.minimum(1.0, np.maximum(0.0, powered) + 0.0)
    return dict(zip(scores, relative.tolist(), strict=True))


Float64s = npt.NDArray[np.float64]


def _unit_powers(base: Float64s, exponent: float) -> Float64s:
    """:func:`~planner_svc.core.fusion.unit_power` of every element (the same chain of
    multiplications per element, so the same bits; a non-integral exponent falls back to
    ``unit_power`` element by element). Exponent 1 returns ``base`` itself."""
    value = float(exponent)
    if not (value.is_integer() and 0.0 <= value <= 1024.0):
        return np.fromiter((unit_power(b, value) for b in base.tolist()), dtype=np.float64,
                           count=base.shape[0])
    n = int(value)
    if not n:
        return np.ones_like(base)
    # the chain starts from its first factor (1.0 * x is x, bit for bit)
    result: Float64s | None = None
    square = base
    while True:
        if n & 1:
            result = square if result is None else result * square
        n >>= 1
        if not n:
            return square if result is None else result
        square = square * square


def _starts(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Where each consecutive segment of ``lengths[i]`` values starts (int64, same shape)."""
    starts: npt.NDArray[np.int64] = lengths.cumsum() - lengths
    return starts


def _within(lengths: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """Each value's position within its consecutive segment (segment ``i`` holds
    ``lengths[i]`` values): int64 ``(lengths.sum(),)``, ``0, 1, ..`` per segment."""
    return (np.arange(int(np.add.reduce(lengths)), dtype=np.int64)
            - _starts(lengths).repeat(lengths))


def _segment_max(values: Float64s, lengths: npt.NDArray[np.int64]) -> Float64s:
    """The largest value of each consecutive segment of ``values`` along its last axis
    (segment ``i`` holds ``lengths[i]`` values; for 2-D ``values``, each row's segments);
    0.0 for an empty segment. float64 ``values.shape[:-1] + (len(lengths),)``."""
    if not lengths.shape[0]:
        return np.zeros((*values.shape[:-1], 0), dtype=np.float64)
    rows = values if values.ndim == 2 else values.reshape(1, -1)
    if (rows.dtype == np.float64 and rows.flags.c_contiguous and lengths.dtype == np.int64
            and lengths.flags.c_contiguous):
        # one compiled pass (the same maxima); the lengths add up to the values' (else numpy)
        found = np.empty((rows.shape[0], lengths.shape[0]), dtype=np.float64)
        if segment_max(rows, lengths, found):
            return found if values.ndim == 2 else found.reshape(-1)
    # -inf after the values: every start is then inside, the last segment's run ends on it
    # and max(x, -inf) is x (an empty segment's reduceat value is dropped below)
    pad = (_MINUS_INF if values.ndim == 1 else _MINUS_INF_ROWS if values.shape[0] == 2
           else np.full((values.shape[0], 1), -np.inf))
    padded = np.concatenate((values, pad), axis=-1)
    out: Float64s = np.where(lengths > 0,
                             np.maximum.reduceat(padded, _starts(lengths), axis=-1), 0.0)
    return out


_MINUS_INF = np.full(1, -np.inf, dtype=np.float64)
_MINUS_INF_ROWS = np.full((2, 1), -np.inf, dtype=np.float64)


def _relative_rows(values: Float64s, best: Float64s, sharpness: Sequence[float]) -> Float64s:
    """:func:`_relative` of each row of the 2-D ``values``, every value against its own best
    in the same row of ``best`` (same shape; e.g. its segment's largest value, repeated),
    ``clamp((max(0, value) / best) ** sharpness)`` and +0.0 where the best is not positive,
    row ``i`` sharpened by ``sharpness[i]``: the same operations per value, the rows in one
    pass each (a row sharpened by 1.0 is not raised: ``unit_power``
    of exponent 1 is its base). float64, ``values``' shape. One compiled pass
    (:func:`~planner_svc.recall.relevance.relative_rows`, the same operations) when every
    exponent is an integer in [0, 1024]."""
    exponents = [int(e) for e in sharpness if float(e).is_integer() and 0.0 <= e <= 1024.0]
    if (len(exponents) == values.shape[0] and values.ndim == 2 and best.shape == values.shape
            and values.dtype == np.float64 and best.dtype == np.float64):
        out = np.empty(values.shape, dtype=np.float64)
        relative_rows(np.ascontiguousarray(values), np.ascontiguousarray(best),
                      np.asarray(exponents, dtype=np.int64), out)
        return out
    positive = best > 0.0
    ratio = np.divide(np.maximum(0.0, values) + 0.0, best,
                      out=np.zeros(values.shape, dtype=np.float64), where=positive)
    ratio = np.minimum(1.0, ratio)
    for row, exponent in enumerate(sharpness):
        if exponent != 1.0:
            ratio[row] = _unit_powers(ratio[row], exponent)
    powered = np.minimum(1.0, np.maximum(0.0, ratio) + 0.0)
    return np.where(positive, powered, 0.0)


def _hop_values(lexical: Float64s, cosine: Float64s, targets: npt.NDArray[np.int64],
                per_step: npt.NDArray[np.int64], probed: npt.NDArray[np.bool_],
                scores: Float64s, weights: Float64s, decay: float, sharpness: float
                ) -> Float64s:
    """:func:`~planner_svc.recall.relevance.hop_values` in numpy, for any sharpness: each
    target's best node (row 0 BM25, row 1 cosine), each step's best target, every target
    relative to it (:func:`_relative_rows`; the cosine sharpened, and counted only for a
    step with a probe), and ``step score x weight x decay x relevance``."""
    nodes = np.concatenate((lexical, cosine)).reshape(2, -1)
    best_node = _segment_max(nodes, targets)
    best_target = _segment_max(best_node, per_step).repeat(per_step, axis=1)
    relative = _relative_rows(best_node, best_target, (1.0, sharpness))
    if np.logical_and.reduce(probed):  # every step's cosine counts
        relevance = np.maximum(relative[0], relative[1])
    else:
        relevance = np.maximum(relative[0],
                               np.where(probed.repeat(per_step), relative[1], 0.0))
    values: Float64s = scores.repeat(per_step) * weights * decay * relevance
    return values


@dataclass(frozen=True, slots=True)
class _Step:
    """One hop step: the document it starts from, the question's residual there (its terms
    and its probe vector), and every target's nodes scored against that residual."""

    source: str
    terms: tuple[str, ...]
    vector: Vector | None
    scored: _Scored


class _Hop(NamedTuple):
    """A target's best hop: its score and the step it came by (the step scored its nodes:
    their local relevance is read from it only for the targets recall ranks). Built by
    ``tuple.__new__`` from ``(score, step, target)`` (no Python ``__new__`` call per hop)."""

    score: float
    step: _Step
    target: str


_PENDING = np.zeros(0, dtype=np.float64)  # a place cosine_arrays fills before returning
_IDS = attrgetter("ids")
_ID_ARRAY = attrgetter("id_array")
_GROUP_TABLE = attrgetter("group_table")
_IS_POSITIVE = partial(lt, 0.0)  # x > 0.0
_IS_NOT_NONE = partial(is_not, None)
_FIRST_RUN = np.zeros(1, dtype=np.int64)  # the one run of a list searched alone


def _is_short(postings: tuple[int, npt.NDArray[np.int64], Float64s]) -> bool:
    """Whether a term's postings of :class:`_PassageTable` are among its joined short lists."""
    return postings[0] >= 0


def _best_positive(keys: Sequence[str], values: Sequence[float], positive: Sequence[bool]
                   ) -> dict[str, int]:
    """Each key's best value among those marked ``positive``: key -> the index of its largest
    value (the first of equal ones), keys in the order of their first marked value. One pass
    over the marked indices (``values`` holds no NaN where marked): about 0.9 k instructions
    a value, against 1.5 k for a stable sort with a key function and two dict passes."""
    best: dict[str, int] = {}
    found = best.get
    for i in compress(range(len(values)), positive):
        key = keys[i]
        at = found(key)
        if at is None or values[i] > values[at]:
            best[key] = i
    return best


class _Words(NamedTuple):
    """A question's words as hops read them."""

    words: list[str]
    """Its words (repeats kept, in order) that are neither a stopword nor a connective."""
    terms: list[frozenset[str]]
    """Each of those words' query terms."""
    wanted: set[str]
    """The question's terms and those words' terms: the ones a hop source is asked for."""


WORD_MEMO_CHARACTERS = 64
"""Words up to this many characters have their query terms remembered across plans (at most
65,536 of them: a few megabytes); a longer word (a run of CJK characters, say, one term per
character pair) is analysed each time."""


def _word_terms(word: str) -> frozenset[str] | None:
    """The query terms of one word of a question (:func:`~planner_svc.index.analysis.
    query_terms`), None for a stopword or a connective (by its case folding). Remembered for
    words of at most :data:`WORD_MEMO_CHARACTERS` characters (a pure function; the words of
    questions repeat)."""
    if len(word) <= WORD_MEMO_CHARACTERS:
        return _short_word_terms(word)
    return _analysed_word(word)


@lru_cache(maxsize=1 << 16)
def _short_word_terms(word: str) -> frozenset[str] | None:
    """:func:`_word_terms` of a short word, remembered."""
    return _analysed_word(word)


def _analysed_word(word: str) -> frozenset[str] | None:
    """:func:`_word_terms`, computed."""
    folded = word.casefold()
    if folded in STOPWORDS or folded in CONNECTIVES:
        return None
    return frozenset(query_terms(word))


TABLE_JOINED_POSTINGS = 1 << 16
"""A plan's passage table lays the postings of its terms end to end, once a plan, when they hold
at most this many positions (a copy of at most 1 MB a term: positions and contributions), so an
ask's BM25 is one compiled call; a longer list (the commonest terms of a million passages) is
searched where it lies, in a call of its own. On the demo corpus every list is joined (the
longest holds a few thousand positions)."""


def _laid_end_to_end(arrays: Sequence[npt.NDArray[np.int64]], *, writable: bool = False
                     ) -> npt.NDArray[np.int64]:
    """C-contiguous int64 ``arrays`` laid end to end: ``np.concatenate(arrays)``'s values as
    an int64 array, read-only unless numpy joined it (the only one itself when there is
    one); with ``writable``, always a new writable array (what a kernel's mutable signature
    takes, even from read-only parts). One ``bytes.join`` (``bytearray.join``) of their
    buffers: about 0.5 k instructions an array, against numpy's 1.5 k (a plan joins the id
    arrays of dozens of documents of a few passages each, and the group tables and ids of
    some sixty ranked documents). An array that is not C-contiguous is joined by numpy. The
    arrays must be native int64, as their type says (the catalog's id arrays and group
    tables are): checking each one's dtype here would cost 0.1 M instructions a plan (171
    arrays), half of what the join saves."""
    if len(arrays) == 1 and not writable:
        return arrays[0]
    try:
        # (an ndarray exports its buffer, which is what join reads)
        joined = np.frombuffer((bytearray() if writable else b"").join(
            cast("Sequence[bytes]", arrays)), dtype=np.int64)
    except (BufferError, TypeError):  # not C-contiguous (join asks for a flat buffer)
        return np.concatenate(arrays).astype(np.int64, copy=False)
    return joined


class _PassageTable:
    """The passages (node versions) one plan scores, loaded once each, by the document (a
    key) they belong to: their positions in the passage BM25 view and where their stored
    vectors sit in the index (float32, read in place); and each query term's live postings
    with their BM25 contributions (read once; the lists of at most
    :data:`TABLE_JOINED_POSTINGS` positions laid end to end, so the BM25 of an ask's rows is
    one compiled lookup)."""

    def __init__(self, view: LexicalView, semantic: SemanticAccess | None) -> None:
        self._view = view
        self._semantic = semantic
        self._first: dict[str, int] = {}  # each loaded key -> the table row of its first id
        self._blocks: list[npt.NDArray[np.float32]] = []  # the index's matrices, as met
        self._numbers: dict[int, int] = {}  # id() of each of them (held above) -> its number
        # the loaded rows' columns, grown by doubling: position, block, row in the block
        self._columns = np.empty((3, 256), dtype=np.int64)
        self._size = 0  # rows loaded
        self._positions = self._columns[0, :0]  # each row's position in the passage view
        self._block = self._columns[1, :0]  # each row's block (-1: no vector)
        self._block_rows = self._columns[2, :0]  # its row in that block
        # each term looked up -> its run in the joined short lists (-1: a long list, kept
        # apart), its live positions and their contributions; None: no live passage holds it
        self._postings: dict[str, tuple[int, npt.NDArray[np.int64], Float64s] | None] = {}
        self._short: list[tuple[npt.NDArray[np.int64], Float64s]] = []
        self._joined: tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Float64s] | None = None

    def rows(self, keys: Sequence[str], groups: Sequence[npt.NDArray[np.int64]],
             lengths: Sequence[int] | None = None) -> npt.NDArray[np.int64]:
        """The table rows of the version ids ``groups[i]`` of each ``keys[i]``, laid end to
        end (int64; ``lengths``, when given, holds ``len(groups[i])`` of each). A key names
        the same ids on every call: a key loaded before keeps its rows, the others are loaded
        first (one batch, in the order they are named)."""
        first = self._first
        fresh = dict.fromkeys(filterfalse(first.__contains__, keys))
        if lengths is None:
            lengths = list(map(len, groups))
        if len(fresh) == len(keys) and keys:  # every key new and named once: rows in order
            start = self._size
            first.update(zip(keys, accumulate(lengths, initial=start), strict=False))
            self._load(_laid_end_to_end(groups))
            return np.arange(start, self._size, dtype=np.int64)
        if fresh:
            group_of = dict(zip(keys, zip(groups, lengths, strict=True), strict=True))
            loaded = list(map(group_of.__getitem__, fresh))
            first.update(zip(fresh, accumulate(map(itemgetter(1), loaded), initial=self._size),
                             strict=False))
            self._load(_laid_end_to_end(list(map(itemgetter(0), loaded))))
        # row of a group's j-th id: its key's first row + j, i.e. (first row - the group's
        # offset in the answer) + the id's position in the answer
        shifts = np.fromiter(map(sub, map(first.__getitem__, keys),
                                 accumulate(lengths, initial=0)),
                             dtype=np.int64, count=len(keys))
        rows: npt.NDArray[np.int64] = (shifts.repeat(lengths)
                                       + np.arange(sum(lengths), dtype=np.int64))
        return rows

    def _load(self, ids: npt.NDArray[np.int64]) -> None:
        """Load ``ids`` as the next table rows."""
        start = self._size
        end = start + ids.shape[0]
        columns = self._columns
        if end > columns.shape[1]:
            grown = np.empty((3, max(end, 2 * columns.shape[1])), dtype=np.int64)
            grown[:, :start] = columns[:, :start]
            columns = self._columns = grown
        columns[0, start:end] = self._view.positions(ids)
        if self._semantic is None:
            columns[1, start:end] = -1
            columns[2, start:end] = 0
        else:
            # VectorRows holds block -1 and row 0 for a version without a vector
            stored = self._semantic.vector_rows(ids)
            # the same matrix met in another load keeps its number
            numbers = [self._number(matrix) for matrix in stored.blocks]
            columns[1, start:end] = (
                stored.block if numbers == list(range(len(numbers)))
                else np.asarray([*numbers, -1], dtype=np.int64)[stored.block])
            columns[2, start:end] = stored.rows
        self._size = end
        # views of the rows loaded (a later growth copies: these stay as they are)
        self._positions = columns[0, :end]
        self._block = columns[1, :end]
        self._block_rows = columns[2, :end]

    def _number(self, matrix: npt.NDArray[np.float32]) -> int:
        # by identity: the list keeps each matrix alive, so its id() is never reused
        number = self._numbers.get(id(matrix))
        if number is None:
            number = self._numbers[id(matrix)] = len(self._blocks)
            self._blocks.append(matrix)
        return number

    def _look_up(self, terms: list[str]) -> None:
        """Read the live postings of each of ``terms`` not read yet (one lexical call)."""
        known = self._postings
        new = list(filterfalse(known.__contains__, terms))
        if not new:
            return
        found = {term: (rows, values) for term, rows, values in self._view.postings(new)}
        for term in new:
            got = found.get(term)
            if got is None:
                known[term] = None
            elif got[0].shape[0] <= TABLE_JOINED_POSTINGS:
                known[term] = (len(self._short), *got)
                self._short.append(got)
                self._joined = None
            else:
                known[term] = (-1, *got)

    def _joined_lists(self) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], Float64s]:
        """The short lists laid end to end: positions, where each list starts (and the end),
        contributions (built again after a short list is added)."""
        if self._joined is None:
            short = self._short
            self._joined = (np.concatenate(list(map(itemgetter(0), short))),
                            np.fromiter(accumulate(map(len, map(itemgetter(0), short)),
                                                   initial=0),
                                        dtype=np.int64, count=len(short) + 1),
                            np.concatenate(list(map(itemgetter(1), short))))
        return self._joined

    def bm25(self, terms: Sequence[str], rows: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
        """BM25 of ``terms`` at ``rows``: the terms' contributions added in code point order
        (:meth:`~planner_svc.index.lexical.LexicalView.score_rows`'s bits; 0.0 for a passage
        holding no term), by :func:`~planner_svc.index.postings.postings_sums`: the short
        lists' terms in one call, a long list's term in a call of its own, in term order."""
        ordered = sorted(set(terms))
        self._look_up(ordered)
        held = cast("list[tuple[int, npt.NDArray[np.int64], Float64s]]", list(filter(
            _IS_NOT_NONE, map(self._postings.__getitem__, ordered))))
        out = np.zeros(rows.shape[0], dtype=np.float64)
        if not held or not rows.shape[0]:
            return out
        if not rows.flags.c_contiguous or rows.dtype != np.int64:
            rows = np.ascontiguousarray(rows, dtype=np.int64)
        runs = ([held] if min(map(itemgetter(0), held)) >= 0
                else [list(run) for _short, run in groupby(held, key=_is_short)])
        fresh = True  # 0.0 + the first contribution is the contribution (none is -0.0)
        for run in runs:
            if run[0][0] >= 0:  # short lists: one call
                keys, starts, values = self._joined_lists()
                postings_sums(keys, starts, values,
                              np.fromiter(map(itemgetter(0), run), dtype=np.int64,
                                          count=len(run)),
                              self._positions, rows, fresh, out)
                fresh = False
                continue
            for _at, positions, values in run:  # a long list: alone, not copied
                postings_sums(positions, np.asarray((0, positions.shape[0]), dtype=np.int64),
                              values, _FIRST_RUN, self._positions, rows, fresh, out)
                fresh = False
        return out

    def bm25_many(self, asks: Sequence[Sequence[str]], rows: npt.NDArray[np.int64],
                  offsets: Sequence[int]) -> list[Float64s]:
        """:meth:`bm25` of each ask's terms at its run of ``rows`` (``rows[offsets[a]:
        offsets[a + 1]]``; ``offsets`` ascends from 0 to ``len(rows)``), the same bits: every
        ask in one :func:`~planner_svc.index.postings.postings_sums_many` call when all
        their terms' lists are joined (else ask by ask; the rows of an ask are its documents'
        passages, each document's in version id order, so their positions mostly ascend).
        Each answer is a view of one array."""
        ordered = [sorted(set(terms)) for terms in asks]
        self._look_up(sorted(set(chain.from_iterable(ordered))))
        postings = self._postings
        runs = [[found[0] for term in terms if (found := postings[term]) is not None]
                for terms in ordered]
        flat = list(chain.from_iterable(runs))
        if (not flat or min(flat) < 0 or rows.dtype != np.int64
                or not rows.flags.c_contiguous or offsets[-1] != rows.shape[0]):
            return [self.bm25(terms, rows[start:end]) for terms, (start, end)
                    in zip(asks, pairwise(offsets), strict=True)]
        keys, starts, values = self._joined_lists()
        out = np.empty(rows.shape[0], dtype=np.float64)
        postings_sums_many(keys, starts, values,
                           np.fromiter(flat, dtype=np.int64, count=len(flat)),
                           np.fromiter(accumulate(map(len, runs), initial=0),
                                       dtype=np.int64, count=len(runs) + 1),
                           self._positions, rows, np.asarray(offsets, dtype=np.int64), out)
        return [out[start:end] for start, end in pairwise(offsets)]

    def stored(self, rows: npt.NDArray[np.int64]) -> npt.NDArray[np.bool_]:
        """Whether each of ``rows`` has a stored vector."""
        has: npt.NDArray[np.bool_] = self._block[rows] >= 0
        return has

    def cosine_arrays(self, asks: Sequence[tuple[Vector | None, npt.NDArray[np.int64]]]
                      ) -> list[Float64s]:
        """Exact cosine of each ask's vector with the stored vector of each of its rows, as
        float64 ``(len(rows),)``: 0.0 for a row without a stored vector (:meth:`stored`) and
        for an ask without a vector. Every ask's rows go through one
        :func:`~planner_svc.recall.dots.gathered_dots` call when the table has met one
        matrix, else one :func:`~planner_svc.recall.dots.ordered_dots_many` call per matrix
        they sit in (the same bits)."""
        scored = [(a, vector, rows) for a, (vector, rows) in enumerate(asks)
                  if vector is not None and rows.shape[0]]
        if not scored:
            return [np.zeros(rows.shape[0], dtype=np.float64) for _v, rows in asks]
        # zeros for the asks not scored; the scored ones' places are filled by _split
        out: list[Float64s] = [_PENDING if vector is not None and rows.shape[0]
                               else np.zeros(rows.shape[0], dtype=np.float64)
                               for vector, rows in asks]
        # every ask at once: its rows laid end to end, each with its ask's query
        rows = (np.concatenate([rows for _a, _v, rows in scored]) if len(scored) > 1
                else scored[0][2])
        counts = [rows_of.shape[0] for _a, _v, rows_of in scored]
        queries = np.array([vector for _a, vector, _r in scored], dtype=np.float64)
        if len(self._blocks) == 1:  # every stored vector the table has met sits in one matrix
            if not rows.flags.c_contiguous:
                rows = rows.copy()
            values = np.zeros(rows.shape[0], dtype=np.float64)
            # gathers, the rows with a vector and their products in one call (0.0 stays for
            # a row without a vector)
            gathered_dots(np.ascontiguousarray(self._blocks[0], dtype=np.float32),
                          self._block, self._block_rows, rows,
                          np.fromiter(accumulate(counts, initial=0), dtype=np.int64,
                                      count=len(counts) + 1), queries, 0, values)
            return self._split(out, scored, values, counts)
        which = np.arange(len(scored), dtype=np.int64).repeat(counts)
        block = self._block[rows]
        held = (block >= 0).nonzero()[0]
        if not held.shape[0]:
            return [np.zeros(rows.shape[0], dtype=np.float64) for _v, rows in asks]
        values = np.zeros(rows.shape[0], dtype=np.float64)
        # one kernel call per block the rows sit in (not one pass per block the table has
        # met: an index may hold hundreds of segments)
        held = held[np.argsort(block[held], kind="stable")]
        cuts = (np.flatnonzero(np.diff(block[held])) + 1).tolist()
        for at in np.split(held, cuts):
            matrix = self._blocks[int(block[at[0]])]
            values[at] = ordered_dots_many(matrix, self._block_rows[rows[at]], queries,
                                           which[at])
        return self._split(out, scored, values, counts)

    @staticmethod
    def _split(out: list[Float64s],
               scored: Sequence[tuple[int, Vector, npt.NDArray[np.int64]]],
               values: Float64s, counts: Sequence[int]) -> list[Float64s]:
        """``out`` with each scored ask's run of ``values`` (``counts[i]`` values for
        ``scored[i]``, laid end to end) in its place."""
        end = 0
        for (a, _v, _r), count in zip(scored, counts, strict=True):
            end += count
            out[a] = values[end - count:end]
        return out


@dataclass(slots=True)
class _Ranked:
    """The span groups of :meth:`_Recall.rank`, one row per group: documents in the order
    asked, each one's groups most relevant first."""

    owner: npt.NDArray[np.int64]
    """Each group's document (its index in the ask)."""
    relevance: Float64s
    """Each group's local relevance in [0, 1]."""
    sizes: npt.NDArray[np.int64]
    """Each group's number of nodes."""
    versions: npt.NDArray[np.int64]
    """The groups' version ids laid end to end, in group order (each group's ascending)."""
    firsts: npt.NDArray[np.int64]
    """Each group's smallest version id."""
    rank: npt.NDArray[np.int64]
    """Each group's rank within its document (0 = most relevant)."""
    score: Float64s
    """Each group's score: ``sharp x (floor + (1 - floor) x relevance) x decay ** rank``,
    ``sharp`` its document's score raised to ``document_sharpness`` (module docstring)."""
    first_ids: list[int]
    """The groups' smallest version ids, ascending (the groups by their first node)."""
    first_scores: list[float]
    """The score of each group of ``first_ids``, in their order."""
    first_sizes: list[int]
    """The number of nodes of each group of ``first_ids``, in their order."""


class _Scored:
    """One ask of :meth:`_Recall.local`: every live node of its sources (sources in the ask's
    order, each one's nodes in version id order), with their BM25 against the ask's terms and
    their cosine with its vector (0.0 for a node without a stored vector, or without a vector:
    the same relevance as a missing cosine, which only ever counts through ``max(0.0,
    cosine)`` relative to a best)."""

    __slots__ = ("_start_of", "cosine", "lengths", "lexical")

    def __init__(self, lexical: Float64s, cosine: Float64s, lengths: list[int],
                 sources: Sequence[str]) -> None:
        self.lexical = lexical
        self.cosine = cosine
        self.lengths = lengths
        """Nodes per source, in the ask's order."""
        # where each source's nodes start (a source named twice: its last run, as before)
        self._start_of = dict(zip(sources, accumulate(lengths, initial=0), strict=False))


def _laid_out(documents: Sequence[tuple[str, _Scored]]
              ) -> tuple[Float64s, Float64s, list[int]]:
    """The BM25 and cosine arrays of the asks that scored ``documents`` (each ``(source,
    scored)``), laid end to end (each ask once, in first-use order: an ask hashes by
    identity), and where each document's nodes start in them."""
    asks = list(dict.fromkeys(map(itemgetter(1), documents)))
    # (the running totals from 0: one more than the asks, the last unused)
    offsets = dict(zip(asks, accumulate([scored.lexical.shape[0] for scored in asks],
                                        initial=0), strict=False))
    firsts = [offsets[scored] + scored._start_of[source]
              for source, scored in documents]
    if len(asks) == 1:
        return asks[0].lexical, asks[0].cosine, firsts
    return (np.concatenate([scored.lexical for scored in asks]),
            np.concatenate([scored.cosine for scored in asks]), firsts)


def _gathered(documents: Sequence[tuple[str, _Scored]], lengths: npt.NDArray[np.int64]
              ) -> tuple[Float64s, Float64s]:
    """The BM25 and cosine of each ``(source, scored)``'s nodes (``lengths[i]`` of them for
    document ``i``) from the ask that scored them, laid end to end in the given order: one
    gather from the asks' arrays laid end to end (:func:`_laid_out`)."""
    lexical, cosine, firsts = _laid_out(documents)
    # node j of document i sits at firsts[i] + j
    picks = ((np.asarray(firsts, dtype=np.int64) - _starts(lengths)).repeat(lengths)
             + np.arange(int(np.add.reduce(lengths)), dtype=np.int64))
    return lexical[picks], cosine[picks]


def _merged(structured: Mapping[str, float], semantic: Mapping[str, float]
            ) -> dict[str, tuple[float, float, float]]:
    """Each document of either leg's relative scores: source -> ``(score, s, v)``, ``s`` and
    ``v`` its legs' (0.0 for a leg that missed it), ``score`` ``(s + v) / 2.0`` when both
    legs found documents, else ``max(s, v)`` (the first when equal or NaN: ``v if v > s
    else s``). The structured leg's documents first, in its order, then the semantic leg's
    others."""
    out: dict[str, tuple[float, float, float]] = {}
    if structured and semantic:
        found = semantic.get
        for source, s in structured.items():
            v = found(source, 0.0)
            out[source] = ((s + v) / 2.0, s, v)
        for source, v in semantic.items():
            if source not in out:
                out[source] = ((0.0 + v) / 2.0, 0.0, v)
        return out
    for source, s in structured.items():  # max(s, 0.0)
        out[source] = (0.0 if s < 0.0 else s, s, 0.0)
    for source, v in semantic.items():  # max(0.0, v)
        out[source] = (v if v > 0.0 else 0.0, 0.0, v)
    return out


class _Recall:
    """One plan's Phase A (the catalog and the legs, bound to the query)."""

    def __init__(self, catalog: Catalog, query: EngineQuery, settings: RecallSettings,
                 semantic: SemanticAccess | None, clock: StageClock | None = None) -> None:
        self.catalog = catalog
        self.clock = clock if clock is not None else StageClock()
        self.query = query
        self.settings = settings
        self.semantic = semantic if query.semantic else None
        self.valid_us = query.valid_us
        self.tx_us = query.tx_us
        self.passages = catalog.passages.view(valid_us=query.valid_us, tx_us=query.tx_us)
        self.documents_view = catalog.documents.view(valid_us=query.valid_us, tx_us=query.tx_us)
        self.semantic_hits = 0
        self.unsourced: set[int] = set()  # versions a leg reached that cite no source
        self._entries: dict[str, SourceEntry] = {}
        self._links: dict[str, Mapping[str, float]] = {}
        self.table = _PassageTable(self.passages, self.semantic)
        self._searches: dict[str, tuple[int, list[tuple[int, float]]]] = {}
        self.vector: Vector | None = None  # the question's vector, once known
        self._query_terms: dict[str, list[str]] = {}
        self._question_words: dict[str, _Words] = {}

    def entry(self, source: str) -> SourceEntry:
        """The document's live nodes and their span groups (read once per plan)."""
        found = self._entries.get(source)
        return found if found is not None else self.entries((source,))[0]

    def entries(self, sources: Sequence[str]) -> list[SourceEntry]:
        """:meth:`entry` of each of ``sources``, in their order; the ones this plan has not
        read yet in one catalog call."""
        known = self._entries
        missing = list(filterfalse(known.__contains__, sources))
        if missing:
            found = self.catalog.entries(missing, self.valid_us, self.tx_us)
            known.update(zip(missing, found, strict=True))
            if len(missing) == len(sources):  # every one read now: the catalog's list
                return found
        return list(map(known.__getitem__, sources))

    def links(self, source: str) -> Mapping[str, float]:
        """The documents the document's edges reach, with their weights (read once per
        plan; see :meth:`~planner_svc.index.catalog.Catalog.links`)."""
        found = self._links.get(source)
        if found is None:
            found = self._links[source] = self.catalog.links(source, self.entry(source),
                                                              self.valid_us, self.tx_us)
        return found

    # ---------------------------------------------------------------- documents

    def query_terms(self, text: str) -> list[str]:
        """:func:`~planner_svc.index.analysis.query_terms` of ``text`` (analysed once per
        plan; the list is shared, not to be changed)."""
        found = self._query_terms.get(text)
        if found is None:
            found = self._query_terms[text] = query_terms(text)
        return found

    def search_documents(self, text: str, limit: int) -> list[tuple[int, float]]:
        """BM25 over whole documents of ``text``'s query terms: the ``limit`` best rows (a
        search already made for the same text with at least that limit is reused: its first
        rows are the same)."""
        done = self._searches.get(text)
        if done is not None and done[0] >= limit:
            return done[1][:limit]
        hits = self.documents_view.search(self.query_terms(text), limit=limit)
        self._searches[text] = (limit, hits)
        return hits

    def structured(self, text: str) -> dict[str, float]:
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
        hits = self.search_documents(text, self.query.document_k)
        sources = self.catalog.sources_of_documents(map(itemgetter(0), hits))
        if None not in sources and len(set(sources)) == len(sources):
            # a document once each: its score (a hit's BM25 is above 0.0)
            return dict(zip(cast("list[str]", sources), map(itemgetter(1), hits), strict=True))
        for source, (_row, score) in zip(sources, hits, strict=True):
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
        if self.semantic is None or vector is None or not vector.any():
            return {}, None
        hits = self.semantic.search(vector, self.query.semantic_k)
        self.semantic_hits = max(self.semantic_hits, len(hits))
        if not hits:
            return {}, None
        raw: dict[str, float] = {}
        fused = self.query.alpha != 1.0  # _semantic_score is clamp_unit alone at alpha 1
        for (version_id, sim), version in zip(
                hits, self.catalog.versions(map(_VERSION_ID, hits)), strict=True):
            if version is None or (source := version.source) is None:
                self.unsourced.add(version_id)
                continue
            if fused:
                score = self._semantic_score(version, sim)
            else:  # clamp_unit(sim), inlined (NaN -> 0.0, -0.0 kept)
                score = sim if 0.0 <= sim <= 1.0 else 1.0 if sim > 1.0 else 0.0
            current = raw.get(source, 0.0)
            raw[source] = score if score > current else current  # max(current, score)
        return raw, max(map(_SIMILARITY, hits))

    def complete(self, text: str, vector: Vector | None,
                 structured: dict[str, float], semantic: dict[str, float]) -> None:
        """Give every document one leg found the other leg's raw score too (in place)."""
        if self.query.filtered is None:
            with self.clock.stage("structured"):
                missing = sorted(set(semantic) - set(structured))
                # row -> its document (a document without a current row under None, dropped)
                found = dict(zip(self.catalog.document_rows(missing, self.tx_us), missing,
                                 strict=True))
                found.pop(None, None)
                rows = cast("dict[int, str]", found)
                scored = self.documents_view.score_rows(self.query_terms(text), sorted(rows))
                structured.update(zip(map(rows.__getitem__, scored), scored.values(),
                                      strict=True))
        if vector is not None:
            with self.clock.stage("semantic"):
                sources = sorted(set(structured) - set(semantic))
                entries = self.entries(sources)
                groups = list(map(_ID_ARRAY, entries))
                rows_of = self.table.rows(sources, groups)
                cosine = self.table.cosine_arrays([(vector, rows_of)])[0]
                if self.query.alpha == 1.0:  # the score is the clamped similarity: all at once
                    # clamp_unit's bounds (fmax: its NaN -> 0.0 too; only a best above 0.0
                    # is kept, so the sign of a zero never counts); a member without a stored
                    # vector has cosine +0.0, so it counts as 0.0, the loop's starting best
                    scores = np.minimum(1.0, np.fmax(cosine, 0.0))
                    lengths = np.fromiter(map(len, groups), dtype=np.int64, count=len(groups))
                    bests = _segment_max(scores, lengths).tolist()
                    semantic.update(compress(zip(sources, bests, strict=True),
                                             map(_IS_POSITIVE, bests)))
                    return
                sims, held = cosine.tolist(), self.table.stored(rows_of).tolist()
                at = 0
                for source, entry in zip(sources, entries, strict=True):
                    best = 0.0
                    for member in entry.members:
                        if held[at]:
                            best = max(best, self._semantic_score(member, sims[at]))
                        at += 1
                    if best > 0.0:
                        semantic[source] = best

    def documents(self, text: str, vector: Vector | None
                  ) -> tuple[dict[str, tuple[float, float, float]], float | None]:
        """source -> (score, structured, semantic); the best raw similarity. The documents
        come in no particular order (the structured leg's, then the semantic leg's others):
        every reader looks a document up, or orders them by score and source id."""
        with self.clock.stage("structured"):
            raw_structured = self.structured(text)
        with self.clock.stage("semantic"):
            raw_semantic, best = self.nearest(vector)
        if raw_structured and raw_semantic:
            self.complete(text, vector, raw_structured, raw_semantic)
        with self.clock.stage("fusion"):
            structured = _relative(raw_structured, self.settings.structured_sharpness)
            semantic = _relative(raw_semantic, self.settings.semantic_sharpness)
            return _merged(structured, semantic), best

    def embed(self, texts: Sequence[str]) -> list[Vector | None]:
        """Each text's unit vector, None for a blank text, one without a known token, or
        without the semantic leg; one batch for all of them."""
        if self.semantic is None:
            return [None] * len(texts)
        wanted = sorted({t for t in texts if t.strip()})
        if not wanted:
            return [None] * len(texts)
        rows = self.semantic.embed(wanted)
        nonzero: list[bool] = np.logical_or.reduce(rows, axis=1).tolist()
        found: dict[str, Vector | None] = {
            t: row if held else None for t, row, held in zip(wanted, rows, nonzero, strict=True)}
        return [found.get(t) for t in texts]

    # ---------------------------------------------------------------- local relevance

    def local(self, asks: Sequence[tuple[Sequence[str], Sequence[str], Vector | None]]
              ) -> list[_Scored]:
        """For each ask ``(sources, terms, vector)``, every live node of its sources scored
        against its terms (BM25 over passages) and its vector (exact cosine). All asks in one
        batch.

        The BM25 is :meth:`~planner_svc.index.lexical.LexicalView.score_rows`'s (0.0 where a
        node holds no term), the cosine :func:`~planner_svc.recall.semantic.exact_similarities`'s
        (products exact in float64, added in index order)."""
        named = list(chain.from_iterable(ask for ask, _t, _v in asks))
        groups = list(map(_ID_ARRAY, self.entries(named)))
        every = list(map(len, groups))
        rows = self.table.rows(named, groups, every)
        parts: list[npt.NDArray[np.int64]] = []
        lengths: list[list[int]] = []
        offsets = [0]  # where each ask's rows start in ``rows`` (and the end)
        at = row = 0
        for ask, _t, _v in asks:
            counts = every[at:at + len(ask)]
            at += len(ask)
            end = row + sum(counts)
            parts.append(rows[row:end])
            lengths.append(counts)
            offsets.append(end)
            row = end
        cosines = self.table.cosine_arrays([(vector, part) for (_s, _t, vector), part
                                            in zip(asks, parts, strict=True)])
        # every ask's BM25 at once (its terms' postings read in one lexical lookup: a term's
        # contribution at a row is the same whichever ask reads it)
        lexical = self.table.bm25_many(list(map(itemgetter(1), asks)), rows, offsets)
        return [_Scored(bm25, cosine, counts, sources)
                for (sources, _terms, _vector), counts, bm25, cosine
                in zip(asks, lengths, lexical, cosines, strict=True)]

    # ---------------------------------------------------------------- hops

    def _words(self, question: Question) -> _Words:
        """The question's words a residual may keep and the terms a hop source is asked for
        (read once per plan and question)."""
        found = self._question_words.get(question.text)
        if found is None:
            words = _WORD.findall(question.text)
            found_terms = list(map(
                _short_word_terms if max(map(len, words), default=0) <= WORD_MEMO_CHARACTERS
                else _word_terms, words))
            kept = list(compress(words, map(_IS_NOT_NONE, found_terms)))
            sets = cast("list[frozenset[str]]", list(filter(_IS_NOT_NONE, found_terms)))
            wanted = {*question.terms, *chain.from_iterable(sets)}
            found = self._question_words[question.text] = _Words(kept, sets, wanted)
        return found

    def hops(self, question: Question, scores: Mapping[str, float], vector: Vector | None
             ) -> dict[str, _Hop]:
        """target -> its best hop from the best ``hop_sources`` documents of ``scores``."""
        settings = self.settings
        sources = _best_first(scores, settings.hop_sources)
        words = self._words(question)
        positive = [(source, score) for source, score in sources if score > 0.0]
        entries = self.entries(list(map(itemgetter(0), positive)))  # one catalog read
        linked: list[tuple[str, float, Mapping[str, float]]] = []
        groups: list[npt.NDArray[np.int64]] = []
        for (source, score), entry in zip(positive, entries, strict=True):
            links = self.links(source)
            if links:
                linked.append((source, score, links))
                groups.append(entry.id_array)
        steps: list[tuple[str, float, Mapping[str, float], tuple[str, ...], str]] = []
        # the terms each source holds, every source in one lexical call
        for (source, score, links), held in zip(
                linked, self.passages.held_terms_many(groups, words.wanted), strict=True):
            # the question's terms the source lacks; the words none of whose terms it holds
            terms = tuple(filterfalse(held.__contains__, question.terms))
            kept = " ".join(compress(words.words, map(held.isdisjoint, words.terms)))
            steps.append((source, score, links, terms, kept))
        out: dict[str, _Hop] = {}
        if not steps:
            return out
        residuals = self.embed([text for *_, text in steps])
        probes = [residual if residual is not None or question.text else vector
                  for residual in residuals]
        scored = self.local([(list(links), terms, probe) for (_s, _v, links, terms, _t),
                             probe in zip(steps, probes, strict=True)])
        # Every step's targets at once: a target's lexical (cosine) relevance is its best
        # node's BM25 (cosine) relative to the step's best target, as _relative computes it.
        targets = np.fromiter(chain.from_iterable(found.lengths for found in scored),
                              dtype=np.int64)
        per_step = np.asarray([len(links) for _s, _v, links, _t, _x in steps],
                              dtype=np.int64)
        probed = np.asarray([p is not None for p in probes], dtype=np.bool_)
        step_scores = np.asarray([score for _s, score, *_ in steps], dtype=np.float64)
        weights = np.fromiter(chain.from_iterable(links.values() for _s, _v, links, _t, _x
                                                  in steps), dtype=np.float64)
        lexical = (np.concatenate([found.lexical for found in scored]) if len(scored) > 1
                   else scored[0].lexical)
        cosine = (np.concatenate([found.cosine for found in scored]) if len(scored) > 1
                  else scored[0].cosine)
        sharpness = float(settings.local_sharpness)
        if sharpness.is_integer() and 0.0 <= sharpness <= 1024.0:  # unit_power's chain
            values = hop_values(np.ascontiguousarray(lexical), np.ascontiguousarray(cosine),
                                targets, per_step, probed, step_scores, weights,
                                float(settings.hop_decay), int(sharpness))
        else:
            values = _hop_values(lexical, cosine, targets, per_step, probed, step_scores,
                                 weights, settings.hop_decay, sharpness)
        made = [_Step(source=source, terms=terms, vector=probe, scored=found)
                for (source, _score, _links, terms, _text), probe, found
                in zip(steps, probes, scored, strict=True)]
        # each target's best step (the first of equal ones) among the values above 0.0; its
        # hop is built once
        reached = list(chain.from_iterable(links for _s, _v, links, _t, _x in steps))
        by = list(chain.from_iterable(repeat(step, len(links)) for step, (_s, _v, links, _t, _x)
                                      in zip(made, steps, strict=True)))
        listed = values.tolist()
        best = _best_positive(reached, listed, (values > 0.0).tolist())
        chosen = list(best.values())
        built = cast("Iterator[_Hop]", map(tuple.__new__, repeat(_Hop), zip(
            map(listed.__getitem__, chosen), map(by.__getitem__, chosen), best, strict=True)))
        return dict(zip(best, built, strict=True))

    # ---------------------------------------------------------------- passages

    def rank(self, documents: Sequence[tuple[str, _Scored]], scores: Sequence[float]
             ) -> _Ranked:
        """The live nodes of each ``(source, scored)`` (``scored``: the ask of :meth:`local`
        that scored them) grouped by the spans they cite, as columns, with the groups'
        scores (``scores``: each document's, in the given order; see the module docstring):
        documents in the given order, each one's groups most relevant first (ties by their
        smallest version id). A node's relevance is the better of its BM25 and its cosine
        (clipped at 0), each relative to the document's best (sharpened by
        ``local_sharpness``); a group's is its best node's. Every document at once, in one
        compiled pass (:func:`~planner_svc.recall.ranking.rank_groups`) when the scores are
        finite and the sharpnesses integral, else in numpy (:meth:`_rank_arrays`: the same
        bits)."""
        entries = self.entries(list(map(itemgetter(0), documents)))
        if not entries:
            return self._rank_arrays(documents, entries, scores)
        settings = self.settings
        lexical, cosine, firsts = _laid_out(documents)
        tables = list(map(_GROUP_TABLE, entries))
        ids = list(map(_ID_ARRAY, entries))
        ranked = rank_groups(
            lexical, cosine, np.asarray(firsts, dtype=np.int64),
            np.fromiter(map(len, ids), dtype=np.int64, count=len(ids)),
            _laid_end_to_end(tables, writable=True),
            np.fromiter(map(len, tables), dtype=np.int64, count=len(tables)),
            _laid_end_to_end(ids, writable=True), settings.local_sharpness,
            np.asarray(scores, dtype=np.float64), settings.document_sharpness,
            settings.passage_floor, _remembered_decays(settings.passage_decay))
        if ranked is None:
            return self._rank_arrays(documents, entries, scores)
        (owner, relevance, sizes, group_firsts, versions, rank, score, first_ids,
         first_scores, first_sizes) = ranked
        return _Ranked(owner=owner, relevance=relevance, sizes=sizes, versions=versions,
                       firsts=group_firsts, rank=rank, score=score,
                       first_ids=first_ids.tolist(), first_scores=first_scores.tolist(),
                       first_sizes=first_sizes.tolist())

    def _rank_arrays(self, documents: Sequence[tuple[str, _Scored]],
                     entries: Sequence[SourceEntry], scores: Sequence[float]) -> _Ranked:
        """:meth:`rank` in numpy (``entries``: the documents' entries, in their order)."""
        settings = self.settings
        lengths = np.asarray(list(map(len, map(_IDS, entries))), dtype=np.int64)
        if not int(np.add.reduce(lengths)):
            empty = np.zeros(0, dtype=np.int64)
            return _Ranked(owner=empty, relevance=np.zeros(0, dtype=np.float64), sizes=empty,
                           versions=empty, firsts=empty, rank=empty,
                           score=np.zeros(0, dtype=np.float64), first_ids=[],
                           first_scores=[], first_sizes=[])
        lexical, cosine = _gathered(documents, lengths)
        # Both measures at once, one row each (the BM25, the cosine clipped at 0 with -0.0 as
        # +0.0): each document's best (its run's largest value, 0.0 for no node), then every
        # value relative to it (sharpened by ``local_sharpness`` for the cosine).
        both = np.stack((lexical, np.maximum(0.0, cosine) + 0.0))
        best = _segment_max(both, lengths).repeat(lengths, axis=1)
        relative = _relative_rows(both, best, (1.0, settings.local_sharpness))
        node_rel = np.maximum(relative[0], relative[1])
        # groups of every document: their members' positions in the flat arrays
        local_members, sizes, firsts, per_entry = group_columns(entries)
        members = local_members + _starts(lengths).repeat(lengths)
        owners = np.arange(len(entries), dtype=np.int64).repeat(per_entry)
        group_rel = _segment_max(node_rel[members], sizes)
        order = np.lexsort((firsts, -group_rel, owners))
        # each group's members in the new group order: their runs of ``members``, moved
        ordered = sizes[order]
        picks = _starts(sizes)[order].repeat(ordered) + _within(ordered)
        ids = np.concatenate(list(map(_ID_ARRAY, entries)))
        owner, relevance, firsts = owners[order], group_rel[order], firsts[order]
        # A group's score: its document's sharpened score, lifted by its local relevance
        # above the floor, decayed by its rank in the document. Every group at once, with
        # the same operations per group as sharp * (floor + rest * relevance) * decay**rank
        # in order.
        floor = settings.passage_floor
        rest = 1.0 - floor
        sharp = _unit_powers(np.asarray(scores, dtype=np.float64), settings.document_sharpness)
        rank = _within(per_entry)  # owner ascends: each document's groups in a run
        decays = _decays(settings.passage_decay, int(np.maximum.reduce(per_entry, initial=0)))
        score = sharp[owner] * (floor + rest * relevance)
        score = score * decays[rank]
        by_first = firsts.argsort()  # the groups by their first node (distinct ids)
        return _Ranked(owner=owner, relevance=relevance, sizes=ordered,
                       versions=ids[members[picks]], firsts=firsts, rank=rank, score=score,
                       first_ids=firsts[by_first].tolist(),
                       first_scores=score[by_first].tolist(),
                       first_sizes=ordered[by_first].tolist())

    # ---------------------------------------------------------------- evidence

    def evidence(self, question: Question, similarity: float | None) -> Evidence:
        """The absolute evidence for ``question`` (see :func:`measure_evidence`)."""
        documents = self.documents_view
        count, frequency = documents.frequencies(question.terms)
        # A CJK character pair no document holds is a cut across two words of the question
        # (Chinese and Japanese have no spaces, and a Korean word carries its particles, so
        # their terms are character pairs), not a name the store lacks.
        terms = [t for t in sorted(frequency) if frequency[t] > 0 or not is_cjk(t)]
        weights = [cached_ln(1.0 + (count - frequency[t] + 0.5) / (frequency[t] + 0.5))
                   for t in terms]
        total = 0.0
        for w in weights:
            total += w
        if not total > 0.0:
            return Evidence(coverage=0.0, best_source=None, similarity=similarity,
                            live_documents=count)
        catalog = self.catalog
        # The question's terms (all of them: ones no row holds add nothing) rank the same
        # documents as the structured leg's search of the question.
        hits = self.search_documents(question.text, COVERAGE_DOCUMENTS)
        sources = cast("list[str]", list(filter(_IS_NOT_NONE, catalog.sources_of_documents(
            map(itemgetter(0), hits)))))
        linked = {s: list(self.links(s)) for s in sources[:COVERAGE_LINKED]}
        chosen: list[str] = []
        for part in question.parts:  # a comparison is answered by its alternatives' documents
            top = self.search_documents(part, 1)
            found = catalog.source_of_document(top[0][0]) if top else None
            if found is not None and found not in chosen:
                chosen.append(found)
        involved = list(dict.fromkeys([*sources, *(o for ls in linked.values() for o in ls),
                                       *chosen]))
        rows = catalog.document_rows(involved, self.tx_us)
        positions = documents.positions([-1 if r is None else r for r in rows])
        # row i, column j: document involved[j] holds terms[i]
        holds = documents.holds_many(terms, positions)
        column = dict(zip(involved, range(len(involved)), strict=True))
        # what is measured, in order: each document, the COVERAGE_LINKED best with each
        # document they link to (a document alone is measured as itself twice)
        measured: list[tuple[str, ...]] = []
        first: list[int] = []
        second: list[int] = []
        for rank, source in enumerate(sources):
            mine = column[source]
            measured.append((source,))
            first.append(mine)
            second.append(mine)
            if rank < COVERAGE_LINKED:
                for other in linked[source]:
                    measured.append((source, other))
                    first.append(mine)
                    second.append(column[other])
        together_cols: list[int] = []
        if len(chosen) > 1:  # a multi-part question's chosen documents together
            measured.append(tuple(chosen))
            together_cols = [column[s] for s in chosen]
        best, where = 0.0, None
        if measured:  # the first of the largest shares, when above 0
            shared = best_share(holds, first, second, together_cols, weights, total)
            if shared is None:
                together = holds[:, first] | holds[:, second]
                if together_cols:
                    union = np.logical_or.reduce(holds[:, together_cols], axis=1)
                    together = np.concatenate([together, union[:, None]], axis=1)
                shares = _shares(together, weights, total)
                at = int(shares.argmax())
                shared = at, float(shares[at])
            at, share = shared
            if share > 0.0:
                best, where = share, " + ".join(measured[at])
        return Evidence(coverage=best, best_source=where, similarity=similarity,
                        live_documents=count)


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
    measure: bool = False,
    clock: StageClock | None = None,
) -> Recalled:
    """Score documents, hop from the best, and score every live node of the candidates (see
    the module docstring); with ``measure``, also the absolute evidence
    (:func:`measure_evidence`) of the question. ``clock`` receives the time of the
    ``question``, ``catalog`` (the as-of views), ``semantic``, ``structured``, ``fusion``,
    ``hops``, ``abstention`` and ``passages`` stages (:mod:`planner_svc.recall.timing`)."""
    # The question's words (parts, BM25, residuals) belong to the structured leg; a request for
    # the semantic leg alone plans from its vector alone, so text and its embedding agree.
    clock = clock if clock is not None else StageClock()
    with clock.stage("question"):
        question = (analyze_question(query.text) if query.structured
                    else Question(text="", terms=(), parts=()))
    with clock.stage("catalog"):  # the plan's as-of views of the catalog
        state = _Recall(catalog, query, settings, semantic, clock)
    if query.structured:  # the question's terms are its text's query terms
        state._query_terms[question.text] = list(question.terms)
    with clock.stage("semantic"):
        if query.vector is not None:
            vector: Vector | None = query.vector
            part_vectors = state.embed(question.parts)
        else:
            vector, *part_vectors = state.embed([query.text, *question.parts])
    state.vector = vector
    direct, best_similarity = state.documents(query.text, vector)
    for part, part_vector in zip(question.parts, part_vectors, strict=True):
        scored, _best = state.documents(part, part_vector)
        with clock.stage("fusion"):
            for source, legs in scored.items():
                if legs[0] > direct.get(source, (0.0, 0.0, 0.0))[0]:
                    direct[source] = legs
    with clock.stage("fusion"):
        scores = dict(zip(direct, map(itemgetter(0), direct.values()), strict=True))
    hops: dict[str, _Hop] = {}
    if query.expand_depth > 0 and settings.hop_sources > 0:
        with clock.stage("hops"):
            hops = state.hops(question, scores, vector)
            if query.expand_depth > 1 and hops:
                second = state.hops(question, {t: h.score for t, h in hops.items()}, vector)
                for target, reached in second.items():
                    if target not in hops or reached.score > hops[target].score:
                        hops[target] = reached
    evidence = None
    if measure and query.structured and query.text.strip():  # before the passages: one result
        with clock.stage("abstention"):
            evidence = state.evidence(question, best_similarity)
    with clock.stage("passages"):
        return _passages(state, question, direct, scores, hops, best_similarity, evidence)


def _shares(held: npt.NDArray[np.bool_], weights: Sequence[float], total: float
            ) -> Float64s:
    """The share of the question's information in the terms each measured group holds
    (``held[i, j]``: group ``j`` holds the term of ``weights[i]``): the weights of the held
    terms added from the first, divided by ``total``, float64 ``(held.shape[1],)``. Every
    group at once, with the same additions per group as a loop over its held terms (a term
    not held adds +0.0, which leaves a sum of non-negative weights unchanged)."""
    if not held.shape[0]:
        return np.zeros(held.shape[1], dtype=np.float64)
    added = np.where(held, np.asarray(weights, dtype=np.float64)[:, None], 0.0)
    got: Float64s = np.add.accumulate(added, axis=0)[-1] / total
    return got


_SCORE = attrgetter("score")
_VERSION_ID = itemgetter(0)
_SIMILARITY = itemgetter(1)


def _best_first(scores: Mapping[str, float], limit: int | None = None
                ) -> list[tuple[str, float]]:
    """``scores``' items by score descending, ties by key: the order of the sort key
    ``(-score, key)`` (its equal scores, 0.0 and -0.0 included, stay in key order), from two
    sorts: the keys (distinct: the order of the items), then a stable sort of them by score
    (the mapping's own look-up as the key, no Python function); the first ``limit`` of them
    (all for None), sorted from the keys scoring at least the ``limit``-th best score (the
    others come after them). Scores are never NaN here: :func:`_relative` maps a NaN to 0.0
    and a hop keeps only values above 0.0."""
    if limit is not None and 0 < limit < len(scores):
        cut = sorted(scores.values(), reverse=True)[limit - 1]
        keys = sorted(compress(scores, map(ge, scores.values(), repeat(cut))))
    else:
        keys = sorted(scores)
    score = scores.__getitem__
    keys.sort(key=score, reverse=True)
    if limit is not None:
        keys = keys[:limit]
    return list(zip(keys, map(score, keys), strict=True))


DECAY_MEMO_COUNT = 1024
"""Passage decays are remembered across plans for a document's first this many span groups,
one run per decay value (8 KB each, 16 values at most); a document with more groups has its
run computed each time."""


def _decays(decay: float, count: int) -> Float64s:
    """``unit_power(decay, r)`` for ``r`` in ``0 .. count - 1``: float64 ``(count,)``,
    read-only (a slice of the run remembered per decay up to :data:`DECAY_MEMO_COUNT`: each
    value depends on ``r`` alone, shared by the plans)."""
    if count <= DECAY_MEMO_COUNT:
        return _remembered_decays(decay)[:count]
    return _decay_run(decay, count)


@lru_cache(maxsize=16)
def _remembered_decays(decay: float) -> Float64s:
    """:func:`_decays` of :data:`DECAY_MEMO_COUNT` values, remembered."""
    return _decay_run(decay, DECAY_MEMO_COUNT)


def _decay_run(decay: float, count: int) -> Float64s:
    """:func:`_decays`, computed."""
    out = np.asarray([unit_power(decay, r) for r in range(count)], dtype=np.float64)
    out.setflags(write=False)
    return out


def _passages(state: _Recall, question: Question,
              direct: Mapping[str, tuple[float, float, float]], scores: Mapping[str, float],
              hops: Mapping[str, _Hop], best_similarity: float | None,
              evidence: Evidence | None = None) -> Recalled:
    """Rank the candidate documents and every live node of each (see the module docstring;
    ``scores`` holds each direct document's score, ``direct``'s first leg); the result
    carries ``evidence``."""
    settings = state.settings
    vector = state.vector
    # each document's better score (max(direct, hop): the direct one when they are equal);
    # a hop's score is above 0.0
    combined = dict(scores)
    hop_scores = dict(zip(hops, map(_SCORE, hops.values()), strict=True))
    combined.update(hop_scores)
    for target in scores.keys() & hop_scores.keys():
        if not hop_scores[target] > scores[target]:
            combined[target] = scores[target]
    # best first, so the first candidate_documents hold every positive score kept (a prefix:
    # whole when its last score is positive)
    top = _best_first(combined, settings.candidate_documents)
    ranked = top if not top or top[-1][1] > 0.0 else [(s, v) for s, v in top if v > 0.0]
    residual: dict[str, tuple[str, ...]] = {}
    # Local relevance: a document a hop ranks is scored against the hop's residual (already
    # done by the hop when it has a residual vector); the others in one batch against the
    # question.
    local: dict[str, _Scored] = {}  # the ask that scored each document's nodes
    batches: dict[tuple[tuple[str, ...], int], tuple[Vector | None, list[str]]] = {}
    documents: list[DocumentRow] = []
    missed = (0.0, 0.0, 0.0)
    question_key = (question.terms, id(vector))
    question_batch: list[str] | None = None  # the batch of the question's ask, once made
    for source, score in ranked:
        hop = hops.get(source)
        direct_score, s, v = direct.get(source, missed)
        if hop is None:  # scored against the question
            documents.append((source, score, s, v, 0.0, None))
            if question_batch is None:
                asked = batches.get(question_key)
                if asked is None:
                    asked = batches[question_key] = (vector, [])
                question_batch = asked[1]
            question_batch.append(source)
            continue
        step = hop.step
        documents.append((source, score, s, v, hop.score, step.source))
        if hop.score >= direct_score:
            residual[source] = step.terms
            if step.vector is not None or vector is None:
                local[source] = step.scored
                continue
            terms, local_vector = step.terms, state.vector
        else:
            terms, local_vector = question.terms, state.vector
        asked = batches.get(key := (terms, id(local_vector)))
        if asked is None:
            asked = batches[key] = (local_vector, [])
        asked[1].append(source)
    asks = [(batch, terms, local_vector) for (terms, _vector_id), (local_vector, batch)
            in batches.items()]
    for (batch, _terms, _vector), scored in zip(asks, state.local(asks), strict=True):
        for source in batch:
            local[source] = scored
    sources = list(map(itemgetter(0), ranked))
    groups = state.rank(list(zip(sources, map(local.__getitem__, sources), strict=True)),
                        list(map(itemgetter(1), ranked)))
    arrays = NodeArrays(score=groups.score, owner=groups.owner, sources=sources,
                        relevance=groups.relevance, rank=groups.rank, sizes=groups.sizes,
                        versions=groups.versions)
    passages = state.passages
    return Recalled(node_count=groups.versions.shape[0], arrays=arrays,
                    firsts=tuple(groups.first_ids), first_scores=tuple(groups.first_scores),
                    first_sizes=tuple(groups.first_sizes),
                    document_rows=tuple(documents), question=question,
                    best_similarity=best_similarity, semantic_hits=state.semantic_hits,
                    without_spans=len(state.unsourced), residual=residual, evidence=evidence,
                    live_documents=state.documents_view.live_rows,
                    no_passage_valid=passages.live_rows == 0 and passages.rows_at_tx() > 0)


def measure_evidence(catalog: Catalog, question: Question, similarity: float | None, *,
                     valid_us: int, tx_us: int) -> Evidence:
    """The absolute evidence for ``question`` (see :class:`Evidence`): the documents measured
    are the :data:`COVERAGE_DOCUMENTS` best by BM25, the documents linked to the
    :data:`COVERAGE_LINKED` best of them, and, for a multi-part question, the best document of
    every part together."""
    query = EngineQuery(text=question.text, structured=True, semantic=False, document_k=0,
                        semantic_k=0, expand_depth=0, valid_us=valid_us, tx_us=tx_us)
    return _Recall(catalog, query, RecallSettings(), None).evidence(question, similarity)
