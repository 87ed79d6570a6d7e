"""The offline provider explores the knowledge graph around the claimed evidence, and the
graph is read from the recall catalog."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from planner_svc.core.model import PlannedSpan, SpanClass, SpanRef
from planner_svc.index.catalog_sync import FreshCatalog
from planner_svc.ingest import DocumentIn, ingest_documents
from planner_svc.research.digest import Digest, render_digest
from planner_svc.research.entities import TitleEntityLookup
from planner_svc.research.graph import CatalogGraph, RelatedEntity
from planner_svc.research.offline import OfflineProvider, names
from planner_svc.research.provider import EvidenceContext, ProviderRequest
from planner_svc.store import Store

# --- offline exploration ----------------------------------------------------------------------


class FakeGraph:
    """Returns fixed entities and records what it was asked."""

    def __init__(self, entities: list[RelatedEntity]) -> None:
        self.entities = entities
        self.asked: list[tuple[tuple[str, ...], int | None]] = []

    def related(self, spans: Sequence[PlannedSpan], *, at_valid_us: int | None,
                at_tx_us: int | None, limit: int) -> list[RelatedEntity]:
        self.asked.append((tuple(s.span.source_id for s in spans), at_tx_us))
        return self.entities[:limit]


class Titles:
    def __init__(self, *titles: str) -> None:
        self.titles = set(titles)

    def source_ids_by_title(self, title: str) -> list[str]:
        return [title] if title in self.titles else []


def entity(title: str, via: str = "Cold War") -> RelatedEntity:
    return RelatedEntity(title=title, source_id=f"wiki/{title}", relation="mentions",
                         outgoing=True, score=1.0, support=1, weight=0.8, via=via)


def planned(source: str) -> PlannedSpan:
    return PlannedSpan(span=SpanRef(source, 1, 0, 10), kind="paragraph",
                       span_class=SpanClass.TRUTH, weight=0.5, tokens=3)


def replan_request(d: Digest, spans: dict[str, tuple[PlannedSpan, ...]]) -> ProviderRequest:
    view = d.snapshot()
    return ProviderRequest(kind="replan", question=d.question, digest_text=render_digest(view),
                           max_questions=3, digest=view,
                           evidence=EvidenceContext(spans=spans, at_valid_us=5, at_tx_us=7))


def test_offline_explores_linked_entities_once_from_claimed_evidence() -> None:
    question = "What caused the Cold War and how did it end?"
    graph = FakeGraph([entity("Cold War"), entity("Soviet Union"), entity("War"),
                       entity("Berlin Wall"), entity("Marshall Plan")])
    provider = OfflineProvider(TitleEntityLookup(Titles("Cold War")), graph)
    d = Digest(question)
    d.admit(["What caused the Cold War?", "How did it end? (Cold War)",
             "What role did the Marshall Plan play?"], cap=None, round=0)
    for qid in ("q1", "q2", "q3"):
        d.record_lead(qid)
    spans = {"q1": (planned("wiki/Cold_War"),), "q2": (planned("wiki/Detente"),)}
    # No claim yet: nothing to explore from (and q1's lead is still out).
    assert provider.propose(replan_request(d, spans)).questions == ()
    assert graph.asked == []
    d.record_claims("q1", 2)
    answer = provider.propose(replan_request(d, spans))
    assert answer.answered == ("q1",)
    # Entities the question or a sub-question names are skipped ("War" is named by the
    # question, "Marshall Plan" by q3); the topic is the question's own entity.
    assert answer.questions == ("How is Soviet Union related to Cold War?",
                                "How is Berlin Wall related to Cold War?")
    assert graph.asked == [(("wiki/Cold_War",), 7)]  # only claimed evidence, as of the session
    assert answer.done is False
    # Exploration happens once: a later round closes what has claims and is done.
    d.admit(answer.questions, cap=None, round=1)
    for qid in ("q2", "q3", "q4", "q5"):
        d.record_claims(qid, 1)
    later = provider.propose(replan_request(d, spans))
    assert later.questions == () and later.done is True
    assert len(graph.asked) == 1


def test_offline_without_a_question_entity_relates_to_the_evidence_document() -> None:
    provider = OfflineProvider(None, FakeGraph([entity("Gorbachev", via="Perestroika")]))
    d = Digest("Why did the reforms fail?")
    d.admit(["Why did the reforms fail?"], cap=None, round=0)
    d.record_lead("q1")
    d.record_claims("q1", 1)
    answer = provider.propose(replan_request(d, {"q1": (planned("wiki/Perestroika"),)}))
    assert answer.questions == ("How is Gorbachev related to Perestroika?",)
    assert answer.done is False


def test_names_reads_words_and_bare_qualified_titles() -> None:
    assert names("How did the Cold War end?", "Cold War")
    assert names("goats of the genus capra", "Capra (genus)")
    assert not names("What caused the war?", "Cold War")


# --- the graph around the evidence, from the catalog ----------------------------------------


DOCS = {
    "wiki/Cold_War": ("Cold War", "The Cold War was a rivalry between the United States and "
                      "the Soviet Union.\n\nWestern powers formed alliances."),
    "wiki/Soviet_Union": ("Soviet Union", "The Soviet Union was a state in Eurasia."),
    "wiki/United_States": ("United States", "The United States is a country."),
    "wiki/Berlin_Wall": ("Berlin Wall", "The Berlin Wall was a symbol of the Cold War."),
    "wiki/Western_(genre)": ("Western (genre)", "A Western is a genre of fiction."),
}


@pytest.fixture
def graph_store(tmp_path: Path) -> Store:
    store = Store.open(tmp_path)
    docs = [DocumentIn(source_id=sid, title=title, media_type="text/markdown", text=text)
            for sid, (title, text) in DOCS.items()]
    report = ingest_documents(store, None, docs, now_us=1_800_000_000_000_000)
    assert not report.errors
    return store


def test_catalog_graph_relates_the_documents_linked_to_the_evidence(graph_store: Store) -> None:
    catalog = FreshCatalog(graph_store)
    now = 1_900_000_000_000_000
    evidence = [
        PlannedSpan(span=SpanRef(*key), kind="paragraph", span_class=SpanClass.TRUTH,
                    weight=0.9, tokens=10, text=graph_store.canonical_slice(*key) or "")
        for version in catalog.current().live_nodes_of("wiki/Cold_War", now, now)
        for key in version.spans
    ]
    graph = CatalogGraph(catalog, graph_store, clock=lambda: now)
    related = graph.related(evidence, at_valid_us=None, at_tx_us=None, limit=10)
    by_title = {e.title: e for e in related}
    # Named by the evidence (out), naming the evidence (in); the qualified "Western (genre)",
    # reached on its bare name only, is left out; the evidence's own document is not related.
    assert set(by_title) == {"Soviet Union", "United States", "Berlin Wall"}
    assert by_title["Soviet Union"].outgoing and by_title["Soviet Union"].relation == "mentions"
    assert not by_title["Berlin Wall"].outgoing
    assert all(e.via == "Cold War" for e in related)
    assert [e.title for e in related] == sorted(
        by_title, key=lambda t: (-by_title[t].score, -by_title[t].support,
                                 -by_title[t].weight, by_title[t].source_id))
    assert graph.related(evidence, at_valid_us=None, at_tx_us=None, limit=1) == related[:1]
    # As of a time before the ingest, nothing is live.
    assert graph.related(evidence, at_valid_us=1, at_tx_us=1, limit=10) == []
    graph_store.close()
