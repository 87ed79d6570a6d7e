"""Each catalog version's spans paired with their information (``CatalogVersion.cited``) stay
equal to what ``Catalog.span`` returns, across batches that bring a span's information late,
change it, or send it again unchanged."""

from __future__ import annotations

import random

import pytest

from planner_svc.core.model import NOWHERE, CoordKey, SpanRef
from planner_svc.index.catalog import Catalog, CatalogBatch, SpanInfo
from planner_svc.store import NodeVersion

KEYS: list[CoordKey] = [(f"doc{i % 3}", 1, 10 * i, 10 * i + 5) for i in range(8)]


def _info(rng: random.Random) -> SpanInfo:
    known = rng.random() < 0.7
    return SpanInfo(kind=rng.choice(["body", "heading"]) if known else "body", kind_known=known,
                    estimated_tokens=rng.choice([None, 3, 7]), location=NOWHERE)


def _version(rng: random.Random, version_id: int) -> NodeVersion:
    keys = rng.sample(KEYS, rng.choice([0, 1, 1, 2]))
    return NodeVersion(version_id=version_id, node_id=f"n{version_id % 5}", labels=(),
                       properties={}, text=f"text {version_id}", confidence=1.0,
                       provenance=tuple(SpanRef(*k) for k in keys), valid_from_us=0,
                       valid_to_us=None, tx_from_us=version_id, tx_to_us=None)


def _check(catalog: Catalog, ids: list[int]) -> None:
    versions = catalog.versions([*ids, -1])
    assert versions == [*(catalog.version(i) for i in ids), None]
    for version in versions[:-1]:
        assert version is not None
        assert [k for k, _info in version.cited] == list(version.spans)
        for key, info in version.cited:
            assert info == catalog.span(key)


@pytest.mark.parametrize("seed", range(40))
def test_cited_spans_follow_the_span_information_of_every_batch(seed: int) -> None:
    rng = random.Random(seed)
    catalog = Catalog()
    ids: list[int] = []
    for _batch in range(6):
        nodes = [_version(rng, len(ids) + j + 1) for j in range(rng.randint(0, 3))]
        ids += [n.version_id for n in nodes]
        # information on some spans only (late, changed, or the same again)
        spans = {key: _info(rng) for key in KEYS if rng.random() < 0.4}
        catalog.apply(CatalogBatch(nodes=nodes, spans=spans))
        _check(catalog, ids)
