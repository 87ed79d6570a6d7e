"""Digest: IDs, dedupe, completion, concurrency and the bounded serialized form."""

from __future__ import annotations

import dataclasses
import sys
import threading

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.research.digest import (
    DEFAULT_DIGEST_CHARS,
    MIN_DIGEST_CHARS,
    Digest,
    normalize_text,
    render_digest,
)

QUESTION = "What caused the 2021 regional power outage and how was it resolved?"


def test_ids_are_assigned_by_the_digest_and_never_collide_across_rounds() -> None:
    d = Digest(QUESTION)
    first = d.add_questions(["What caused it?", "Who was affected?"])
    second = d.add_questions(["How was it resolved?", "What did regulators say?"])
    assert [q.id for q in first] == ["q1", "q2"]
    assert [q.id for q in second] == ["q3", "q4"]
    assert [q.id for q in d.questions()] == ["q1", "q2", "q3", "q4"]


def test_dedupe_is_by_normalized_text_and_only_new_questions_are_returned() -> None:
    d = Digest(QUESTION)
    d.add_questions(["What caused it?"])
    added = d.add_questions(
        ["  WHAT caused   it ", "What caused it.", "Who was affected?", "who was affected", ""]
    )
    assert [(q.id, q.text) for q in added] == [("q2", "Who was affected?")]
    assert len(d.questions()) == 2
    assert normalize_text("  Ｗhat  CAUSED it?! ") == "what caused it"


def test_complete_is_false_without_questions_and_true_when_all_answered() -> None:
    d = Digest(QUESTION)
    assert d.complete() is False
    d.add_questions(["A?", "B?"])
    assert d.mark_answered("q1") is True
    assert d.complete() is False
    assert [q.id for q in d.open()] == ["q2"]
    assert d.mark_answered("q2") is True
    assert d.complete() is True
    assert d.mark_answered("q9") is False


def test_counts_and_dead_ends_are_collapsed_by_cause_with_the_first_example() -> None:
    d = Digest(QUESTION)
    d.add_questions(["A?"])
    d.record_lead("q1")
    d.record_lead("q1")
    d.record_claims("q1", 3)
    d.record_dead_end("bot_block", "site:example.org outage")
    d.record_dead_end("bot_block", "another query")
    d.record_dead_end("no_results", "grid outage 2021")
    view = d.snapshot()
    assert (view.leads_run, view.claims_found, view.dead_end_total) == (2, 3, 3)
    assert [(e.cause, e.count, e.example) for e in view.dead_ends] == [
        ("bot_block", 2, "site:example.org outage"),
        ("no_results", 1, "grid outage 2021"),
    ]
    assert view.questions[0].leads == 2 and view.questions[0].claims == 3
    with pytest.raises(KeyError, match="q7"):
        d.record_lead("q7")
    with pytest.raises(ValueError, match="cause"):
        d.record_dead_end("  ", "x")


def test_render_layout_and_budget_omitted_when_unset() -> None:
    d = Digest(QUESTION)
    d.add_questions(["What caused it?", "How was it resolved?"])
    d.record_lead("q1")
    d.record_claims("q1", 4)
    d.mark_answered("q1")
    d.set_contradictions(1)
    text = d.render()
    assert text.splitlines()[0] == f"QUESTION: {QUESTION}"
    assert text.splitlines()[1] == (
        "TOTALS: sub_questions=2 open=1 leads_run=1 claims_found=4 dead_ends=0 contradictions=1"
    )
    assert "- q2 leads=0 claims=0: How was it resolved?" in text
    assert "- q1 leads=1 claims=4: What caused it?" in text
    assert "budget_remaining" not in text
    d.set_budget_remaining(0.4)
    assert "budget_remaining=0.40" in d.render().splitlines()[1]
    d.set_budget_remaining(None)
    assert "budget_remaining" not in d.render()


def test_flood_of_1000_dead_ends_stays_under_the_bound_and_keeps_question_and_totals() -> None:
    d = Digest(QUESTION)
    d.add_questions([f"Sub-question number {i} about the outage timeline?" for i in range(40)])
    for i in range(1000):
        d.record_dead_end(f"cause_{i % 250:03d}", f"a fairly long example search query {i} " * 4)
    text = d.render()
    assert len(text) <= DEFAULT_DIGEST_CHARS
    assert text.startswith(f"QUESTION: {QUESTION}\n")
    assert "dead_ends=1000" in text
    assert "sub_questions=40 open=40" in text
    # Open sub-questions keep their wording; dead-end detail is what was compacted.
    assert "Sub-question number 39 about the outage timeline?" in text
    assert "not listed" in text


def test_single_cause_flood_collapses_to_one_line() -> None:
    d = Digest(QUESTION)
    for i in range(1000):
        d.record_dead_end("bot_block", f"query {i}")
    text = d.render()
    assert '- bot_block x1000, e.g. "query 0"' in text
    assert text.count("bot_block") == 1


def test_compaction_drops_dead_end_examples_before_open_question_wording() -> None:
    d = Digest(QUESTION, max_chars=1500)
    d.add_questions(["Which substations tripped first during the event?"])
    for i in range(12):
        d.record_dead_end(f"cause_{i:02d}", "x" * 150)
    full = render_digest(dataclasses.replace(d.snapshot(), max_chars=10**6))
    assert len(full) > 1500
    text = d.render()
    assert len(text) <= 1500
    assert "Which substations tripped first during the event?" in text
    assert "x" * 150 not in text


@pytest.mark.parametrize("max_chars", [MIN_DIGEST_CHARS, 700, 1000, 2500, DEFAULT_DIGEST_CHARS])
def test_every_bound_holds_even_at_the_coarsest_level(max_chars: int) -> None:
    question = "Q" * (max_chars - 400)
    d = Digest(question, max_chars=max_chars)
    d.add_questions([f"open question {i} " + "w" * 200 for i in range(300)])
    for i in range(0, 300, 2):
        d.mark_answered(f"q{i + 1}")
    for i in range(500):
        d.record_dead_end(f"c{i}", "e" * 300)
    d.set_budget_remaining(0.5)
    text = d.render()
    assert len(text) <= max_chars
    assert text.startswith(f"QUESTION: {question}\n")
    assert "TOTALS: sub_questions=300 open=150" in text


def test_constructor_validates_bound_and_question() -> None:
    with pytest.raises(ConfigError) as small:
        Digest(QUESTION, max_chars=MIN_DIGEST_CHARS - 1)
    assert small.value.field == "max_chars"
    with pytest.raises(ConfigError) as long_q:
        Digest("x" * 700, max_chars=1000)
    assert long_q.value.field == "question"
    with pytest.raises(ConfigError):
        Digest("   ")


def test_concurrent_recording_loses_no_update() -> None:
    d = Digest(QUESTION)
    ids = [q.id for q in d.add_questions([f"Q{i}?" for i in range(8)])]
    per_thread = 400
    barrier = threading.Barrier(8)

    def worker(t: int) -> None:
        barrier.wait()
        for i in range(per_thread):
            qid = ids[(t + i) % len(ids)]
            d.record_lead(qid)
            d.record_claims(qid, 1)
            d.record_dead_end(f"cause_{i % 5}", f"q{t}-{i}")

    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        threads = [threading.Thread(target=worker, args=(t,)) for t in range(8)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
    finally:
        sys.setswitchinterval(old)
    view = d.snapshot()
    total = 8 * per_thread
    assert view.leads_run == total
    assert view.claims_found == total
    assert view.dead_end_total == total
    assert sum(q.leads for q in view.questions) == total
    assert sum(q.claims for q in view.questions) == total
    assert sum(e.count for e in view.dead_ends) == total
    assert [e.count for e in view.dead_ends] == [total // 5] * 5
