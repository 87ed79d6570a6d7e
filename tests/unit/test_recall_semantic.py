"""The semantic recall leg: query vector checks, similarity rounding, fusion with decay."""

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
from planner_svc.recall.request import SemanticLeg
from planner_svc.recall.semantic import SIMILARITY_DECIMALS, confidence_decay, semantic_leg

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


class _Index:
    def __init__(self, hits: Sequence[tuple[str, float]]) -> None:
        self.hits = list(hits)
        self.calls = 0

    def search(self, query: npt.ArrayLike, k: int, *, valid_us: int, tx_us: int,
               source: Any) -> list[tuple[str, float]]:
        self.calls += 1
        return self.hits[:k]


class _Embedder:
    def __init__(self, vector: Sequence[float]) -> None:
        self.vector = np.asarray(vector, dtype=np.float32)

    @property
    def dim(self) -> int:
        return DIM

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        return np.stack([self.vector for _ in texts])


def _run(leg: SemanticLeg, hits: Sequence[tuple[str, float]], *,
         embedder: _Embedder | None = None) -> dict[str, float]:
    store = _Store([_Node("a", 0.8, T0), _Node("b", 1.0, T0 - YEAR_US)])
    return semantic_leg(store, _Index(hits), embedder or _Embedder([1, 0, 0]), leg,  # type: ignore[arg-type]
                        valid_us=T0, tx_us=T0)


def test_similarity_is_rounded_to_six_decimals_before_clamping_and_fusion() -> None:
    # float32 inner products can differ in their last bits between SIMD code paths; rounding
    # to 6 decimals makes the score (and so the hashed weight) the same on every machine.
    assert SIMILARITY_DECIMALS == 6
    hits = [("a", float(np.float32(0.123456789))), ("b", float(np.float32(1.0000001)))]
    got = _run(SemanticLeg(text="q", k=5, alpha=1.0), hits)
    assert got == {"a": 0.123457, "b": 1.0}
    blended = _run(SemanticLeg(text="q", k=5, alpha=0.5), hits)
    assert blended["a"] == fuse(0.123457, confidence_decay(0.8, T0, T0), 0.5)
    assert blended["b"] == fuse(1.0, confidence_decay(1.0, T0 - YEAR_US, T0), 0.5)


def test_last_bit_differences_in_similarity_give_the_same_score() -> None:
    sim = np.float32(0.7071067)
    neighbours = [sim, np.nextafter(sim, np.float32(1)), np.nextafter(sim, np.float32(0))]
    scores = {_run(SemanticLeg(text="q", k=1), [("a", float(s))])["a"] for s in neighbours}
    assert scores == {0.707107}


def test_caller_vector_of_norm_zero_is_invalid() -> None:
    index = _Index([("a", 0.9)])
    leg = SemanticLeg(vector=(0.0, -0.0, 0.0), k=5)
    with pytest.raises(InvalidRequest) as info:
        semantic_leg(_Store([]), index, _Embedder([1, 0, 0]), leg,  # type: ignore[arg-type]
                     valid_us=T0, tx_us=T0)
    assert info.value.field == "semantic.vector"
    assert "norm 0" in info.value.reason
    assert index.calls == 0


def test_text_that_embeds_to_zero_finds_nothing_without_error() -> None:
    index = _Index([("a", 0.9)])
    got = semantic_leg(_Store([]), index, _Embedder([0, 0, 0]),  # type: ignore[arg-type]
                       SemanticLeg(text="zqxj", k=5), valid_us=T0, tx_us=T0)
    assert got == {}
    assert index.calls == 0
