"""Properties: the version map of an index state (:class:`~planner_svc.index.vector_index.
VersionRows`) reads the same rows as a search of each segment's sorted version ids; a
segment's node codes are equal exactly when the node ids are."""

from __future__ import annotations

from itertools import pairwise

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.index import vector_index
from planner_svc.index.partition import build_partition, encode_node_ids
from planner_svc.index.vector_index import IndexView

DIM = 4


def _view(segments: list[list[int]], nodes: list[str] | None = None) -> IndexView:
    rng = np.random.default_rng(len(segments))
    parts = []
    for ids in segments:
        vectors = rng.standard_normal((len(ids), DIM)).astype(np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        parts.append(build_partition(
            bucket=0, bucket_us=1000, dim=DIM,
            version_ids=np.asarray(ids, dtype=np.int64),
            valid_from_us=rng.integers(0, 1000, len(ids)).astype(np.int64),
            node_ids=encode_node_ids([f"n{i}" for i in ids] if nodes is None else nodes),
            vectors=vectors, kind="fp16"))
    return IndexView(tuple(parts), dim=DIM, covered_version_id=0)


@settings(max_examples=200, deadline=None)
@given(
    ids=st.lists(st.integers(1, 400) | st.integers(1, 1 << 40), min_size=0, max_size=60,
                 unique=True),
    cuts=st.lists(st.integers(0, 60), max_size=4),
    asked=st.lists(st.integers(-5, 450) | st.integers(-(1 << 62), 1 << 62), max_size=40),
    slack=st.sampled_from([0, 65_536]),
)
def test_the_version_map_reads_what_a_search_of_each_segment_reads(
    ids: list[int], cuts: list[int], asked: list[int], slack: int,
) -> None:
    bounds = sorted({0, len(ids), *[min(c, len(ids)) for c in cuts]})
    segments = [ids[a:b] for a, b in pairwise(bounds) if b > a]
    view = _view(segments)
    old = vector_index.DENSE_ROWS_SLACK
    vector_index.DENSE_ROWS_SLACK = slack  # small: sparse ids fall back to the search
    try:
        got = view.vector_rows(asked)
    finally:
        vector_index.DENSE_ROWS_SLACK = old
    want = view._searched_rows(np.asarray(asked, dtype=np.int64).reshape(-1))
    assert got.held.tolist() == want.held.tolist()
    assert got.rows.tolist() == want.rows.tolist()
    assert got.rows.dtype == np.int64 and got.block.dtype == np.int64
    assert got.block.tolist() == want.block.tolist()
    if len(segments) == 1 and len(got.blocks) == 1 and not want.blocks:
        # the map names the one segment even when it holds no asked version
        assert not got.held.any()
    else:
        assert [id(b) for b in got.blocks] == [id(b) for b in want.blocks]
    assert np.array_equal(got.matrix, want.matrix)


@settings(max_examples=100, deadline=None)
@given(nodes=st.lists(st.sampled_from(["a", "b", "a\u00e9", "z", "ab", "b\u00ff", "\u4e2d"]),
                      min_size=1, max_size=30))
def test_node_codes_are_equal_exactly_when_the_node_ids_are(nodes: list[str]) -> None:
    ids = list(range(1, len(nodes) + 1))
    part = _view([ids], nodes)._partitions[0]
    by_row = [part.node_ids[r].decode() for r in range(part.size)]
    codes = part.node_codes().tolist()
    for i in range(part.size):
        for j in range(part.size):
            assert (codes[i] == codes[j]) == (by_row[i] == by_row[j])


@settings(max_examples=100, deadline=None)
@given(
    segments=st.lists(st.lists(st.integers(1, 40), min_size=1, max_size=12, unique=True),
                      min_size=2, max_size=4),
    asked=st.lists(st.integers(-3, 45), max_size=30),
)
def test_a_version_in_two_segments_reads_the_later_copy_either_way(
    segments: list[list[int]], asked: list[int],
) -> None:
    view = _view(segments)  # ids repeat across segments, with different vectors
    got = view.vector_rows(asked)
    want = view._searched_rows(np.asarray(asked, dtype=np.int64).reshape(-1))
    assert got.held.tolist() == want.held.tolist()
    assert np.array_equal(got.matrix, want.matrix)
    for at, version in enumerate(asked):
        holders = [k for k, ids in enumerate(segments) if version in ids]
        if holders:  # the last segment holding it
            part = view._partitions[holders[-1]]
            row = int(np.flatnonzero(part.version_ids == version)[0])
            assert np.array_equal(got.matrix[at], part.stored[row])
        else:
            assert not got.held[at]
