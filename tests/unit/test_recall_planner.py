"""The evidence planner's recall over a small real store and a scripted vector index."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from planner_svc.core.config import SelectionSettings
from planner_svc.core.fusion import sharpen
from planner_svc.core.model import SpanRef
from planner_svc.core.plan_hash import plan_hash
from planner_svc.index import VectorHit
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.request import EvidenceQuery, SemanticLeg, StructuredLeg
from planner_svc.recall.settings import RecallSettings
from planner_svc.recall.structured import normalise_scores
from planner_svc.store import NodeWrite, Store

T0 = 1_700_000_000_000_000  # microseconds
TEXT = "Paris is the capital of France.\n\nLyon lies on the Rhone.\n\nParis hosts the Louvre."
DIM = 4


def _byte_span(text: str, part: str) -> tuple[int, int]:
    data, piece = text.encode("utf-8"), part.encode("utf-8")
    start = data.index(piece)
    return start, start + len(piece)


class ScriptedIndex:
    """A vector index that returns fixed hits, each with its stored vector.

    The hit's own score is the float32 inner product with the query plus ``noise`` (what a
    library that sums in another order could report): the planner must not use it.
    """

    def __init__(self, hits: Sequence[tuple[str, Sequence[float]]], *, noise: float = 0.0
                 ) -> None:
        self.hits = [(node_id, np.asarray(v, dtype=np.float32)) for node_id, v in hits]
        self.noise = noise
        self.queries: list[npt.NDArray[np.float32]] = []

    def search(self, query: npt.ArrayLike, k: int, *, valid_us: int, tx_us: int
               ) -> list[VectorHit]:
        q = np.asarray(query, dtype=np.float32)
        self.queries.append(q)
        out = [
            VectorHit(node_id=node_id, version_id=i,
                      score=float(np.dot(q, v)) + self.noise * (-1) ** i, vector=v)
            for i, (node_id, v) in enumerate(self.hits)
        ]
        out.sort(key=lambda h: (-h.score, h.node_id))
        return out[:k]


class ZeroEmbedder:
    """Embeds every text to the zero vector (no known token)."""

    dim = DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.zeros((len(texts), DIM), dtype=np.float32)


def _fill(s: Store) -> None:
    s.put_source_version("src", TEXT, title="Cities", media_type="text/plain", tx_us=10)
    parts = ("Paris is the capital of France.", "Lyon lies on the Rhone.",
             "Paris hosts the Louvre.")
    spans = [_byte_span(TEXT, p) for p in parts]
    s.add_spans("src", 10, [(a, b, "paragraph") for a, b in spans])
    s.write_nodes(
        [
            NodeWrite(node_id=f"p:{i}", text=part, labels=("passage",),
                      provenance=(SpanRef("src", 10, *spans[i]),), valid_from_us=T0)
            for i, part in enumerate(parts)
        ],
        tx_us=20,
    )


@pytest.fixture()
def store(tmp_path: Path) -> Iterator[Store]:
    with Store.open(tmp_path / "data") as s:
        _fill(s)
        yield s


def _query(*, structured: StructuredLeg | None = None, semantic: SemanticLeg | None = None,
           at_valid_us: int = T0, at_tx_us: int = 100, expand_depth: int = 0) -> EvidenceQuery:
    return EvidenceQuery(
        structured=structured, semantic=semantic, expand_depth=expand_depth,
        at_valid_us=at_valid_us, at_tx_us=at_tx_us, budget_tokens=1000, model="",
        allow_ungrounded=True, explain=True, max_frac_per_source=1.0, dedup_overlap=0.5,
    )


def _planner(store: Store, index: ScriptedIndex | None = None,
             embedder: ZeroEmbedder | None = None) -> EvidencePlanner:
    return EvidencePlanner(store, index=index, embedder=embedder, config=SelectionSettings(),
                           recall=RecallSettings())


def test_structured_scores_are_bm25_over_best_then_sharpened_once(store: Store) -> None:
    result = _planner(store).plan(_query(structured=StructuredLeg(text="Paris capital")))
    assert result.trace is not None
    raw = store.search_text("Paris capital", valid_us=T0, tx_us=100, limit=50)
    top = raw[0][1]
    assert set(result.trace.structured) == {"p:0", "p:2"}
    relative = {node_id: min(1.0, max(0.0, score / top)) for node_id, score in raw}
    # sharpness 4 is the multiplication chain (x*x)*(x*x), bit for bit
    assert result.trace.structured == {
        node_id: (x * x) * (x * x) for node_id, x in relative.items()
    }
    assert result.trace.structured["p:0"] == 1.0
    assert 0.0 < result.trace.structured["p:2"] < 1.0
    assert result.trace.structured == sharpen(normalise_scores(raw), 4.0)


def test_filter_only_structured_scores_every_hit_one(store: Store) -> None:
    result = _planner(store).plan(
        _query(structured=StructuredLeg(text="", labels=("passage",)))
    )
    assert result.trace is not None
    assert result.trace.structured == {"p:0": 1.0, "p:1": 1.0, "p:2": 1.0}


def test_semantic_leg_without_signal_does_not_outrank_structured_hits(store: Store) -> None:
    # alpha 0.5 at a valid time ~146k years after the nodes: the confidence decay underflows
    # to 0, every fused score is 0, and the leg must add nothing (it used to score all 1.0).
    far_future = 2**62
    index = ScriptedIndex([("p:1", (0.9, 0.1, 0.0, 0.0)), ("p:0", (0.8, 0.2, 0.0, 0.0))])
    result = _planner(store, index).plan(_query(
        structured=StructuredLeg(text="Paris capital"),
        semantic=SemanticLeg(vector=(1.0, 0.0, 0.0, 0.0), k=5, alpha=0.5),
        at_valid_us=far_future,
    ))
    assert result.trace is not None
    assert result.trace.semantic == {}
    assert "p:1" not in result.trace.fused
    assert result.trace.fused == result.trace.structured
    assert {s.span.start for s in result.plan.spans} == {0, TEXT.encode().index(b"Paris hosts")}


class WriteBetweenLegs(Store):
    """A store that lets another thread commit a write right after the structured leg."""

    between: Callable[[], None] | None = None

    def search_text(self, query: str, **kw: Any) -> list[tuple[str, float]]:
        hits = super().search_text(query, **kw)
        if self.between is not None:
            writer = threading.Thread(target=self.between)
            writer.start()
            writer.join(timeout=10)
            assert not writer.is_alive(), "a writer was blocked by a plan's read snapshot"
        return hits


def test_plan_reads_one_snapshot_while_a_writer_commits(tmp_path: Path) -> None:
    with WriteBetweenLegs.open(tmp_path / "data") as store:
        assert isinstance(store, WriteBetweenLegs)
        _fill(store)
        query = _query(structured=StructuredLeg(text="Paris capital"))
        retired: list[int] = []
        store.between = lambda: retired.append(store.retire_nodes(["p:0", "p:2"], tx_us=50))
        result = _planner(store).plan(query)
        assert retired == [2]  # committed while the plan was running
        # The plan saw the state before the write: the nodes the structured leg found are
        # still live when exploded to spans, not half-retired.
        assert len(result.plan.spans) == 2
        assert result.plan.stats.nodes_not_live == 0
        store.between = None
        after = _planner(store).plan(query)
        assert after.plan.spans == ()
        assert after.plan.stats.structured_hits == 0


def _unit(*values: float) -> tuple[float, ...]:
    v = np.asarray(values, dtype=np.float64)
    return tuple((v / np.linalg.norm(v)).astype(np.float32).tolist())


def test_noise_in_the_index_scores_changes_no_weight_and_no_plan(store: Store) -> None:
    vectors = [("p:0", _unit(0.9, 0.3, 0.1, 0.1)), ("p:1", _unit(0.2, 0.9, 0.1, 0.3)),
               ("p:2", _unit(0.8, 0.1, 0.5, 0.2))]
    query = _query(structured=StructuredLeg(text="Paris"),
                   semantic=SemanticLeg(vector=_unit(1.0, 0.2, 0.3, 0.0), k=2))
    clean = _planner(store, ScriptedIndex(vectors)).plan(query)
    noisy = [_planner(store, ScriptedIndex(vectors, noise=n)).plan(query) for n in (1e-7, -1e-7)]
    assert clean.trace is not None and len(clean.trace.semantic) == 2
    for other in noisy:
        assert other.trace is not None
        assert other.trace.semantic == clean.trace.semantic
        assert [s.weight for s in other.plan.spans] == [s.weight for s in clean.plan.spans]
        assert other.plan.plan_hash == clean.plan.plan_hash
    assert clean.plan.plan_hash == plan_hash(
        "v1", clean.plan.budget, clean.plan.used, clean.plan.spans
    )


def test_a_source_version_committed_after_the_plan_time_is_never_cited(tmp_path: Path) -> None:
    # A node written first may name a source version that is committed only later; a plan as
    # of a time in between must not cite a version that did not exist yet.
    with Store.open(tmp_path / "data") as s:
        text = "Tide tables list the high water times."
        s.write_nodes([NodeWrite(node_id="n:tide", text="tide tables high water",
                                 provenance=(SpanRef("late", 50, 0, len(text)),),
                                 valid_from_us=T0)], tx_us=20)
        s.put_source_version("late", text, title="Tides", media_type="text/plain", tx_us=50)
        query = _query(structured=StructuredLeg(text="tide tables"), at_tx_us=30)
        early = _planner(s).plan(query)
        assert early.plan.spans == ()
        assert early.plan.stats.structured_hits == 1
        assert early.plan.stats.slices_missing == 1
        later = _planner(s).plan(_query(structured=StructuredLeg(text="tide tables"),
                                        at_tx_us=60))
        assert [sp.text for sp in later.plan.spans] == [text]
