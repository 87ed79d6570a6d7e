"""Exact token accounting through recall and selection: the CJK budget fixture, estimate mode
in the stats, and the context-window ceiling (README.md, "Selection rules")."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field

import pytest

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import CoordKey, EvidencePlan, PlanStats, SpanRef
from planner_svc.core.plan import build_plan
from planner_svc.core.tokens import TokenAccounting, estimate_tokens
from planner_svc.recall.explode import Pool, explode
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.ports import EdgeView
from planner_svc.recall.request import EvidenceQuery, StructuredLeg
from planner_svc.recall.tokens import default_counter
from planner_svc.tokens import ModelRegistry, ModelSpec, RegistryCounter, TiktokenTokenizer

MODEL = "minilm-l6"
# Ideographs the tokenizer keeps as one token each (CJK characters are split one per token and
# these are in its vocabulary), so a span of n characters costs n tokens exactly.
IDEOGRAPHS = "中的人大国上年生学时日本一出会文工部是不行方说地可成所家发下"


@dataclass(frozen=True, slots=True)
class _Node:
    node_id: str
    confidence: float
    valid_from_us: int
    provenance: Sequence[SpanRef]


@dataclass
class _Store:
    """Just what ``explode`` and the structured leg read: one span per node."""

    texts: dict[CoordKey, str]
    node_span: dict[str, CoordKey] = field(default_factory=dict)

    @classmethod
    def of(cls, texts: Sequence[str]) -> _Store:
        store = cls(texts={})
        for i, text in enumerate(texts):
            key = (f"src-{i:02d}", 0, 0, len(text.encode()))
            store.texts[key] = text
            store.node_span[f"n{i:02d}"] = key
        return store

    def search_text(self, query: str, *, labels: Sequence[str] = (),
                    properties: Mapping[str, str] | None = None, valid_us: int, tx_us: int,
                    limit: int) -> list[tuple[str, float]]:
        return [(n, 1.0) for n in sorted(self.node_span)][:limit]

    def get_many_as_of(self, node_ids: Iterable[str], valid_us: int,
                       tx_us: int) -> Mapping[str, _Node]:
        return {n: _Node(n, 1.0, 0, (SpanRef(*self.node_span[n]),))
                for n in node_ids if n in self.node_span}

    def edges_as_of(self, node_ids: Iterable[str], valid_us: int, tx_us: int, *,
                    direction: str = "out") -> Sequence[EdgeView]:
        return []

    def span_kinds(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        return {k: "paragraph" for k in keys}

    def canonical_slices(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        return {k: self.texts[k] for k in keys if k in self.texts}

    def snapshot(self) -> AbstractContextManager[None]:
        return nullcontext()  # immutable


class CharsOver4:
    """The common shortcut this project refuses: a quarter token per character."""

    def count(self, model: str, text: str) -> int | None:
        return math.ceil(len(text) / 4)

    def context_window(self, model: str) -> int | None:
        return 512


def _pool(store: _Store, counter: TokenAccounting | None, model: str = MODEL) -> Pool:
    scores = {n: 1.0 - i / 100 for i, n in enumerate(sorted(store.node_span))}
    return explode(store, scores, valid_us=0, tx_us=0, config=SelectionSettings(), counter=counter,
                   model=model, stats=PlanStats())


def _plan(pool: Pool, counter: TokenAccounting, requested: int, model: str = MODEL) -> EvidencePlan:
    return build_plan(pool.candidates, requested_budget=requested,
                      context_window=counter.context_window(model),
                      estimate_mode=pool.estimate_mode, max_frac_per_source=1.0,
                      dedup_overlap=0.5)


def _cjk_spans(n: int, length: int) -> list[str]:
    return [
        "".join(IDEOGRAPHS[(i * 7 + j) % len(IDEOGRAPHS)] for j in range(length))
        for i in range(n)
    ]


def test_cjk_budget_holds_with_exact_counts_and_breaks_with_chars_over_four() -> None:
    exact = default_counter()
    store = _Store.of(_cjk_spans(12, 40))
    truth: dict[str, int] = {}
    for text in store.texts.values():
        n = exact.count(MODEL, text)
        assert n is not None
        truth[text] = n
    assert set(truth.values()) == {40}  # one token per ideograph, counted by the tokenizer

    pool = _pool(store, exact)
    assert not pool.estimate_mode
    assert [c.tokens for c in pool.candidates] == [40] * 12
    plan = _plan(pool, exact, requested=200)
    assert plan.budget == 200  # min(200, 512 // 2): the ceiling does not bind here
    assert plan.used == 200
    assert plan.used <= plan.budget
    assert len(plan.spans) == 5
    assert sum(truth[s.text] for s in plan.spans) == plan.used
    assert plan.stats.token_estimate is False

    quarter = CharsOver4()
    pool4 = _pool(store, quarter)
    assert [c.tokens for c in pool4.candidates] == [10] * 12
    plan4 = _plan(pool4, quarter, requested=200)
    assert plan4.budget == 200
    assert plan4.used == 120 <= plan4.budget  # the plan believes it fits...
    actual = sum(truth[s.text] for s in plan4.spans)
    assert len(plan4.spans) == 12
    assert actual == 480 > plan4.budget  # ...but the model would see 2.4x the budget


def test_estimator_keeps_the_same_cjk_pool_within_budget() -> None:
    store = _Store.of(_cjk_spans(12, 40))
    assert all(estimate_tokens(t) == 40 for t in store.texts.values())
    pool = _pool(store, None)
    assert pool.estimate_mode
    plan = build_plan(pool.candidates, requested_budget=200, context_window=None,
                      estimate_mode=True, max_frac_per_source=1.0, dedup_overlap=0.5)
    assert plan.budget == 180 and plan.used == 160 and len(plan.spans) == 4
    assert plan.stats.token_estimate is True


def test_context_window_ceiling_applies_to_exact_plans() -> None:
    exact = default_counter()
    pool = _pool(_Store.of(_cjk_spans(12, 40)), exact)
    plan = _plan(pool, exact, requested=6000)
    assert plan.budget == 256  # min(6000, 512 // 2), no estimate factor
    assert plan.used == 240 and len(plan.spans) == 6
    assert plan.stats.token_estimate is False


class _Partial:
    """Exact for ideographs only; leaves everything else to the estimator."""

    def count(self, model: str, text: str) -> int | None:
        return len(text) if all(c in IDEOGRAPHS for c in text) else None

    def context_window(self, model: str) -> int | None:
        return None


def test_one_estimated_span_puts_the_whole_plan_in_estimate_mode() -> None:
    store = _Store.of([*_cjk_spans(3, 10), "plain ASCII text, estimated"])
    pool = _pool(store, _Partial())
    assert pool.estimate_mode
    assert sorted(c.tokens for c in pool.candidates) == [8, 10, 10, 10]
    plan = build_plan(pool.candidates, requested_budget=100, context_window=None,
                      estimate_mode=pool.estimate_mode, max_frac_per_source=1.0,
                      dedup_overlap=0.5)
    assert plan.budget == 90
    assert plan.stats.token_estimate is True


def _query(model: str, budget: int) -> EvidenceQuery:
    return EvidenceQuery(structured=StructuredLeg(text="q"), semantic=None, expand_depth=0,
                     at_valid_us=0, at_tx_us=0, budget_tokens=budget, model=model,
                     allow_ungrounded=False, explain=False, max_frac_per_source=1.0,
                     dedup_overlap=0.5)


@pytest.mark.parametrize(
    ("model", "requested", "budget", "estimated"),
    [
        ("minilm-l6", 6000, 256, False),  # exact: min(6000, 512 // 2)
        ("minilm-l6", 100, 100, False),  # the request is below the ceiling
        ("gpt-4", 6000, 4096, False),  # cl100k, exact: min(6000, 8192 // 2)
        ("gpt-4", 3000, 3000, False),
        ("window-only", 6000, 450, True),  # registered without a tokenizer: 500 * 0.9
        ("unregistered", 6000, 5400, True),  # no window, estimated
        ("", 6000, 5400, True),  # no model named
    ],
)
def test_planner_applies_registry_windows_and_records_estimate_mode(
    model: str, requested: int, budget: int, estimated: bool
) -> None:
    base = default_counter().registry.models
    registry = ModelRegistry(models={
        "minilm-l6": base["minilm-l6"],
        "gpt-4": ModelSpec(name="gpt-4", context_window=8192,
                           tokenizer=TiktokenTokenizer(encoding="cl100k_base")),
        "window-only": ModelSpec(name="window-only", context_window=1000, tokenizer=None),
    })
    planner = EvidencePlanner(_Store.of(_cjk_spans(12, 40)), index=None, embedder=None,
                              config=SelectionSettings(), counter=RegistryCounter(registry))
    plan = planner.plan(_query(model, requested)).plan
    assert plan.budget == budget
    assert plan.used <= plan.budget
    assert plan.stats.token_estimate is estimated
    if model == "gpt-4":  # counted by cl100k, which splits these ideographs its own way
        import bpe_openai

        cl100k = bpe_openai.get_encoding("cl100k_base")
        assert all(s.tokens == len(cl100k.encode_ordinary(s.text)) for s in plan.spans)
        assert sum(s.tokens for s in plan.spans) == plan.used
    else:
        assert all(s.tokens == 40 for s in plan.spans)
