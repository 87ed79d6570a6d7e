"""Plan quality and abstention metrics: scoring, declines, aggregates, the stronger baseline."""

from __future__ import annotations

from planner_svc.evaluation.metrics import aggregate, declined, judge, score
from planner_svc.evaluation.questions import Question


def q(qid: str, qtype: str, gold: tuple[str, ...] = ("A",), answer: str | None = "42") -> Question:
    return Question(id=qid, type=qtype, question=f"question {qid}?", gold=gold,
                    answer=None if qtype == "unanswerable" else answer)


def test_score_covers_gold_finds_the_answer_and_counts_an_empty_plan_as_declined() -> None:
    question = q("m1", "multi", gold=("A", "B"))
    outcome = score(question, ["B", "C", "B"], ["no", "it is 42 years"], used=90)
    assert (outcome.covered, outcome.answer_in_plan, outcome.used, outcome.declined) == (
        ("B",), True, 90, False)
    assert (outcome.gold_coverage, outcome.all_gold) == (0.5, False)
    empty = score(question, [], [], used=0)
    assert (empty.covered, empty.answer_in_plan, empty.declined) == ((), False, True)
    refused = declined(question)
    assert (refused.covered, refused.answer_in_plan, refused.used, refused.declined) == (
        (), False, 0, True)


def test_an_unanswerable_question_never_has_its_answer_in_the_plan() -> None:
    outcome = score(q("u1", "unanswerable", gold=()), ["A"], ["None of this"], used=5)
    assert (outcome.answer_in_plan, outcome.declined, outcome.gold_coverage) == (
        False, False, 0.0)


def test_aggregate_reports_declined_shares_per_type_and_over_answerable() -> None:
    outcomes = [
        score(q("s1", "single"), ["A"], ["42"], 10),
        score(q("s2", "single"), ["B"], ["x"], 10),
        declined(q("s3", "single")),
        score(q("c1", "compare", gold=("A", "B")), ["A", "B"], ["x"], 20),
        declined(q("u1", "unanswerable", gold=())),
        declined(q("u2", "unanswerable", gold=())),
        score(q("u3", "unanswerable", gold=()), [], [], 0),
        score(q("u4", "unanswerable", gold=()), ["Z"], ["z"], 7),
    ]
    assert aggregate(outcomes) == {
        "single": {"n": 3, "goldCoverage": 0.3333, "allGold": 0.3333, "answerInPlan": 0.3333,
                   "declined": 0.3333},
        "compare": {"n": 1, "goldCoverage": 1.0, "allGold": 1.0, "answerInPlan": 0.0,
                    "declined": 0.0},
        "answerable": {"n": 4, "declined": 0.25},
        "unanswerable": {"n": 4, "declined": 0.75},
    }


def test_aggregate_without_unanswerable_or_answerable_questions() -> None:
    assert aggregate([score(q("m1", "multi"), ["A"], ["42"], 3)]) == {
        "multi": {"n": 1, "goldCoverage": 1.0, "allGold": 1.0, "answerInPlan": 1.0,
                  "declined": 0.0},
        "answerable": {"n": 1, "declined": 0.0},
    }
    assert aggregate([declined(q("u1", "unanswerable", gold=()))]) == {
        "unanswerable": {"n": 1, "declined": 1.0},
    }
    assert aggregate([]) == {}


def test_judge_names_the_stronger_baseline_per_type_and_metric() -> None:
    def row(cov: float, all_gold: float, answer: float) -> dict[str, float | int]:
        return {"n": 10, "goldCoverage": cov, "allGold": all_gold, "answerInPlan": answer,
                "declined": 0.0}

    planner = {"single": row(0.9, 0.8, 0.7), "unanswerable": {"n": 5, "declined": 0.4}}
    cosine = {"single": row(0.95, 0.6, 0.7), "unanswerable": {"n": 5, "declined": 0.0}}
    bm25 = {"single": row(0.9, 0.9, 0.7), "unanswerable": {"n": 5, "declined": 0.0}}
    verdicts = judge(planner, {"cosineBaseline": cosine, "bm25Baseline": bm25})
    assert verdicts == {
        "single": {
            "goldCoverage": {"stronger": ["cosineBaseline"], "baseline": 0.95, "planner": 0.9,
                             "atOrAbove": False},
            "allGold": {"stronger": ["bm25Baseline"], "baseline": 0.9, "planner": 0.8,
                        "atOrAbove": False},
            "answerInPlan": {"stronger": ["cosineBaseline", "bm25Baseline"], "baseline": 0.7,
                             "planner": 0.7, "atOrAbove": True},
        },
    }
