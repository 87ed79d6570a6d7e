"""The span pool of a recall: one node standing for its span group gives the weights, origins
and counts of every node exploded one by one."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import CoordKey, PlanStats
from planner_svc.core.weigh import prior_lookup
from planner_svc.index.catalog import CatalogVersion, SpanInfo
from planner_svc.recall.engine import NodeArrays, Recalled
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.question import Question

KEYS: list[CoordKey] = [(source, tx, start, start + 5)
                        for source in ("a", "b") for tx in (10, 20) for start in (0, 3)]
INFOS = [None, SpanInfo(kind="body", kind_known=True, estimated_tokens=4),
         SpanInfo(kind="heading", kind_known=False, estimated_tokens=2),
         SpanInfo(kind="body", kind_known=False, estimated_tokens=None)]
SCORES = [0.0, 0.25, 0.5, 1.0]


def _version(version_id: int, spans: tuple[CoordKey, ...],
             infos: dict[CoordKey, SpanInfo | None]) -> CatalogVersion:
    return CatalogVersion(version_id=version_id, node_id=f"n{version_id}", source="a",
                          labels=frozenset(), properties=frozenset(), confidence=1.0,
                          spans=spans, valid_from=0, valid_to=99, tx_from=0, tx_to=99,
                          cited=tuple((key, infos[key]) for key in spans))


def _one_by_one(nodes: list[tuple[CatalogVersion, float]], at_tx: int,
                config: SelectionSettings) -> tuple[dict[CoordKey, tuple[float, Any, str]],
                                                    tuple[int, int, int]]:
    """Every node exploded in version id order, a span keeping the first of its largest
    weights; the missing, kind-missing and duplicate counts per node and span."""
    prior = prior_lookup(config)
    best: dict[CoordKey, tuple[float, Any, str]] = {}
    missing = kind_missing = duplicates = 0
    for version, score in sorted(nodes, key=lambda node: node[0].version_id):
        for key, info in version.cited:
            if info is None or info.estimated_tokens is None or key[1] > at_tx:
                missing += 1
                continue
            if not info.kind_known:
                kind_missing += 1
            entry = (score * prior(info.kind, 1.0), info, version.node_id)
            if key in best:
                duplicates += 1
                if entry[0] > best[key][0]:
                    best[key] = entry
            else:
                best[key] = entry
    return {key: best[key] for key in sorted(best)}, (missing, kind_missing, duplicates)


@settings(max_examples=300, deadline=None)
@given(infos=st.lists(st.sampled_from(INFOS), min_size=len(KEYS), max_size=len(KEYS)),
       groups=st.lists(st.tuples(st.lists(st.sampled_from(KEYS), max_size=3),
                                 st.sampled_from(SCORES), st.integers(1, 3)),
                       min_size=1, max_size=6),
       ids=st.permutations(list(range(100, 118))),
       at_tx=st.sampled_from([5, 10, 20]))
def test_the_pool_of_span_groups_is_the_pool_of_their_nodes(
        infos: list[SpanInfo | None], groups: list[tuple[list[CoordKey], float, int]],
        ids: list[int], at_tx: int) -> None:
    info_of = dict(zip(KEYS, infos, strict=True))
    config = SelectionSettings(kind_priors={"body": 1.0, "heading": 0.5})
    versions: dict[int, CatalogVersion] = {}
    nodes: list[tuple[CatalogVersion, float]] = []
    members: list[tuple[int, float, int]] = []  # (first node, score, size) of each group
    taken = iter(ids)
    for spans, score, size in groups:
        group = sorted(next(taken) for _ in range(size))
        for version_id in group:
            versions[version_id] = _version(version_id, tuple(spans), info_of)
            nodes.append((versions[version_id], score))
        members.append((group[0], score, size))
    members.sort()
    empty = np.zeros(0, dtype=np.int64)
    recalled = Recalled(
        node_count=len(nodes),
        arrays=NodeArrays(score=np.zeros(0), owner=empty, sources=(),
                          relevance=np.zeros(0), rank=empty, sizes=empty, versions=empty),
        firsts=tuple(m[0] for m in members), first_scores=tuple(m[1] for m in members),
        first_sizes=tuple(m[2] for m in members), document_rows=(),
        question=Question(text="", terms=(), parts=()))
    catalog = SimpleNamespace(versions=lambda ids: [versions.get(i) for i in ids])
    planner = SimpleNamespace(config=config)
    stats = PlanStats()
    got = EvidencePlanner._pool(planner, catalog, recalled,  # type: ignore[arg-type]
                                SimpleNamespace(at_tx_us=at_tx), stats)  # type: ignore[arg-type]
    expected, counts = _one_by_one(nodes, at_tx, config)
    assert list(zip(*got, strict=True)) == list(expected.items())
    assert (stats.slices_missing, stats.kind_missing, stats.pool_duplicates) == counts
