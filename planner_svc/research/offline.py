"""A planning provider that needs no model: the default, so research runs with nothing set up.

Decomposition: the question's clauses (split at ``?``, ``;`` and at a conjunction that starts a
new question, "... and how did ...") plus one sub-question per knowledge-graph entity the
question mentions. Replanning, from the digest and what the evidence found:

- with no live contradiction, an open sub-question holding claims is closed;
- with live contradictions nothing is closed, and a sub-question about the disagreement is
  proposed first (a disputed question is not an answered one);
- exploration, once per session: in the first replan whose claimed evidence leads somewhere,
  the entities the knowledge graph links to the nodes citing that evidence
  (:class:`~planner_svc.research.graph.EvidenceGraph`), strongest first, that neither the
  question nor any sub-question names yet, each as "How is <entity> related to <topic>?"
  (the topic: the first entity the question names, else the evidence document that leads
  there). Exploring one hop, once, keeps the session from drifting: a follow-up of a follow-up
  is drift, not depth;
- an open sub-question whose leads came back as dead ends without a claim is rephrased as a
  keyword search (its content words, then the research question's);
- each dead-end cause (most frequent first) contributes its example query, rephrased, and any
  entity that query mentions;
- ``done`` when, after closing, nothing is open or disputed and nothing is left to explore.
Candidates already in the digest (a sub-question or a refused duplicate, by
:func:`~planner_svc.research.duplicates.wording_key`) are not repeated, so replans converge.
The provider proposes every remaining candidate, strongest first, up to
:data:`MAX_OFFLINE_PROPOSALS`; the session admits the round's cap and reports the rest as cut.
"""

from __future__ import annotations

import re
import threading

from planner_svc.research.digest import DigestView
from planner_svc.research.duplicates import wording_key, words
from planner_svc.research.entities import STOPWORDS, EntityLookup, NoEntities
from planner_svc.research.graph import EvidenceGraph, NoGraph, RelatedEntity
from planner_svc.research.provider import ProviderAnswer, ProviderRequest, Usage

OFFLINE_MODEL = "offline"

MAX_OFFLINE_PROPOSALS = 16
"""Most proposals of one offline call: the largest cap a round may have."""

_QUESTION_WORDS = (
    "how|what|why|when|where|who|whom|which|whether|is|are|was|were|does|do|did|can|could|"
    "should|would|will|has|have"
)
_SENTENCE_SPLIT = re.compile(r"(?<=[?;!])\s+|;\s*")
_CONJUNCTION_SPLIT = re.compile(
    rf",?\s+(?:and|but|or|also)\s+"
    rf"(?=(?:(?:in|at|on|for|from|to|by|with|of|since|until)\s+)?(?:{_QUESTION_WORDS})\b)",
    re.IGNORECASE,
)
_PRONOUN = re.compile(r"\b(?:it|its|they|them|their|this|these|those|he|she|his|her)\b",
                      re.IGNORECASE)
_QUESTION_START = re.compile(rf"^(?:{_QUESTION_WORDS})\b", re.IGNORECASE)
_KEYWORD_RE = re.compile(r"[\w][\w'’-]*")
_REPHRASE_WORDS = frozenset({"sources", "source", "cover", "covering", "known", "record"})


def split_clauses(question: str) -> list[str]:
    """The question's clauses, each capitalised and ending in ``?`` when it asks something.

    >>> split_clauses("What caused the outage and how was it fixed?")
    ['What caused the outage?', 'How was it fixed?']
    """
    clauses: list[str] = []
    for sentence in _SENTENCE_SPLIT.split(question):
        for part in _CONJUNCTION_SPLIT.split(sentence):
            text = " ".join(part.split()).strip(" ,;")
            if not text:
                continue
            text = text[0].upper() + text[1:]
            if _QUESTION_START.match(text) and not text.endswith("?"):
                text = text.rstrip(".!") + "?"
            clauses.append(text)
    return clauses


def with_antecedents(clauses: list[str], entities: EntityLookup) -> list[str]:
    """Give a later clause that refers back by pronoun ("how did it end?") the first entity of
    the clauses before it, in parentheses, so its evidence plan searches for the right thing.

    >>> with_antecedents(["What caused the Cold War?", "How did it end?"], _Fixed("Cold War"))
    ['What caused the Cold War?', 'How did it end? (Cold War)']
    """
    out: list[str] = []
    seen: list[str] = []
    for clause in clauses:
        found = entities.find_entities(clause)
        if seen and not found and _PRONOUN.search(clause):
            clause = f"{clause} ({seen[0]})"
        seen.extend(found)
        out.append(clause)
    return out


class _Fixed:
    """An entity lookup that knows one title (for the doctest above)."""

    def __init__(self, title: str) -> None:
        self._title = title

    def find_entities(self, text: str) -> list[str]:
        return [self._title] if self._title in text else []


def keywords(text: str, *, limit: int = 8) -> list[str]:
    """Content words of ``text`` in order, without stopwords, rephrasing words or repeats."""
    out: list[str] = []
    seen: set[str] = set()
    for word in _KEYWORD_RE.findall(text):
        folded = word.casefold()
        if folded in STOPWORDS or folded in _REPHRASE_WORDS or folded in seen:
            continue
        seen.add(folded)
        out.append(word)
        if len(out) == limit:
            break
    return out


def rephrase(text: str, context: str = "", *, limit: int = 6) -> str | None:
    """A keyword-search phrasing of ``text``: its content words, then the ``context``'s (the
    research question) up to ``limit`` words. Idempotent for a fixed context; None when neither
    has a content word.

    >>> rephrase("How was it fixed?", "What caused the 2021 outage?")
    'Which sources cover fixed caused 2021 outage?'
    """
    words = keywords(text, limit=limit)
    seen = {w.casefold() for w in words}
    for word in keywords(context, limit=limit):
        if len(words) >= limit:
            break
        if word.casefold() not in seen:
            seen.add(word.casefold())
            words.append(word)
    return f"Which sources cover {' '.join(words)}?" if words else None


def entity_question(title: str) -> str:
    """The sub-question asked about one knowledge-graph entity."""
    return f"What is known about {title}?"


def relation_question(title: str, topic: str) -> str:
    """The exploration sub-question about an entity the evidence links to ``topic``."""
    return f"How is {title} related to {topic}?"


def names(text: str, title: str) -> bool:
    """Whether ``text`` names ``title``: every word of the title (or of its form without a
    trailing parenthetical qualifier, ``Capra`` for ``Capra (genus)``) is a word of the text,
    after NFKC normalisation and case folding."""
    in_text = set(words(text))
    bare = re.sub(r"\s*\([^()]*\)$", "", title)
    return any(form and set(form) <= in_text for form in (words(title), words(bare)))


class OfflineProvider:
    """:class:`~planner_svc.research.provider.ResearchProvider` from the question's structure,
    the knowledge graph (through ``entities``) and the digest. Deterministic; no model, no I/O
    beyond the entity lookup; usage is zero with model ``offline``.

    One instance serves one session (it remembers whether it has explored).

    Args:
        entities: entity lookup; None = no knowledge graph.
        graph: the graph around the evidence, for exploration; None = no exploration.
    """

    def __init__(self, entities: EntityLookup | None = None,
                 graph: EvidenceGraph | None = None) -> None:
        self._entities = entities or NoEntities()
        self._graph = graph or NoGraph()
        self._explored = False

    @property
    def name(self) -> str:
        """``offline``."""
        return "offline"

    def propose(
        self, request: ProviderRequest, *, cancel: threading.Event | None = None
    ) -> ProviderAnswer:
        """Decompose or replan as described in the module docstring."""
        if request.kind == "decompose" or request.digest is None:
            return self._decompose(request)
        return self._replan(request, request.digest)

    def _decompose(self, request: ProviderRequest) -> ProviderAnswer:
        titles = self._entities.find_entities(request.question)
        clauses = with_antecedents(split_clauses(request.question), self._entities)
        proposals = _distinct([*clauses, *(entity_question(t) for t in titles)], set())
        if not proposals:
            proposals = [request.question]
        return ProviderAnswer(
            questions=tuple(proposals[:MAX_OFFLINE_PROPOSALS]),
            rationale=f"offline: {len(clauses)} clause(s), {len(titles)} entity(ies)",
            usage=Usage(model=OFFLINE_MODEL),
        )

    def _replan(self, request: ProviderRequest, view: DigestView) -> ProviderAnswer:
        disputed = view.contradictions > 0
        open_qs = view.open()
        closed = () if disputed else tuple(q.id for q in open_qs if q.claims > 0)
        still_open = [q for q in open_qs if q.id not in closed]
        known = {wording_key(q.text) for q in view.questions}
        known |= {wording_key(d.text) for d in view.duplicates}
        exploring = _distinct(self._explore(request, view), known)
        if view.questions and not still_open and not disputed and not exploring:
            return ProviderAnswer(
                answered=closed,
                done=True,
                rationale=f"offline: closed {len(closed)}; every sub-question has claims",
                usage=Usage(model=OFFLINE_MODEL),
            )
        candidates: list[str] = []
        if disputed:
            topic = " ".join(request.question.split()).rstrip("?.! ")
            candidates.append(f"Where do sources disagree on: {topic}?")
        candidates.extend(exploring)
        starved = [q for q in still_open if q.dead_ends > 0 and q.claims == 0]
        for q in starved:
            alt = rephrase(q.text, request.question)
            if alt:
                candidates.append(alt)
        for de in view.dead_ends:
            if not de.example:
                continue
            alt = rephrase(de.example, request.question)
            if alt:
                candidates.append(alt)
            candidates.extend(entity_question(t) for t in self._entities.find_entities(de.example))
        proposals = _distinct(candidates, known)[:MAX_OFFLINE_PROPOSALS]
        return ProviderAnswer(
            questions=tuple(proposals),
            answered=closed,
            done=False,
            rationale=(
                f"offline: closed {len(closed)}, {len(exploring)} linked entity(ies) to "
                f"explore, {len(starved)} without claims, {len(view.dead_ends)} dead-end "
                f"cause(s), contradictions={view.contradictions}"
            ),
            usage=Usage(model=OFFLINE_MODEL),
        )

    def _explore(self, request: ProviderRequest, view: DigestView) -> list[str]:
        """The exploration proposals (see the module docstring); [] once explored, or when
        no claimed evidence leads to an entity nobody has named yet."""
        evidence = request.evidence
        if self._explored or evidence is None:
            return []
        spans = [span for q in view.questions if q.claims > 0
                 for span in evidence.spans.get(q.id, ())]
        if not spans:
            return []
        related = self._graph.related(spans, at_valid_us=evidence.at_valid_us,
                                      at_tx_us=evidence.at_tx_us,
                                      limit=MAX_OFFLINE_PROPOSALS * 4)
        named_by = [request.question, *(q.text for q in view.questions),
                    *(d.text for d in view.duplicates)]
        fresh = [e for e in related if not any(names(text, e.title) for text in named_by)]
        if not fresh:
            return []
        self._explored = True
        topics = self._entities.find_entities(request.question)
        return [relation_question(e.title, topics[0] if topics else _topic(e))
                for e in fresh[:MAX_OFFLINE_PROPOSALS]]


def _topic(entity: RelatedEntity) -> str:
    return entity.via or "the research question"


def _distinct(texts: list[str], known: set[str]) -> list[str]:
    """``texts`` in order without repeats and without the wordings in ``known``
    (:func:`~planner_svc.research.duplicates.wording_key`)."""
    seen = set(known)
    out = []
    for text in texts:
        key = wording_key(text)
        if key and key not in seen:
            seen.add(key)
            out.append(text)
    return out
