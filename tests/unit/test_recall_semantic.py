"""The semantic recall leg: query checks, exact order-fixed similarity, top-k, decay fusion."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from planner_svc.core.errors import InvalidRequest
from planner_svc.core.fusion import fuse
from planner_svc.core.model import SpanRef
from planner_svc.index import VectorHit
from planner_svc.recall.request import SemanticLeg
from planner_svc.recall.semantic import (
    CANDIDATE_MARGIN,
    confidence_decay,
    exact_similarities,
    semantic_leg,
)

DIM = 3
T0 = 1_700_000_000_000_000
YEAR_US = 365 * 24 * 3600 * 1_000_000


@dataclass(frozen=True)
class _Node:
    node_id: str
    confidence: float
    valid_from_us: int
    provenance: Sequence[SpanRef] = ()


class _Store:
    """Only what the semantic leg reads: live node versions."""

    def __init__(self, nodes: Iterable[_Node]) -> None:
        self.nodes = {n.node_id: n for n in nodes}

    def get_many_as_of(self, node_ids: Iterable[str], valid_us: int, tx_us: int) -> dict[str, Any]:
        return {i: self.nodes[i] for i in node_ids if i in self.nodes}


def _unit(*values: float) -> npt.NDArray[np.float32]:
    v = np.asarray(values, dtype=np.float64)
    return (v / np.linalg.norm(v)).astype(np.float32)


class _Index:
    """Returns fixed hits; their scores are whatever the test says (even nonsense)."""

    def __init__(self, hits: Sequence[tuple[str, float, npt.NDArray[np.float32]]]) -> None:
        self.hits = [VectorHit(node_id=n, version_id=i, score=s, vector=v)
                     for i, (n, s, v) in enumerate(hits)]
        self.calls: list[int] = []

    def search(self, query: npt.ArrayLike, k: int, *, valid_us: int, tx_us: int
               ) -> list[VectorHit]:
        self.calls.append(k)
        return self.hits[:k]


class _Embedder:
    def __init__(self, vector: Sequence[float]) -> None:
        self.vector = np.asarray(vector, dtype=np.float32)

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vector for _ in texts])


A = _unit(1, 2, 2)
B = _unit(2, 1, 0)
C = _unit(0, 0, 1)
QUERY = _unit(3, 1, 1)


def _run(leg: SemanticLeg, index: _Index) -> dict[str, float]:
    store = _Store([_Node("a", 0.8, T0), _Node("b", 1.0, T0 - YEAR_US), _Node("c", 1.0, T0)])
    return semantic_leg(store, index, _Embedder(list(QUERY)), leg,  # type: ignore[arg-type]
                        valid_us=T0, tx_us=T0)


def _sequential_dot(q: npt.NDArray[np.float32], v: npt.NDArray[np.float32]) -> float:
    total = 0.0
    for x, y in zip(q.tolist(), v.tolist(), strict=True):
        total += x * y  # float32 x float32 is exact in a double; the sum runs left to right
    return total


def test_exact_similarity_adds_exact_products_in_index_order() -> None:
    rng = np.random.default_rng(7)
    rows = rng.standard_normal((40, 256)).astype(np.float32)
    q = rng.standard_normal(256).astype(np.float32)
    got = exact_similarities(q, rows)
    assert got.dtype == np.float64
    assert got.tolist() == [_sequential_dot(q, row) for row in rows]


def test_scores_come_from_the_vectors_not_from_the_index() -> None:
    hits = [("a", 0.1, A), ("b", 0.9, B), ("c", 0.5, C)]  # index scores that are plain wrong
    got = _run(SemanticLeg(text="q", k=5, alpha=1.0), _Index(hits))
    assert got == {
        "a": _sequential_dot(QUERY, A),
        "b": _sequential_dot(QUERY, B),
        "c": _sequential_dot(QUERY, C),
    }


def test_index_scores_with_noise_change_nothing() -> None:
    rng = np.random.default_rng(11)
    vectors = [_unit(*rng.standard_normal(DIM)) for _ in range(30)]
    names = [f"n{i:02d}" for i in range(30)]
    exact = exact_similarities(QUERY, np.stack(vectors)).tolist()
    base = sorted(zip(names, exact, vectors, strict=True), key=lambda h: (-h[1], h[0]))
    noisy = [(n, s + float(rng.uniform(-1e-7, 1e-7)), v) for n, s, v in base]
    noisy.sort(key=lambda h: -h[1])  # the index may order near-ties either way
    leg = SemanticLeg(text="q", k=10, alpha=1.0)
    assert _run(leg, _Index(base)) == _run(leg, _Index(noisy))
    assert list(_run(leg, _Index(noisy))) == [n for n, _s, _v in base[:10]]


def test_the_k_best_are_chosen_by_exact_similarity_among_over_fetched_candidates() -> None:
    # The index ranks c first, but exactly a and b are nearer: k = 2 keeps a and b.
    index = _Index([("c", 0.99, C), ("b", 0.98, B), ("a", 0.97, A)])
    got = _run(SemanticLeg(text="q", k=2, alpha=1.0), index)
    assert set(got) == {"a", "b"}
    assert index.calls == [2 + CANDIDATE_MARGIN]


def test_blend_with_decay_uses_the_exact_similarity() -> None:
    hits = [("a", 0.0, A), ("b", 0.0, B)]
    got = _run(SemanticLeg(text="q", k=5, alpha=0.5), _Index(hits))
    assert got["a"] == fuse(_sequential_dot(QUERY, A), confidence_decay(0.8, T0, T0), 0.5)
    assert got["b"] == fuse(
        _sequential_dot(QUERY, B), confidence_decay(1.0, T0 - YEAR_US, T0), 0.5
    )


def test_caller_vector_of_norm_zero_is_invalid() -> None:
    index = _Index([("a", 0.9, A)])
    leg = SemanticLeg(vector=(0.0, -0.0, 0.0), k=5)
    with pytest.raises(InvalidRequest) as info:
        semantic_leg(_Store([]), index, _Embedder([1, 0, 0]), leg,  # type: ignore[arg-type]
                     valid_us=T0, tx_us=T0)
    assert info.value.field == "semantic.vector"
    assert "norm 0" in info.value.reason
    assert index.calls == []


def test_text_that_embeds_to_zero_finds_nothing_without_error() -> None:
    index = _Index([("a", 0.9, A)])
    got = semantic_leg(_Store([]), index, _Embedder([0, 0, 0]),  # type: ignore[arg-type]
                       SemanticLeg(text="zqxj", k=5), valid_us=T0, tx_us=T0)
    assert got == {}
    assert index.calls == []
