"""Property: vector search equals a brute-force scan of the live versions, ties included.

Vectors are drawn from a handful of fixed directions (scaled by powers of two, which
normalisation undoes exactly), so many versions share a similarity bit for bit and the node-id
tie-break decides the order, including at the cut between fetched and unfetched candidates.
Distinct directions are far apart in similarity, so the expected order is exact. The first
fetch is shrunk to ``2k`` rows per partition so that the widening rule decides most answers.
"""

from __future__ import annotations

from unittest import mock

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index import VectorIndex, vector_index
from planner_svc.index.memory_source import MemoryVectorSource
from tests.unit.test_index import pairs

DIM = 8
_RNG = np.random.default_rng(20240601)
DIRECTIONS = _RNG.standard_normal((6, DIM)).astype(np.float32)
QUERIES = _RNG.standard_normal((4, DIM))
ZERO = len(DIRECTIONS)  # direction index meaning "zero vector"


def _unit(v: np.ndarray) -> np.ndarray:
    return np.asarray(v, dtype=np.float64) / float(np.linalg.norm(v))


def _direction_sims(query: int) -> np.ndarray:
    return np.array([float(np.dot(_unit(d), _unit(QUERIES[query]))) for d in DIRECTIONS])


def test_directions_are_well_separated_for_every_query() -> None:
    for q in range(len(QUERIES)):
        sims = np.sort(_direction_sims(q))
        assert float(np.min(np.diff(sims))) > 1e-3


version = st.tuples(
    st.integers(0, 39),  # node
    st.integers(0, ZERO),  # direction (ZERO = zero vector)
    st.sampled_from([0.5, 1.0, 2.0]),  # scale
    st.integers(-40, 40),  # valid_from
    st.none() | st.integers(1, 40),  # valid length (None = open)
    st.integers(0, 20),  # tx_from
    st.none() | st.integers(1, 20),  # tx length (None = open)
)


@settings(max_examples=150, deadline=None)
@given(
    versions=st.lists(version, min_size=30, max_size=150),
    bucket_us=st.sampled_from([7, 40, 1000]),
    query=st.integers(0, len(QUERIES) - 1),
    valid_us=st.integers(-50, 90),
    tx_us=st.integers(-2, 45),
    k=st.integers(1, 12),
)
def test_search_is_exact_with_ties(
    versions: list[tuple[int, int, float, int, int | None, int, int | None]],
    bucket_us: int,
    query: int,
    valid_us: int,
    tx_us: int,
    k: int,
) -> None:
    src = MemoryVectorSource()
    for node, direction, scale, vfrom, vlen, tfrom, tlen in versions:
        vector = np.zeros(DIM, np.float32) if direction == ZERO else DIRECTIONS[direction] * scale
        src.add(
            f"n{node:02d}",
            vector,
            valid_from_us=vfrom,
            valid_to_us=None if vlen is None else vfrom + vlen,
            tx_from_us=tfrom,
            tx_to_us=None if tlen is None else tfrom + tlen,
        )
    index = VectorIndex.build_in_memory(src, embedder_name="t", dim=DIM, bucket_us=bucket_us)

    sims = _direction_sims(query)
    best: dict[str, float] = {}
    for (node, direction, *_), stored in zip(versions, src.versions(), strict=True):
        if direction != ZERO and stored.live_at(valid_us, tx_us):
            node_id = f"n{node:02d}"
            best[node_id] = max(best.get(node_id, -2.0), float(sims[direction]))
    expected = sorted(best, key=lambda n: (-best[n], n))[:k]

    with mock.patch.object(vector_index, "_MIN_FETCH", 1):
        result = pairs(index.search(QUERIES[query], k, valid_us=valid_us, tx_us=tx_us, live=src))
    assert [n for n, _ in result] == expected
    for found, sim in result:
        assert abs(sim - best[found]) < 1e-5
