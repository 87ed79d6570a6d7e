"""Hop expansion over live edges (docs/architecture.md, "Recall and selection")."""

from __future__ import annotations

import inspect
from collections.abc import Iterable
from dataclasses import dataclass

from planner_svc.recall import expand as expand_module
from planner_svc.recall.expand import expand


@dataclass(frozen=True)
class _Edge:
    src: str
    dst: str
    weight: float


class _Graph:
    def __init__(self, edges: Iterable[_Edge]) -> None:
        self.edges = list(edges)

    def edges_as_of(self, node_ids: Iterable[str], valid_us: int, tx_us: int, *,
                    direction: str = "out") -> list[_Edge]:
        wanted = set(node_ids)
        return [e for e in self.edges if e.src in wanted]


def test_hops_multiply_weight_and_decay_and_keep_the_best_path() -> None:
    graph = _Graph([_Edge("a", "b", 0.5), _Edge("b", "c", 1.0), _Edge("a", "c", 0.25),
                    _Edge("c", "a", 1.0)])
    got = expand(graph, {"a": 1.0}, 2, valid_us=0, tx_us=0, hop_decay=0.5,  # type: ignore[arg-type]
                 max_frontier=10)
    # b: 1 * 0.5 * 0.5; c: max(1 * 0.25 * 0.5, 0.25 * 1.0 * 0.5); a is a seed and not improved
    assert got == {"b": 0.25, "c": 0.125}
    one_hop = expand(graph, {"a": 1.0}, 1, valid_us=0, tx_us=0, hop_decay=0.5,  # type: ignore[arg-type]
                     max_frontier=1)
    assert one_hop == {"b": 0.25}  # the frontier keeps the best node only


def test_hop_settings_have_one_home() -> None:
    # Defaults live in RecallSettings; the leg takes them as required arguments.
    params = inspect.signature(expand).parameters
    assert params["hop_decay"].default is inspect.Parameter.empty
    assert params["max_frontier"].default is inspect.Parameter.empty
    assert not hasattr(expand_module, "DEFAULT_HOP_DECAY")
