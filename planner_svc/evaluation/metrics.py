"""Quality and abstention metrics of plans against evaluation questions (pure: no I/O).

A plan covers a gold article when at least one selected span comes from that article's source;
it contains the answer when the answer string occurs inside the text of one selected span. A
plan is *declined* when the server refused it for insufficient evidence or it has no span at
all. For an ``unanswerable`` question declining is right; for any other type it is wrong.

Aggregates are shares in [0, 1] rounded to 4 decimals, per question type present:
``goldCoverage`` (mean share of gold articles covered), ``allGold`` (share with every gold
article covered), ``answerInPlan`` and ``declined`` for the answerable types; ``declined`` alone
for ``unanswerable``; and an ``answerable`` row with the share of all answerable questions
declined (wrongly).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from planner_svc.evaluation.questions import ANSWERABLE_TYPES, QUESTION_TYPES, Question

QUALITY_METRICS = ("goldCoverage", "allGold", "answerInPlan")
"""Metrics where higher is better, judged against the baselines (answerable types only)."""

ANSWERABLE_ROW = "answerable"
"""Aggregate row over every answerable question (its ``declined`` is the wrongly declined share)."""

Aggregate = dict[str, dict[str, float | int]]
"""Per row (a question type or :data:`ANSWERABLE_ROW`): metric name -> value (``n`` an int)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcome:
    """How one plan did on one question.

    Attributes:
        question: the question.
        covered: gold titles with a selected span, in the question's gold order.
        answer_in_plan: the answer string occurs in a selected span's text (False when the
            question has no answer).
        used: tokens the plan spends.
        declined: the plan was refused for insufficient evidence or has no span.
    """

    question: Question
    covered: tuple[str, ...]
    answer_in_plan: bool
    used: int
    declined: bool

    @property
    def gold_coverage(self) -> float:
        """Share of gold articles with a selected span (0.0 for a question with no gold)."""
        return len(self.covered) / len(self.question.gold) if self.question.gold else 0.0

    @property
    def all_gold(self) -> bool:
        """Every gold article covered."""
        return len(self.covered) == len(self.question.gold)


def score(question: Question, titles: Sequence[str], texts: Sequence[str], used: int) -> Outcome:
    """The outcome of a plan given its spans' source titles and texts (parallel sequences,
    one entry per span). A plan with no span is declined."""
    present = set(titles)
    covered = tuple(t for t in question.gold if t in present)
    answer = question.answer
    in_plan = answer is not None and any(answer in text for text in texts)
    return Outcome(question=question, covered=covered, answer_in_plan=in_plan, used=used,
                   declined=not titles)


def declined(question: Question) -> Outcome:
    """The outcome of a plan the server refused for insufficient evidence."""
    return Outcome(question=question, covered=(), answer_in_plan=False, used=0, declined=True)


def _share(flags: Iterable[bool | float], n: int) -> float:
    return round(sum(flags) / n, 4)


def aggregate(outcomes: Iterable[Outcome]) -> Aggregate:
    """Per question type present (in :data:`QUESTION_TYPES` order), then the
    :data:`ANSWERABLE_ROW` when any answerable question is present; see the module docstring
    for the metrics of each row."""
    by_type: dict[str, list[Outcome]] = {t: [] for t in QUESTION_TYPES}
    for outcome in outcomes:
        by_type[outcome.question.type].append(outcome)
    result: Aggregate = {}
    for qtype, items in by_type.items():
        n = len(items)
        if not n:
            continue
        row: dict[str, float | int] = {"n": n}
        if qtype in ANSWERABLE_TYPES:
            row["goldCoverage"] = _share((o.gold_coverage for o in items), n)
            row["allGold"] = _share((o.all_gold for o in items), n)
            row["answerInPlan"] = _share((o.answer_in_plan for o in items), n)
        row["declined"] = _share((o.declined for o in items), n)
        result[qtype] = row
    answerable = [o for t in ANSWERABLE_TYPES for o in by_type[t]]
    if answerable:
        result[ANSWERABLE_ROW] = {
            "n": len(answerable),
            "declined": _share((o.declined for o in answerable), len(answerable)),
        }
    return result


def judge(planner: Aggregate, baselines: Mapping[str, Aggregate]) -> dict[str, dict[str, Any]]:
    """The planner against the stronger baseline, per answerable type and quality metric.

    Args:
        planner: the planner's :func:`aggregate`.
        baselines: baseline name -> its :func:`aggregate` over the same questions (non-empty).

    Returns:
        type -> metric -> ``{"stronger": [names], "baseline": value, "planner": value,
        "atOrAbove": bool}``, where ``stronger`` lists every baseline with the highest value
        (several on a tie, in ``baselines`` order). Types absent from ``planner`` are absent.
    """
    if not baselines:
        raise ValueError("judge needs at least one baseline")
    verdicts: dict[str, dict[str, Any]] = {}
    for qtype in ANSWERABLE_TYPES:
        if qtype not in planner:
            continue
        per_metric: dict[str, Any] = {}
        for metric in QUALITY_METRICS:
            values = {name: agg[qtype][metric] for name, agg in baselines.items()}
            best = max(values.values())
            mine = planner[qtype][metric]
            per_metric[metric] = {
                "stronger": [name for name, v in values.items() if v == best],
                "baseline": best,
                "planner": mine,
                "atOrAbove": mine >= best,
            }
        verdicts[qtype] = per_metric
    return verdicts
