"""Exact token accounting through recall and selection: the CJK budget fixture, estimate mode
in the stats, and the context-window ceiling (README.md, "Selection rules")."""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import EvidencePlan, SpanRef
from planner_svc.core.tokens import TokenAccounting, estimate_tokens
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.request import EvidenceQuery, StructuredLeg
from planner_svc.recall.tokens import default_counter
from planner_svc.store import NodeWrite, Store
from planner_svc.tokens import ModelRegistry, ModelSpec, RegistryCounter, TiktokenTokenizer

MODEL = "minilm-l6"
# Ideographs the tokenizer keeps as one token each (CJK characters are split one per token and
# these are in its vocabulary), so a span of n characters costs n tokens exactly.
IDEOGRAPHS = "中的人大国上年生学时日本一出会文工部是不行方说地可成所家发下"


T = 1_000  # the fixture's transaction and valid time, microseconds


def _store(tmp_path: Path, texts: Sequence[str]) -> Store:
    """A real store holding one document per text, each one passage citing its whole text."""
    store = Store.open(tmp_path / f"data-{len(list(tmp_path.iterdir()))}")
    with store.transaction():
        for i, text in enumerate(texts):
            source = f"src-{i:02d}"
            store.put_source_version(source, text, title=source, media_type="text/plain",
                                     tx_us=T)
            end = len(text.encode())
            store.add_spans(source, T, [(0, end, "paragraph")])
            store.write_nodes([NodeWrite(node_id=f"psg:{source}:0", labels=("passage",),
                                         text=text, provenance=(SpanRef(source, T, 0, end),),
                                         valid_from_us=T)], tx_us=T)
    return store


def _query(model: str, budget: int) -> EvidenceQuery:
    """Every passage, by a filter on its label (each scores alike; ties go by coordinates)."""
    return EvidenceQuery(structured=StructuredLeg(text="", labels=("passage",)), semantic=None,
                         expand_depth=0, at_valid_us=T, at_tx_us=T, budget_tokens=budget,
                         model=model, allow_ungrounded=False, explain=True,
                         max_frac_per_source=1.0, dedup_overlap=0.5)


def _plan(store: Store, counter: TokenAccounting | None, requested: int,
          model: str = MODEL) -> EvidencePlan:
    planner = EvidencePlanner(store, index=None, embedder=None, config=SelectionSettings(),
                              counter=counter)
    return planner.plan(_query(model, requested)).plan


def _pool_tokens(plan: EvidencePlan) -> list[int]:
    return [e.candidate.tokens for e in plan.explanations]


class CharsOver4:
    """The common shortcut this project refuses: a quarter token per character."""

    def count(self, model: str, text: str) -> int | None:
        return math.ceil(len(text) / 4)

    def context_window(self, model: str) -> int | None:
        return 512

    def tokenizer_of(self, model: str) -> str | None:
        return "chars-over-4"


def _cjk_spans(n: int, length: int) -> list[str]:
    return [
        "".join(IDEOGRAPHS[(i * 7 + j) % len(IDEOGRAPHS)] for j in range(length))
        for i in range(n)
    ]


def test_cjk_budget_holds_with_exact_counts_and_breaks_with_chars_over_four(
    tmp_path: Path,
) -> None:
    exact = default_counter()
    texts = _cjk_spans(12, 40)
    truth: dict[str, int] = {}
    for text in texts:
        n = exact.count(MODEL, text)
        assert n is not None
        truth[text] = n
    assert set(truth.values()) == {40}  # one token per ideograph, counted by the tokenizer

    store = _store(tmp_path, texts)
    plan = _plan(store, exact, requested=200)
    assert _pool_tokens(plan) == [40] * 12
    assert plan.budget == 200  # min(200, 512 // 2): the ceiling does not bind here
    assert plan.used == 200
    assert plan.used <= plan.budget
    assert len(plan.spans) == 5
    assert sum(truth[s.text] for s in plan.spans) == plan.used
    assert plan.stats.token_estimate is False

    quarter = CharsOver4()
    plan4 = _plan(store, quarter, requested=200)
    assert _pool_tokens(plan4) == [10] * 12
    assert plan4.budget == 200
    assert plan4.used == 120 <= plan4.budget  # the plan believes it fits...
    actual = sum(truth[s.text] for s in plan4.spans)
    assert len(plan4.spans) == 12
    assert actual == 480 > plan4.budget  # ...but the model would see 2.4x the budget


def test_estimator_keeps_the_same_cjk_pool_within_budget(tmp_path: Path) -> None:
    texts = _cjk_spans(12, 40)
    assert all(estimate_tokens(t) == 40 for t in texts)
    plan = _plan(_store(tmp_path, texts), None, requested=200)
    assert plan.budget == 180 and plan.used == 160 and len(plan.spans) == 4
    assert plan.stats.token_estimate is True


def test_context_window_ceiling_applies_to_exact_plans(tmp_path: Path) -> None:
    plan = _plan(_store(tmp_path, _cjk_spans(12, 40)), default_counter(), requested=6000)
    assert plan.budget == 256  # min(6000, 512 // 2), no estimate factor
    assert plan.used == 240 and len(plan.spans) == 6
    assert plan.stats.token_estimate is False


class _Partial:
    """Exact for ideographs only; leaves everything else to the estimator."""

    def count(self, model: str, text: str) -> int | None:
        return len(text) if all(c in IDEOGRAPHS for c in text) else None

    def context_window(self, model: str) -> int | None:
        return None

    def tokenizer_of(self, model: str) -> str | None:
        return "ideographs"


def test_one_estimated_span_puts_the_whole_plan_in_estimate_mode(tmp_path: Path) -> None:
    store = _store(tmp_path, [*_cjk_spans(3, 10), "plain ASCII text, estimated"])
    plan = _plan(store, _Partial(), requested=100)
    assert sorted(_pool_tokens(plan)) == [8, 10, 10, 10]
    assert plan.budget == 90
    assert plan.stats.token_estimate is True


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
    model: str, requested: int, budget: int, estimated: bool, tmp_path: Path
) -> None:
    base = default_counter().registry.models
    registry = ModelRegistry(models={
        "minilm-l6": base["minilm-l6"],
        "gpt-4": ModelSpec(name="gpt-4", context_window=8192,
                           tokenizer=TiktokenTokenizer(encoding="cl100k_base")),
        "window-only": ModelSpec(name="window-only", context_window=1000, tokenizer=None),
    })
    plan = _plan(_store(tmp_path, _cjk_spans(12, 40)), RegistryCounter(registry), requested,
                 model=model)
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
