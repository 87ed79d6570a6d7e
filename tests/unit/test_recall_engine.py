"""Phase A over the catalog: documents, hops, passages and the absolute evidence measure."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.fusion import clamp_unit, unit_power
from planner_svc.core.model import SpanRef
from planner_svc.embed import HashingEmbedder
from planner_svc.index.catalog import Catalog, CatalogBatch
from planner_svc.index.source import VectorRows
from planner_svc.recall.engine import (
    EngineQuery,
    Recalled,
    _best_first,
    _relative,
    measure_evidence,
    recall_documents,
)
from planner_svc.recall.semantic import exact_similarities
from planner_svc.recall.settings import RecallSettings
from planner_svc.store import Edge, NodeVersion, SourceVersionRow

T = 1_000
LATER = 2_000
DOCS = {
    "dacians": ["Dacians. An ancient Indo-European people of the Carpathian region.",
                "They lived mainly in the present-day countries of Romania and Moldova."],
    "romania": ["Romania. A country in Southeast Europe on the Black Sea.",
                "It borders Ukraine, Hungary, Serbia and Bulgaria.",
                "The capital and largest city is Bucharest."],
    "moldova": ["Moldova. A landlocked country in Eastern Europe.",
                "Its capital is Chisinau."],
    "thracians": ["Thracians. Ancient Indo-European tribes of Southeast Europe."],
    "apple": ["Apple Inc. An American technology company in Cupertino, founded in 1976."],
    "amazon": ["Amazon. An American e-commerce company founded by Jeff Bezos in 1994."],
}
MENTIONS = [("dacians", 1, "romania"), ("dacians", 1, "moldova"), ("romania", 0, "thracians")]


class Semantic:
    """Brute-force semantic access over hashing-embedded node texts."""

    def __init__(self, texts: Mapping[int, str]) -> None:
        self.embedder = HashingEmbedder(64)
        self.stored = {vid: self.embedder.embed([text])[0] for vid, text in texts.items()}

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return self.embedder.embed(texts)

    def search(self, vector: npt.NDArray[np.float32], k: int) -> list[tuple[int, float]]:
        ids = sorted(self.stored)
        sims = exact_similarities(vector, np.stack([self.stored[v] for v in ids])).tolist()
        order = sorted(range(len(ids)), key=lambda i: (-sims[i], ids[i]))[:k]
        return [(ids[i], sims[i]) for i in order]

    def vector_rows(self, version_ids: Sequence[int]) -> VectorRows:
        held = np.asarray([v in self.stored for v in version_ids], dtype=np.bool_)
        matrix = np.zeros((len(version_ids), self.embedder.dim), dtype=np.float32)
        for i, v in enumerate(version_ids):
            if v in self.stored:
                matrix[i] = self.stored[v]
        return VectorRows.of_matrix(held, matrix)


def _world() -> tuple[Catalog, Semantic, dict[tuple[str, int], int]]:
    nodes, sources, ids = [], [], {}
    vid = 0
    for row, (source, passages) in enumerate(sorted(DOCS.items()), start=1):
        text = "\n\n".join(passages)
        sources.append(SourceVersionRow(row_id=row, source_id=source, tx_us=T, text=text))
        at = 0
        for ordinal, passage in enumerate(passages):
            start = len(text[:text.index(passage, at)].encode())
            end = start + len(passage.encode())
            at = text.index(passage, at) + len(passage)
            vid += 1
            ids[(source, ordinal)] = vid
            nodes.append(NodeVersion(
                version_id=vid, node_id=f"psg:{source}:{ordinal}", labels=("passage",),
                properties={}, text=passage, confidence=1.0,
                provenance=(SpanRef(source, T, start, end),), valid_from_us=T,
                valid_to_us=None, tx_from_us=T, tx_to_us=None))
    edges = [(i, Edge(src=f"psg:{src}:{o}", dst=f"psg:{dst}:0", relation="mentions",
                      weight=0.8, valid_from_us=T, valid_to_us=None, tx_from_us=T,
                      tx_to_us=None))
             for i, (src, o, dst) in enumerate(MENTIONS)]
    catalog = Catalog()
    catalog.apply(CatalogBatch(nodes=nodes, edges=edges, sources=sources))
    return catalog, Semantic({n.version_id: n.text for n in nodes}), ids


def _recall(catalog: Catalog, semantic: Semantic, text: str, *, at: int = T,
            expand: bool = True) -> Recalled:
    query = EngineQuery(text=text, structured=True, semantic=True, document_k=50,
                        semantic_k=50, expand_depth=1 if expand else 0, valid_us=at, tx_us=at)
    return recall_documents(catalog, query, settings=RecallSettings(), semantic=semantic)


def test_a_hop_reaches_the_target_and_its_passage_that_answers() -> None:
    catalog, semantic, ids = _world()
    question = ("The ancient Indo-European people of the Carpathian region lived in Moldova and "
                "one other country. What is that country's capital?")
    got = _recall(catalog, semantic, question)
    docs = {d.source_id: d for d in got.documents}
    assert got.documents[0].source_id == "dacians"
    romania = docs["romania"]
    assert romania.hop_from == "dacians" and romania.hop > 0.0
    # within Romania, the passage naming the capital comes first
    capital = got.nodes[ids[("romania", 2)]]
    assert capital.rank == 0 and capital.local == 1.0
    assert capital.score > got.nodes[ids[("romania", 0)]].score
    # every document's best passage comes before the documents' second passages
    assert got.nodes[ids[("dacians", 0)]].rank == 0
    without = _recall(catalog, semantic, question, expand=False)
    assert all(d.hop == 0.0 for d in without.documents)


@pytest.mark.parametrize("document_sharpness", [2.0, 2.5])
def test_node_scores_are_the_scalar_formula_of_their_document_and_group(
        document_sharpness: float) -> None:
    catalog, semantic, ids = _world()
    settings = RecallSettings(document_sharpness=document_sharpness)
    query = EngineQuery(text="Which company did Jeff Bezos found, and when?", structured=True,
                        semantic=True, document_k=50, semantic_k=50, expand_depth=1,
                        valid_us=T, tx_us=T)
    got = recall_documents(catalog, query, settings=settings, semantic=semantic)
    candidates = {d.source_id: d.score for d in got.documents}
    expected = sorted(vid for (source, _o), vid in ids.items() if source in candidates)
    assert list(got.node_versions) == expected == list(got.nodes)
    floor = settings.passage_floor
    for version, score in zip(got.node_versions, got.node_scores, strict=True):
        node = got.nodes[version]
        # one group at a time, as a scalar: sharp * (floor + rest * local), then times decay**rank
        value = unit_power(candidates[node.source_id], document_sharpness) * (
            floor + (1.0 - floor) * node.local)
        value *= unit_power(settings.passage_decay, node.rank)
        assert score == node.score == value
    # each document's groups are ranked 0, 1, ... with their relevance not increasing
    for source in candidates:
        groups = sorted({(n.rank, n.local) for n in got.nodes.values() if n.source_id == source})
        assert [r for r, _ in groups] == list(range(len(groups)))
        assert [x for _r, x in groups] == sorted((x for _r, x in groups), reverse=True)


def test_every_part_of_a_comparison_gets_its_best_document() -> None:
    catalog, semantic, _ids = _world()
    question = ("Which company is older: the Cupertino technology company or the e-commerce "
                "company of Jeff Bezos?")
    got = _recall(catalog, semantic, question, expand=False)
    top = [d.source_id for d in got.documents[:2]]
    assert sorted(top) == ["amazon", "apple"]


def _one_document_per_leg(catalog: Catalog, semantic: Semantic, settings: RecallSettings
                          ) -> tuple[Recalled, npt.NDArray[np.float32]]:
    """BM25 keeps Moldova, the caller's vector keeps Romania (each leg keeps one document);
    the recall and the vector."""
    question = "Which landlocked country in Eastern Europe has Chisinau as its capital?"
    vector = semantic.embed(["Romania. A country in Southeast Europe on the Black Sea."])[0]
    narrow = EngineQuery(text=question, structured=True, semantic=True, vector=vector,
                         document_k=1, semantic_k=1, expand_depth=0, valid_us=T, tx_us=T)
    return recall_documents(catalog, narrow, settings=settings, semantic=semantic), vector


def test_a_document_one_leg_missed_gets_that_legs_score() -> None:
    catalog, semantic, _ids = _world()
    got, _vector = _one_document_per_leg(catalog, semantic, RecallSettings())
    docs = {d.source_id: d for d in got.documents}
    assert set(docs) == {"moldova", "romania"}
    # each leg's own find scores 1 in it; the other document gets the leg's score too
    assert docs["moldova"].structured == 1.0 and 0.0 < docs["moldova"].semantic < 1.0
    assert docs["romania"].semantic == 1.0 and 0.0 < docs["romania"].structured < 1.0
    for d in got.documents:
        assert d.score == (d.structured + d.semantic) / 2.0 > 0.5  # 0.5: found by one leg only


def test_the_missed_legs_score_is_the_best_clamped_cosine_relative_to_the_legs_best() -> None:
    catalog, semantic, ids = _world()
    settings = RecallSettings()
    got, vector = _one_document_per_leg(catalog, semantic, settings)
    moldova = {d.source_id: d for d in got.documents}["moldova"]

    def cosine(source: str, ordinal: int) -> float:
        stored = semantic.stored[ids[(source, ordinal)]]
        return float(exact_similarities(vector, stored[None, :])[0])

    # computed one member at a time, as a scalar formula: the same bits
    raw = max(0.0, *(clamp_unit(cosine("moldova", o)) for o in range(2)))
    best = clamp_unit(cosine("romania", 0))
    expected = clamp_unit(unit_power(clamp_unit(max(0.0, raw) / best),
                                     settings.semantic_sharpness))
    assert 0.0 < moldova.semantic < 1.0
    assert moldova.semantic == expected


@pytest.mark.parametrize("sharpness", [1.0, 4.0, 8.0, 2.5])
def test_relative_scores_keep_the_bits_of_the_scalar_formula(sharpness: float) -> None:
    rng = np.random.default_rng(7)
    values = [0.0, -0.0, -1.5, 1e-300, 5e-324, 3.0, 3.0, *rng.uniform(-1.0, 3.0, 200).tolist()]
    scores = {f"s{i}": v for i, v in enumerate(values)}
    best = max(values)
    expected = {k: clamp_unit(unit_power(clamp_unit(max(0.0, v) / best), sharpness))
                for k, v in scores.items()}
    got = _relative(scores, sharpness)
    assert list(got) == list(scores)
    assert [np.float64(v).tobytes() for v in got.values()] == [
        np.float64(v).tobytes() for v in expected.values()]
    # a NaN score takes the element-by-element path: Python's max(0.0, nan) is 0.0
    with_nan = _relative({"b": 2.0, "a": float("nan")}, sharpness)
    assert with_nan == {"b": 1.0, "a": 0.0}
    assert _relative({"a": 0.0, "b": -1.0}, sharpness) == {}
    # a NaN exponent too (settings refuse one): clamp_unit makes nan 0.0, and 1 ** nan is 1
    assert _relative({"a": 0.5, "b": 2.0}, float("nan")) == {"a": 0.0, "b": 1.0}  # 1 ** nan


@settings(max_examples=300, deadline=None)
@given(values=st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True),
                                 st.sampled_from([0.0, -0.0, 1.0, 5e-324, 1e-300])),
                       min_size=1, max_size=12),
       sharpness=st.one_of(st.integers(0, 20).map(float), st.sampled_from([2.5, 1024.0, 1025.0,
                                                                           0.5, math.inf])))
def test_relative_scores_are_the_scalar_formula_for_any_value(values: list[float],
                                                              sharpness: float) -> None:
    scores = {f"s{i}": v for i, v in enumerate(values)}
    best = max(values)
    got = _relative(scores, sharpness)
    if not best > 0.0:
        assert got == {}
        return
    expected = {k: clamp_unit(unit_power(clamp_unit(max(0.0, v) / best), sharpness))
                for k, v in scores.items()}
    assert list(got) == list(expected)
    assert [np.float64(v).tobytes() for v in got.values()] == [
        np.float64(v).tobytes() for v in expected.values()]


@settings(max_examples=300, deadline=None)
@given(scores=st.dictionaries(st.text(alphabet="abc", max_size=3),
                              st.sampled_from([0.0, -0.0, 0.25, 0.5, 1.0, 3.0])),
       limit=st.one_of(st.none(), st.integers(0, 12)))
def test_best_first_is_the_sort_by_score_then_key(scores: dict[str, float],
                                                  limit: int | None) -> None:
    expected = sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]
    got = _best_first(scores, limit)
    assert got == expected
    assert [math.copysign(1.0, v) for _k, v in got] == [
        math.copysign(1.0, v) for _k, v in expected]


def test_recall_is_as_of_the_plan() -> None:
    catalog, semantic, ids = _world()
    catalog.apply(CatalogBatch(closed_nodes=[(ids[("romania", 2)], LATER)]))
    question = "What is the capital and largest city of Romania?"
    now = _recall(catalog, semantic, question, at=LATER, expand=False)
    then = _recall(catalog, semantic, question, expand=False)
    assert ids[("romania", 2)] not in now.nodes
    assert ids[("romania", 2)] in then.nodes


def test_evidence_is_the_share_of_the_question_the_best_documents_hold() -> None:
    catalog, semantic, _ids = _world()
    answerable = _recall(catalog, semantic, "What is the capital of Moldova?")
    evidence = measure_evidence(catalog, answerable.question, answerable.best_similarity,
                                valid_us=T, tx_us=T)
    assert evidence.coverage == 1.0 and evidence.best_source == "moldova"
    assert evidence.similarity == pytest.approx(answerable.best_similarity)
    unknown = _recall(catalog, semantic, "What is the refund window of the Halvorsen web shop?")
    low = measure_evidence(catalog, unknown.question, unknown.best_similarity, valid_us=T,
                           tx_us=T)
    assert low.coverage == 0.0 and low.best_source is None


class _OneTermView:
    """A passage view where every row holds the term ``t`` with contribution 1.0."""

    def positions(self, row_ids: Sequence[int]) -> npt.NDArray[np.int64]:
        return np.asarray(row_ids, dtype=np.int64)

    def postings(self, terms: Sequence[str]
                 ) -> list[tuple[str, npt.NDArray[np.int64], npt.NDArray[np.float64]]]:
        return [(t, np.arange(10, dtype=np.int64), np.ones(10)) for t in sorted(set(terms))
                if t == "t"]


def test_a_bm25_ask_over_no_rows_does_not_hide_a_term_from_later_asks() -> None:
    from planner_svc.recall.engine import _PassageTable

    fresh = _PassageTable(_OneTermView(), None)  # type: ignore[arg-type]
    asked_empty_first = _PassageTable(_OneTermView(), None)  # type: ignore[arg-type]
    nothing = asked_empty_first.rows([], [])
    assert asked_empty_first.bm25(["t", "u"], nothing).tolist() == []
    for table in (fresh, asked_empty_first):
        rows = table.rows(["a"], [np.asarray([3, 4, 5], dtype=np.int64)])
        assert table.bm25(["t", "u"], rows).tolist() == [1.0, 1.0, 1.0]


def test_catalog_rows_share_one_object_per_distinct_id_label_set_and_time() -> None:
    catalog, _semantic, ids = _world()
    first = catalog.version(ids[("dacians", 0)])
    second = catalog.version(ids[("romania", 2)])
    target = catalog.version(ids[("romania", 0)])
    assert first is not None and second is not None and target is not None
    assert first.labels is second.labels and first.properties is second.properties
    assert first.tx_from is second.tx_from and first.valid_from is second.valid_from
    links = catalog.cross_links([target], T, T)
    assert [(link.other.node_id, link.relation, link.outgoing) for link in links] == [
        ("psg:dacians:1", "mentions", False), ("psg:thracians:0", "mentions", True)]
    edge = catalog._in["psg:romania:0"][0]
    assert edge.dst is target.node_id and edge.tx_from is target.tx_from
    assert edge.relation is catalog._out["psg:dacians:1"][1].relation


def test_links_follow_the_entry_and_the_as_of_they_are_read_for() -> None:
    catalog, _semantic, ids = _world()
    now = LATER + 1
    entry = catalog.entry("dacians", now, now)
    assert entry is catalog.entry("dacians", now, now)  # cached past every bound
    links = catalog.links("dacians", entry, now, now)
    assert dict(links) == {"moldova": 0.8, "romania": 0.8}
    assert catalog.links("dacians", entry, now, now) is links  # cached with the entry
    # Close the dacians:1 -> romania edge at LATER and add a heavier one from romania to
    # dacians:0.
    catalog.apply(CatalogBatch(
        edges=[(10, Edge(src="psg:romania:2", dst="psg:dacians:0", relation="related",
                         weight=0.9, valid_from_us=T, valid_to_us=None, tx_from_us=LATER,
                         tx_to_us=None))],
        closed_edges=[(0, LATER)]))
    after = catalog.entry("dacians", now, now)
    assert after is entry  # carried over: the batch added or closed no member of dacians
    assert dict(catalog.links("dacians", after, now, now)) == {"moldova": 0.8, "romania": 0.9}
    # As of before the batch (not cached): the edges then.
    before = catalog.entry("dacians", T, T)
    assert before.members == entry.members
    assert dict(catalog.links("dacians", before, T, T)) == {"moldova": 0.8, "romania": 0.8}
    # dacians:1, the only member linked to moldova, is closed by a later batch: links follow
    # the members of the entry they are given, a stale one (read before the batch) included.
    catalog.apply(CatalogBatch(closed_nodes=[(ids[("dacians", 1)], LATER + 5)]))
    later = LATER + 10
    fresh = catalog.entry("dacians", later, later)
    assert [m.version_id for m in fresh.members] == [ids[("dacians", 0)]]
    assert dict(catalog.links("dacians", fresh, later, later)) == {"romania": 0.9}
    stale = dict(catalog.links("dacians", after, later, later))
    assert stale == {"moldova": 0.8, "romania": 0.9}  # dacians:1 is a member of ``after``
    assert dict(catalog.links("moldova", catalog.entry("moldova", later, later), later,
                              later)) == {}


def test_entries_of_documents_a_batch_leaves_alone_carry_over() -> None:
    catalog, _semantic, ids = _world()
    now = LATER + 1
    before = {source: catalog.entry(source, now, now) for source in DOCS}
    links = catalog.links("thracians", before["thracians"], now, now)
    text = DOCS["moldova"][1]
    added = NodeVersion(
        version_id=100, node_id="psg:moldova:9", labels=("passage",), properties={},
        text=text, confidence=1.0, provenance=(SpanRef("moldova", T, 0, len(text.encode())),),
        valid_from_us=LATER, valid_to_us=None, tx_from_us=LATER, tx_to_us=None)
    catalog.apply(CatalogBatch(nodes=[added], closed_nodes=[(ids[("romania", 2)], LATER)]))
    later = LATER + 5
    for source in DOCS:
        after = catalog.entry(source, later, later)
        assert after == catalog._entry(source, later, later)  # as computed afresh
        assert (after is before[source]) is (source not in {"moldova", "romania"})
    assert 100 in catalog.entry("moldova", later, later).ids
    assert ids[("romania", 2)] not in catalog.entry("romania", later, later).ids
    # so do the links of a document whose edges lead where they led
    kept = catalog.links("thracians", catalog.entry("thracians", later, later), later, later)
    assert kept is links


def test_warm_computes_every_documents_entry_and_links() -> None:
    catalog, _semantic, _ids = _world()
    assert catalog.warm(T) == len(DOCS)
    latest = catalog._latest
    assert set(latest.entries) == set(latest.links) == set(DOCS)
    now = LATER
    entry = catalog.entry("dacians", now, now)
    assert entry is latest.entries["dacians"]
    assert catalog.links("dacians", entry, now, now) is latest.links["dacians"]
    assert dict(latest.links["dacians"]) == {"moldova": 0.8, "romania": 0.8}


class _Segments:
    """Semantic access over a real index view of several read-only segments, one version held
    by two of them with different vectors (the later segment's copy wins)."""

    def __init__(self) -> None:
        from planner_svc.index.partition import build_partition, encode_node_ids
        from planner_svc.index.vector_index import IndexView

        rng = np.random.default_rng(8)
        self.dim = 12
        self.vectors: dict[int, npt.NDArray[np.float32]] = {}
        parts = []
        for ids in ([1, 2, 3, 4], [5, 6, 7], [8, 9, 3]):
            vectors = rng.standard_normal((len(ids), self.dim)).astype(np.float32)
            vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
            parts.append(build_partition(
                bucket=0, bucket_us=10**9, dim=self.dim,
                version_ids=np.asarray(ids, dtype=np.int64),
                valid_from_us=np.zeros(len(ids), dtype=np.int64),
                node_ids=encode_node_ids([f"n{v}" for v in ids]), vectors=vectors))
            for version in ids:  # later segments overwrite: their copy wins
                self.vectors[version] = parts[-1].stored[np.flatnonzero(
                    parts[-1].version_ids == version)[0]]
        assert not any(part.stored.flags.writeable for part in parts)
        self.view = IndexView(tuple(parts), dim=self.dim, covered_version_id=9)

    def vector_rows(self, version_ids: Sequence[int]) -> VectorRows:
        return self.view.vector_rows(version_ids)


def test_passage_cosines_read_every_segment_in_place_with_the_later_copy() -> None:
    from planner_svc.recall.engine import _PassageTable

    semantic = _Segments()
    table = _PassageTable(_OneTermView(), semantic)  # type: ignore[arg-type]
    query = np.random.default_rng(9).standard_normal(semantic.dim).astype(np.float32)
    groups = {key: np.asarray(ids, dtype=np.int64) for key, ids
              in {"a": [3, 1], "b": [42], "c": [9, 5], "d": [8, 2, 6, 7, 4]}.items()}

    def rows_of(keys: str) -> npt.NDArray[np.int64]:
        return table.rows(list(keys), [groups[key] for key in keys])

    # loaded in three batches (a key named twice, keys loaded before, an id without a vector)
    first = rows_of("abb")
    second = rows_of("ca")
    third = rows_of("dbc")
    assert first.tolist() == [0, 1, 2, 2] and second.tolist() == [3, 4, 0, 1]
    assert third.tolist() == [5, 6, 7, 8, 9, 2, 3, 4]
    asked = [3, 1, 42, 9, 5, 8, 2, 6, 7, 4]
    rows = rows_of("abcd")
    got, none = table.cosine_arrays([(query, rows), (None, rows)])
    expected = [float(exact_similarities(query, semantic.vectors[v][None, :])[0])
                if v in semantic.vectors else 0.0 for v in asked]
    assert got.tolist() == expected
    assert none.tolist() == [0.0] * len(asked)
    assert table.stored(rows).tolist() == [v in semantic.vectors for v in asked]


def test_vector_rows_of_one_matrix_are_its_rows() -> None:
    matrix = np.arange(12, dtype=np.float32).reshape(4, 3)
    held = np.asarray([True, False, True, True])
    rows = VectorRows.of_matrix(held, matrix)
    assert rows.dim == 3 and rows.blocks[0] is matrix
    assert rows.block.tolist() == [0, -1, 0, 0] and rows.rows.tolist() == [0, 0, 2, 3]
    assert rows.matrix.tolist() == [[0, 1, 2], [0, 0, 0], [6, 7, 8], [9, 10, 11]]


def test_evidence_counts_every_term_of_a_long_question() -> None:
    # 70 terms no document holds sort before "moldova": its share counts past the 64th term
    catalog, semantic, _ids = _world()
    words = " ".join(f"aq{i:02d}zx" for i in range(70))
    asked = _recall(catalog, semantic, f"Is {words} in Moldova?")
    terms = asked.question.terms
    assert len(terms) == 71 and sorted(terms).index("moldova") == 70
    evidence = measure_evidence(catalog, asked.question, asked.best_similarity,
                                valid_us=T, tx_us=T)
    alone = math.log(1.0 + (6 - 2 + 0.5) / (2 + 0.5))  # dacians names moldova too
    unheld = math.log(1.0 + (6 + 0.5) / 0.5)
    assert evidence.best_source == "moldova"
    assert evidence.coverage == pytest.approx(alone / (alone + 70 * unheld))


def test_passage_bm25_has_the_bits_of_score_rows_with_long_and_short_lists(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Terms whose postings are joined (short lists) and terms searched alone (lists longer
    than TABLE_JOINED_POSTINGS), interleaved in code point order: the same sums."""
    import planner_svc.recall.engine as engine
    from planner_svc.index.lexical import LexicalIndex, LexicalRow
    from planner_svc.recall.engine import _PassageTable

    monkeypatch.setattr(engine, "TABLE_JOINED_POSTINGS", 1024)
    count = 1024 + 300
    index = LexicalIndex()
    index.add([LexicalRow(row_id=100 + i, terms=[
        "a", "zz", *(["aa"] * (i % 3 == 0)), *(["b", "b"] * (i % 7 == 0)),
        *(["c"] * (i % 11 == 0)), *(["filler"] * (i % 5))],
        valid_from_us=0, valid_to_us=None, tx_from_us=0, tx_to_us=None)
        for i in range(count)])
    view = index.view(valid_us=1, tx_us=1)
    table = _PassageTable(view, None)
    ids = np.arange(100, 100 + count, 13, dtype=np.int64)
    rows = table.rows(["doc"], [ids])
    asks = (["zz", "b", "a", "aa", "c", "nothing"], ["b", "c"], ["a"], ["aa", "zz"], [])
    wanted = []
    for terms in asks:
        expected = view.score_rows(terms, ids.tolist())
        got = table.bm25(terms, rows)
        want = np.asarray([expected.get(i, 0.0) for i in ids.tolist()])
        assert np.array_equal(got.view(np.int64), want.view(np.int64))
        wanted.append(want)
    # several asks at once (the rows laid end to end): the same bits, with long lists (ask
    # by ask) and with every list joined (one call)
    every = np.concatenate([rows] * len(asks))
    offsets = [rows.shape[0] * a for a in range(len(asks) + 1)]
    for limit in (1024, 1 << 16):
        monkeypatch.setattr(engine, "TABLE_JOINED_POSTINGS", limit)
        fresh = _PassageTable(view, None)
        assert fresh.rows(["doc"], [ids]).tolist() == rows.tolist()
        for got, want in zip(fresh.bm25_many(asks, every, offsets), wanted, strict=True):
            assert np.array_equal(got.view(np.int64), want.view(np.int64))


def test_passage_table_rows_grow_past_their_first_columns_and_keep_their_rows() -> None:
    """Loads beyond the table's first capacity (256 rows): every key keeps its rows, and the
    BM25 read at them is score_rows' (positions copied when the columns grow)."""
    from planner_svc.index.lexical import LexicalIndex, LexicalRow
    from planner_svc.recall.engine import _PassageTable

    index = LexicalIndex()
    index.add([LexicalRow(row_id=i, terms=["a", *(["b"] * (i % 3))], valid_from_us=0,
                          valid_to_us=None, tx_from_us=0, tx_to_us=None)
               for i in range(900)])
    view = index.view(valid_us=1, tx_us=1)
    table = _PassageTable(view, None)
    groups = {f"doc{k}": np.arange(k * 150, k * 150 + 150, dtype=np.int64) for k in range(6)}
    for batch in (["doc0", "doc1"], ["doc2", "doc1", "doc3"], ["doc4", "doc5", "doc0"]):
        rows = table.rows(batch, [groups[key] for key in batch])
        ids = np.concatenate([groups[key] for key in batch])
        expected = view.score_rows(["a", "b"], ids.tolist())
        got = table.bm25(["b", "a"], rows)
        assert got.tolist() == [expected.get(i, 0.0) for i in ids.tolist()]
    again = table.rows(["doc1", "doc0"], [groups["doc1"], groups["doc0"]])
    assert again.tolist() == [*range(150, 300), *range(0, 150)]
