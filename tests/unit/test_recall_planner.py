"""The evidence planner over a small real store and a scripted vector index."""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest
from google.rpc import code_pb2, error_details_pb2

from planner_svc.core.config import SelectionSettings
from planner_svc.core.errors import InsufficientEvidence
from planner_svc.core.fusion import unit_power
from planner_svc.core.model import NOWHERE, Location, SpanRef
from planner_svc.core.plan_hash import plan_hash
from planner_svc.index import VectorHit, VectorHits, VectorRows
from planner_svc.index.analysis import query_terms
from planner_svc.index.catalog import Catalog
from planner_svc.index.catalog_sync import FreshCatalog
from planner_svc.recall.engine import Evidence
from planner_svc.recall.planner import (
    WARM_UP_QUESTION,
    Abstention,
    EvidencePlanner,
    EvidenceResult,
    _Semantic,
)
from planner_svc.recall.request import EvidenceQuery, SemanticLeg, StructuredLeg
from planner_svc.recall.settings import RecallSettings
from planner_svc.server.errors import status_for
from planner_svc.store import NodeWrite, Store

T0 = 1_700_000_000_000_000  # microseconds
CITIES = "Paris is the capital of France.\n\nLyon lies on the Rhone.\n\nParis hosts the Louvre."
RIVERS = "The Rhone rises in the Alps.\n\nThe Seine flows through Paris."
DIM = 4


def _byte_span(text: str, part: str) -> tuple[int, int]:
    data, piece = text.encode("utf-8"), part.encode("utf-8")
    start = data.index(piece)
    return start, start + len(piece)


def _document(s: Store, source: str, text: str, *, tx: int) -> None:
    parts = text.split("\n\n")
    spans = [_byte_span(text, p) for p in parts]
    s.put_source_version(source, text, title=source, media_type="text/plain", tx_us=tx)
    s.add_spans(source, tx, [(a, b, "paragraph") for a, b in spans])
    s.write_nodes(
        [NodeWrite(node_id=f"{source}:{i}", text=part, labels=("passage",),
                   provenance=(SpanRef(source, tx, *spans[i]),), valid_from_us=T0)
         for i, part in enumerate(parts)],
        tx_us=tx,
    )


def _fill(s: Store) -> None:
    _document(s, "cities", CITIES, tx=10)
    _document(s, "rivers", RIVERS, tx=20)


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "data") as s:
        _fill(s)
        yield s


class ScriptedIndex:
    """A vector index over fixed node vectors. A hit's own score is the float32 inner product
    with the query plus ``noise`` (what a library that sums in another order could report):
    the planner must not use it."""

    def __init__(self, store: Store, vectors: Sequence[tuple[str, Sequence[float]]], *,
                 noise: float = 0.0) -> None:
        current = store.current_nodes([n for n, _ in vectors])
        self.rows = [(n, current[n].version_id, np.asarray(v, dtype=np.float32))
                     for n, v in vectors]
        self.noise = noise

    def current(self) -> ScriptedIndex:
        return self

    def search(self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
               live: object = None, unit: bool = False) -> list[VectorHit]:
        out = [
            VectorHit(node_id=n, version_id=vid,
                      score=float(np.dot(query, v)) + self.noise * (-1) ** i, vector=v)
            for i, (n, vid, v) in enumerate(self.rows)
        ]
        out.sort(key=lambda h: (-h.score, h.node_id))
        return out[:k]

    def search_columns(self, query: npt.NDArray[np.float32], k: int, *, valid_us: int,
                       tx_us: int, live: object = None, unit: bool = False) -> VectorHits:
        return VectorHits.of(self.search(query, k, valid_us=valid_us, tx_us=tx_us, live=live,
                                         unit=unit), dim=len(self.rows[0][2]))

    def vector_rows(self, version_ids: Sequence[int]) -> VectorRows:
        stored = {vid: v for _n, vid, v in self.rows}
        held = np.asarray([vid in stored for vid in version_ids], dtype=np.bool_)
        matrix = np.zeros((len(version_ids), len(self.rows[0][2])), dtype=np.float32)
        for i, vid in enumerate(version_ids):
            if vid in stored:
                matrix[i] = stored[vid]
        return VectorRows.of_matrix(held, matrix)


def _query(*, structured: StructuredLeg | None = None, semantic: SemanticLeg | None = None,
           at_valid_us: int = T0, at_tx_us: int = 100, expand_depth: int = 0) -> EvidenceQuery:
    return EvidenceQuery(
        structured=structured, semantic=semantic, expand_depth=expand_depth,
        at_valid_us=at_valid_us, at_tx_us=at_tx_us, budget_tokens=1000, model="",
        allow_ungrounded=True, explain=True, max_frac_per_source=1.0, dedup_overlap=0.5,
    )


def _planner(store: Store, index: ScriptedIndex | None = None,
             recall: RecallSettings | None = None) -> EvidencePlanner:
    return EvidencePlanner(store, index=index, embedder=None, config=SelectionSettings(),
                           recall=recall or RecallSettings())


def test_documents_score_by_bm25_over_the_whole_text_then_passages_by_rank(
    store: Store,
) -> None:
    result = _planner(store).plan(_query(structured=StructuredLeg(text="Paris capital")))
    trace = result.trace
    assert trace is not None
    docs = {d.source_id: d for d in trace.documents}
    rows = {"cities": 1, "rivers": 2}  # source version row ids, in write order
    catalog = FreshCatalog(store).current()
    raw = dict(catalog.documents.search(query_terms("Paris capital"), valid_us=T0, tx_us=100,
                                        limit=10))
    assert set(raw) == {rows["cities"], rows["rivers"]}
    best = max(raw.values())
    for source, row in rows.items():
        x = raw[row] / best
        assert docs[source].structured == (x * x) * (x * x)  # sharpness 4, bit for bit
    assert docs["cities"].score == 1.0
    # within "cities", the passage holding both terms ranks first; the one with neither last
    nodes = trace.nodes
    assert (nodes["cities:0"].rank, nodes["cities:0"].local) == (0, 1.0)
    assert nodes["cities:1"].local == 0.0 and nodes["cities:1"].rank == 2
    settings = RecallSettings()
    assert nodes["cities:1"].score == 1.0 * settings.passage_floor * unit_power(
        settings.passage_decay, 2)
    assert result.plan.plan_hash == plan_hash("v1", result.plan.budget, result.plan.used,
                                              result.plan.spans)


def test_warm_reads_the_store_into_the_catalog_before_any_plan(store: Store) -> None:
    planner = _planner(store)
    assert planner.catalog.position.generation != store.generation()
    planner.warm()
    position = planner.catalog.position
    assert position.generation == store.generation()
    assert position == store.feed_position()
    # the first plan has nothing left to read
    assert planner.catalog.catch_up() == 0
    cold = _planner(store).plan(_query(structured=StructuredLeg(text="Paris capital")))
    warm = planner.plan(_query(structured=StructuredLeg(text="Paris capital")))
    assert warm.plan.plan_hash == cold.plan.plan_hash


def test_filter_only_structured_recall_scores_every_document_one(store: Store) -> None:
    result = _planner(store).plan(
        _query(structured=StructuredLeg(text="", labels=("passage",)))
    )
    assert result.trace is not None
    assert {d.source_id: d.structured for d in result.trace.documents} == {
        "cities": 1.0, "rivers": 1.0}


def _unit(*values: float) -> tuple[float, ...]:
    v = np.asarray(values, dtype=np.float64)
    return tuple((v / np.linalg.norm(v)).astype(np.float32).tolist())


VECTORS = [("cities:0", _unit(0.9, 0.3, 0.1, 0.1)), ("cities:1", _unit(0.2, 0.9, 0.1, 0.3)),
           ("cities:2", _unit(0.8, 0.1, 0.5, 0.2)), ("rivers:0", _unit(0.1, 0.2, 0.9, 0.1)),
           ("rivers:1", _unit(0.3, 0.3, 0.3, 0.8))]


def test_noise_in_the_index_scores_changes_no_weight_and_no_plan(store: Store) -> None:
    query = _query(structured=StructuredLeg(text="Paris"),
                   semantic=SemanticLeg(vector=_unit(1.0, 0.2, 0.3, 0.0), k=2))
    clean = _planner(store, ScriptedIndex(store, VECTORS)).plan(query)
    noisy = [_planner(store, ScriptedIndex(store, VECTORS, noise=n)).plan(query)
             for n in (1e-7, -1e-7)]
    assert clean.trace is not None and clean.trace.semantic
    for other in noisy:
        assert other.trace is not None
        assert other.trace.semantic == clean.trace.semantic
        assert [s.weight for s in other.plan.spans] == [s.weight for s in clean.plan.spans]
        assert other.plan.plan_hash == clean.plan.plan_hash


def test_semantic_leg_without_signal_does_not_outrank_structured_hits(store: Store) -> None:
    # alpha 0.5 at a valid time ~146k years after the nodes: the confidence decay underflows
    # to 0, every fused score is 0, and the leg must add nothing.
    result = _planner(store, ScriptedIndex(store, VECTORS)).plan(_query(
        structured=StructuredLeg(text="Louvre"),
        semantic=SemanticLeg(vector=_unit(1.0, 0.0, 0.0, 0.0), k=5, alpha=0.5),
        at_valid_us=2**62,
    ))
    assert result.trace is not None
    assert result.trace.semantic == {}
    assert [d.source_id for d in result.trace.documents] == ["cities"]


class WriteWhilePlanning(Store):
    """A store that lets another thread commit a write right after the catalog catches up."""

    between: Callable[[], None] | None = None

    def ledger_rows(self, keys: Any) -> Any:
        kinds = super().ledger_rows(keys)
        if self.between is not None:
            writer = threading.Thread(target=self.between)
            writer.start()
            writer.join(timeout=10)
            assert not writer.is_alive(), "a writer was blocked by a plan's read snapshot"
        return kinds


def test_plan_reads_one_snapshot_while_a_writer_commits(tmp_path: Path) -> None:
    with WriteWhilePlanning.open(tmp_path / "data") as store:
        assert isinstance(store, WriteWhilePlanning)
        _fill(store)
        retired: list[int] = []
        store.between = lambda: retired.append(store.retire_nodes(["cities:0"], tx_us=50))
        planner = _planner(store)
        query = _query(structured=StructuredLeg(text="Paris capital"))
        result = planner.plan(query)
        assert retired == [1]  # committed while the plan was catching up
        # The plan saw the state before the write: the passage is still there.
        assert any(s.span.source_id == "cities" and s.span.start == 0 for s in result.plan.spans)
        store.between = None
        after = planner.plan(query)
        assert not any(s.span.start == 0 and s.span.source_id == "cities"
                       for s in after.plan.spans)


def test_a_source_version_committed_after_the_plan_time_is_never_cited(tmp_path: Path) -> None:
    # A node written first may name a source version that is committed only later; a plan as
    # of a time in between must not cite a version that did not exist yet.
    with Store.open(tmp_path / "data") as s:
        text = "Tide tables list the high water times."
        s.write_nodes([NodeWrite(node_id="n:tide", text="tide tables high water",
                                 provenance=(SpanRef("late", 50, 0, len(text)),),
                                 valid_from_us=T0)], tx_us=20)
        s.put_source_version("late", text, title="Tides", media_type="text/plain", tx_us=50)
        planner = _planner(s)
        early = planner.plan(_query(structured=StructuredLeg(text="tide tables"), at_tx_us=30))
        assert early.plan.spans == ()
        later = planner.plan(_query(structured=StructuredLeg(text="tide tables"), at_tx_us=60))
        assert [sp.text for sp in later.plan.spans] == [text]


def test_a_question_the_store_does_not_support_is_declined(store: Store) -> None:
    planner = _planner(store)
    query = _query(structured=StructuredLeg(text="refund window of the Halvorsen web shop"))
    refused = EvidenceQuery(**{**{f: getattr(query, f) for f in query.__dataclass_fields__},
                               "allow_ungrounded": False})
    with pytest.raises(InsufficientEvidence,
                       match=r"no document holds any of the question") as declined:
        planner.plan(refused)
    # the decision's inputs, as ErrorInfo.metadata carries them
    assert declined.value.metadata == {
        "coverage": "0.0000", "similarity": "n/a", "min_coverage": "0.4000",
        "min_similarity": "0.6500", "best_source": "", "live_documents": "2"}
    empty = planner.plan(query)  # allow_ungrounded: an empty plan, with the decision traced
    assert empty.plan.spans == () and empty.trace is not None
    assert empty.trace.abstention is not None and empty.trace.abstention.declined
    supported = planner.plan(_query(structured=StructuredLeg(text="capital of France")))
    assert supported.trace is not None and supported.trace.abstention is not None
    assert not supported.trace.abstention.declined
    assert supported.trace.abstention.evidence.coverage == 1.0


def test_a_plan_as_of_before_any_write_says_the_store_held_nothing(store: Store) -> None:
    query = _query(structured=StructuredLeg(text="capital of France"), at_tx_us=1)
    refused = EvidenceQuery(**{**{f: getattr(query, f) for f in query.__dataclass_fields__},
                               "allow_ungrounded": False})
    with pytest.raises(InsufficientEvidence,
                       match=r"nothing is stored as of the plan's transaction time \(at_tx\)"
                       ) as declined:
        _planner(store).plan(refused)
    assert declined.value.metadata["live_documents"] == "0"
    answered = _planner(store).plan(_query(structured=StructuredLeg(text="capital of France")))
    assert answered.trace is not None and answered.trace.abstention is not None
    assert answered.trace.abstention.evidence.live_documents == 2  # cities and rivers


def test_the_decline_metadata_says_n_a_for_documents_not_counted() -> None:
    counted = Abstention(evidence=Evidence(coverage=0.25, best_source="a + b", similarity=0.5,
                                           live_documents=12),
                         min_coverage=0.4, min_similarity=0.65, declined=True)
    assert counted.metadata() == {
        "coverage": "0.2500", "similarity": "0.5000", "min_coverage": "0.4000",
        "min_similarity": "0.6500", "best_source": "a + b", "live_documents": "12"}
    uncounted = dataclasses.replace(
        counted, evidence=dataclasses.replace(counted.evidence, live_documents=None))
    assert uncounted.metadata()["live_documents"] == "n/a"


def _refused(query: EvidenceQuery) -> EvidenceQuery:
    return dataclasses.replace(query, allow_ungrounded=False)


def test_a_plan_as_of_a_valid_time_before_every_passage_says_none_was_valid_then(
    store: Store,
) -> None:
    # every passage of the store is valid from T0; the documents are stored as of tx 100
    early = _query(structured=StructuredLeg(text="capital of France"), at_valid_us=T0 - 1)
    with pytest.raises(InsufficientEvidence) as refused:
        _planner(store).plan(_refused(early))
    assert str(refused.value) == (
        "no passage is valid at the plan's valid time (at_valid): 2 documents are stored as of "
        "its transaction time, but none of their passages was valid then")
    # the status and reason are those of any decline; its metadata: the documents stored
    assert refused.value.metadata == {"live_documents": "2"}
    status, unexpected = status_for(refused.value)
    assert status.code == code_pb2.FAILED_PRECONDITION and not unexpected
    info = error_details_pb2.ErrorInfo()
    status.details[0].Unpack(info)
    assert (info.reason, dict(info.metadata)) == ("INSUFFICIENT_EVIDENCE",
                                                  {"live_documents": "2"})
    # at T0 the same question is answered
    assert _planner(store).plan(_refused(dataclasses.replace(early, at_valid_us=T0))).plan.spans
    # a question the abstention declines (no document holds its terms) hears the same reason,
    # with the abstention's inputs: the valid time is why no passage was reached at all
    unheld = _query(structured=StructuredLeg(text="refund window of the Halvorsen web shop"),
                    at_valid_us=T0 - 1)
    with pytest.raises(InsufficientEvidence) as declined:
        _planner(store).plan(_refused(unheld))
    assert str(declined.value) == str(refused.value)
    assert declined.value.metadata["coverage"] == "0.0000"
    assert declined.value.metadata["live_documents"] == "2"
    # at T0 it is declined for its own reason
    with pytest.raises(InsufficientEvidence, match=r"no document holds any of the question"):
        _planner(store).plan(_refused(dataclasses.replace(unheld, at_valid_us=T0)))


def test_a_plan_with_no_passage_left_for_another_reason_keeps_the_recall_counts(
    store: Store,
) -> None:
    # every passage retired at tx 50: no node is current at tx 100 whatever the valid time,
    # so the valid time is not the reason
    store.retire_nodes(["cities:0", "cities:1", "cities:2", "rivers:0", "rivers:1"], tx_us=50)
    query = _query(structured=StructuredLeg(text="capital of France"))
    with pytest.raises(InsufficientEvidence,
                       match=r"^recall found no evidence span \(0 nodes recalled, 0 slices "
                             r"missing\)$") as retired:
        _planner(store).plan(_refused(query))
    assert retired.value.metadata == {"live_documents": "2"}
    # before the retirement the passages are valid at the plan's time, but none holds a term
    # of this question (abstention off)
    off = RecallSettings(abstain_coverage=0.0, abstain_similarity=0.0)
    unheld = _query(structured=StructuredLeg(text="Halvorsen refund window"), at_tx_us=40)
    with pytest.raises(InsufficientEvidence, match=r"^recall found no evidence span \(0 nodes"):
        _planner(store, recall=off).plan(_refused(unheld))


def test_similarity_alone_never_answers_a_question_no_document_holds_a_term_of(
    store: Store,
) -> None:
    # a static embedding puts some passage close to any text, gibberish included
    near = _unit(0.9, 0.3, 0.1, 0.1)  # cities:0's own vector: similarity 1.0
    index = ScriptedIndex(store, VECTORS)
    gibberish = _query(structured=StructuredLeg(text="qwzx vbnmk"),
                       semantic=SemanticLeg(vector=near, k=2))
    result = _planner(store, index).plan(gibberish)
    assert result.trace is not None and result.trace.abstention is not None
    evidence = result.trace.abstention.evidence
    assert evidence.best_source is None and evidence.coverage == 0.0
    assert evidence.similarity is not None and evidence.similarity > 0.99
    assert result.trace.abstention.declined and result.plan.spans == ()
    assert "does not count without one" in result.trace.abstention.describe()
    # a term some document holds lets the similarity count again
    held = _query(structured=StructuredLeg(text="qwzx capital"),
                  semantic=SemanticLeg(vector=near, k=2))
    answered = _planner(store, index).plan(held)
    assert answered.trace is not None and answered.trace.abstention is not None
    assert not answered.trace.abstention.declined and answered.plan.spans != ()
    # abstention switched off declines nothing
    off = _planner(store, index, RecallSettings(abstain_coverage=0.0, abstain_similarity=0.0))
    assert off.plan(gibberish).plan.spans != ()


def test_planned_spans_carry_their_ledger_locations(tmp_path: Path) -> None:
    """Recall fills every planned span's location from the catalog (the span ledger's row),
    for the plan and for every explained candidate; a span the ledger has no row for has
    none. The hash does not see them."""
    with Store.open(tmp_path / "data") as s:
        text = "Paris guide\n\nParis is the capital of France.\n\nThe Louvre is in Paris."
        spans = [_byte_span(text, p) for p in text.split("\n\n")]
        s.put_source_version("guide.pdf", text, title="guide", media_type="application/pdf",
                             tx_us=10)
        where = [Location(page=1, heading_path=("Paris guide",)),
                 Location(page=2, heading_path=("Paris guide",))]
        s.add_spans("guide.pdf", 10, [(*spans[1], "paragraph", where[0]),
                                      (*spans[2], "paragraph", where[1])])  # none for [0]
        s.write_nodes(
            [NodeWrite(node_id=f"guide:{i}", text=part, labels=("passage",),
                       provenance=(SpanRef("guide.pdf", 10, *spans[i]),), valid_from_us=T0)
             for i, part in enumerate(text.split("\n\n"))],
            tx_us=10,
        )
        result = _planner(s).plan(_query(structured=StructuredLeg(text="Paris Louvre capital")))
    located = {p.span.start: p.location for p in result.plan.spans}
    assert located == {spans[0][0]: NOWHERE, spans[1][0]: where[0], spans[2][0]: where[1]}
    assert {e.candidate.span.start: e.candidate.location
            for e in result.plan.explanations} == located
    bare = [dataclasses.replace(p, location=NOWHERE) for p in result.plan.spans]
    assert plan_hash("v1", result.plan.budget, result.plan.used, bare) == result.plan.plan_hash


class PinningIndex(ScriptedIndex):
    """A scripted index that records how a plan takes and searches it."""

    def __init__(self, store: Store, vectors: Sequence[tuple[str, Sequence[float]]]) -> None:
        super().__init__(store, vectors)
        self.taken = 0
        self.live: list[Any] = []
        self.reads = 0

    def current(self) -> PinningIndex:
        self.taken += 1
        return self

    def search(self, query: npt.NDArray[np.float32], k: int, *, valid_us: int, tx_us: int,
               live: object = None, unit: bool = False) -> list[VectorHit]:
        self.live.append(live)
        return super().search(query, k, valid_us=valid_us, tx_us=tx_us)

    def vector_rows(self, version_ids: Sequence[int]) -> VectorRows:
        self.reads += 1
        return super().vector_rows(version_ids)


def test_a_plan_takes_the_index_once_and_asks_its_catalog_which_versions_are_live(
    store: Store,
) -> None:
    index = PinningIndex(store, VECTORS)
    retired = store.current_nodes(["cities:0"])["cities:0"].version_id
    store.retire_nodes(["cities:0"], tx_us=50)
    query = _query(structured=StructuredLeg(text="Paris and the Rhone"),
                   semantic=SemanticLeg(vector=_unit(1.0, 0.2, 0.3, 0.0), k=2))
    result = _planner(store, index).plan(query)
    assert result.trace is not None and result.trace.semantic
    assert index.taken == 1 and len(index.live) >= 1 and index.reads >= 1
    live = index.live[0]
    assert all(other is live for other in index.live)
    ids = {vid for _n, vid, _v in index.rows}
    unknown = max(ids) + 1000
    # as the catalog holds them: cities:0 retired at tx 50, every other version open
    assert live.live_version_ids([*ids, unknown], T0, 100) == ids - {retired}
    assert live.live_version_ids([*ids, unknown], T0, 40) == ids
    assert live.live_version_ids(ids, T0 - 1, 100) == set()


def test_a_catalog_build_reports_each_phase(store: Store) -> None:
    planner = _planner(store)
    reports: list[tuple[str, int, int]] = []
    added = planner.catalog.catch_up(progress=lambda rows, at, target: reports.append(
        (rows, at, target)))
    assert added > 0
    phases = list(dict.fromkeys(rows for rows, _at, _target in reports))
    assert phases[:3] == ["nodes", "edges", "sources"] or phases[:2] == ["nodes", "sources"]
    # the two phases after the reads report once each, last: spans read, then indexed
    assert [r[0] for r in reports[-2:]] == ["spans", "indexed"]
    spans, indexed = reports[-2:]
    assert spans[1] == spans[2] > 0
    assert indexed[1:] == (added, added)


def test_warm_makes_one_plan_and_a_declined_one_does_not_fail_it(store: Store,
                                                                   tmp_path: Path) -> None:
    planned: list[str] = []

    class Counting(EvidencePlanner):
        def plan(self, query: EvidenceQuery, **kwargs: Any) -> EvidenceResult:
            planned.append(query.structured.text if query.structured else "")
            return super().plan(query, **kwargs)

    Counting(store, index=None, embedder=None, config=SelectionSettings()).warm()
    assert planned == [WARM_UP_QUESTION]
    with Store.open(tmp_path / "empty") as empty:  # nothing to recall: the warm-up plan
        Counting(empty, index=None, embedder=None,  # is declined, and warm() returns
                 config=SelectionSettings()).warm()
    assert planned == [WARM_UP_QUESTION] * 2


def test_warm_compiles_every_kernel_before_its_plan(
        store: Store, monkeypatch: pytest.MonkeyPatch) -> None:
    events: list[str] = []
    monkeypatch.setattr("planner_svc.recall.planner.compile_all",
                        lambda: events.append("compile") or 0)

    class Recording(EvidencePlanner):
        def plan(self, query: EvidenceQuery, **kwargs: Any) -> EvidenceResult:
            events.append("plan")
            return super().plan(query, **kwargs)

    Recording(store, index=None, embedder=None, config=SelectionSettings()).warm()
    assert events == ["compile", "plan"]


class _TiedIndex:
    """An index whose candidates hold equal vectors: exact similarities tie."""

    def __init__(self, hits: VectorHits) -> None:
        self.hits = hits

    def current(self) -> _TiedIndex:
        return self

    def search_columns(self, query: npt.NDArray[np.float32], k: int, *, valid_us: int,
                       tx_us: int, live: object = None, unit: bool = False) -> VectorHits:
        return self.hits


def test_equal_similarities_rank_by_node_id_and_the_cut_keeps_the_first() -> None:
    same = np.asarray([0.6, 0.8, 0.0, 0.0], dtype=np.float32)
    other = np.asarray([0.8, 0.6, 0.0, 0.0], dtype=np.float32)
    # the index's own order (its float32 scores) puts "n:c" first; the exact tie decides
    hits = VectorHits(node_ids=("n:c", "n:a", "n:b", "n:d"),
                      version_ids=np.asarray([3, 1, 2, 4], dtype=np.int64),
                      scores=np.asarray([1.0, 0.9, 0.9, 0.5], dtype=np.float32),
                      vectors=np.stack([same, same, same, other]))
    semantic = _Semantic(_TiedIndex(hits), None, Catalog(),  # type: ignore[arg-type]
                         valid_us=0, tx_us=0)
    query = same.copy()
    found = semantic.search(query, 2)
    assert [version for version, _sim in found] == [1, 2]  # n:a, n:b: equal, by node id
    assert found[0][1] == found[1][1]
    assert [version for version, _sim in semantic.search(query, 4)] == [1, 2, 3, 4]
