"""ResearchPlanner: bounds, replan cadence, depth cap semantics, answered handling, lead
assignment."""

from __future__ import annotations

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.research.digest import Digest
from planner_svc.research.leads import leads_across
from planner_svc.research.planner import DEPTH_NONE, ResearchCaps, ResearchPlanner
from planner_svc.research.provider import ProviderAnswer, parse_answer
from planner_svc.research.testing import ScriptedProvider

QUESTION = "How did the 2021 outage start and who restored power?"


def test_settings_defaults_and_depth_encoding() -> None:
    s = ResearchCaps()
    assert (s.max_initial_leads, s.max_new_leads, s.replan_every) == (4, 3, 3)
    assert (s.max_depth, s.follow_up_rounds, s.resolved_max_depth) == (0, 2, 2)
    none = ResearchCaps(max_depth=DEPTH_NONE)
    assert (none.follow_up_rounds, none.resolved_max_depth) == (0, -1)
    one = ResearchCaps(max_depth=1)
    assert (one.follow_up_rounds, one.resolved_max_depth) == (1, 1)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("max_initial_leads", 0),
        ("max_initial_leads", 17),
        ("max_new_leads", 0),
        ("replan_every", 0),
        ("replan_every", 101),
        ("max_depth", -2),
        ("max_depth", 9),
    ],
)
def test_settings_out_of_range_name_the_field(field: str, value: int) -> None:
    with pytest.raises(ConfigError) as err:
        ResearchCaps(**{field: value})
    assert err.value.field == field
    assert str(value) in err.value.reason


def test_should_replan_every_k_exactly_at_the_boundary_or_when_the_queue_drains() -> None:
    p = ResearchPlanner(ScriptedProvider(), ResearchCaps(replan_every=3))
    assert p.should_replan(2, False) is False
    assert p.should_replan(3, False) is True
    assert p.should_replan(4, False) is True
    assert p.should_replan(0, True) is True
    assert p.should_replan(1, True) is True


def test_depth_zero_means_default_and_minus_one_means_no_follow_up() -> None:
    default = ResearchPlanner(ScriptedProvider(), ResearchCaps(max_depth=0))
    assert [default.depth_exhausted(d) for d in range(4)] == [False, False, True, True]
    none = ResearchPlanner(ScriptedProvider(), ResearchCaps(max_depth=-1))
    assert none.depth_exhausted(0) is True
    assert "max_depth=-1" in none.depth_cap_reason()
    assert "2 follow-up round(s)" in default.depth_cap_reason()


def test_depth_capped_replan_makes_no_model_call() -> None:
    provider = ScriptedProvider()
    p = ResearchPlanner(provider, ResearchCaps(max_depth=-1))
    d = Digest(QUESTION)
    d.add_questions(["A?"])
    plan = p.replan(d, depth=0)
    assert plan.depth_capped is True
    assert plan.model_called is False
    assert provider.calls == 0
    assert "max_depth=-1" in plan.rationale


def test_initial_decomposition_is_bounded_by_max_initial_leads() -> None:
    many = ProviderAnswer(questions=tuple(f"Sub-question {i}?" for i in range(10)))
    p = ResearchPlanner(ScriptedProvider([many]), ResearchCaps(max_initial_leads=4))
    d = Digest(QUESTION)
    plan = p.initial(d)
    assert [q.id for q in plan.questions] == ["q1", "q2", "q3", "q4"]
    assert len(d.questions()) == 4


def test_initial_bound_counts_distinct_questions_after_dedupe() -> None:
    answer = ProviderAnswer(questions=("A?", "a", "B?", "b.", "C?"))
    p = ResearchPlanner(ScriptedProvider([answer]), ResearchCaps(max_initial_leads=3))
    plan = p.initial(Digest(QUESTION))
    assert [q.text for q in plan.questions] == ["A?", "B?", "C?"]


def test_initial_falls_back_to_the_question_itself() -> None:
    p = ResearchPlanner(ScriptedProvider([ProviderAnswer()]))
    plan = p.initial(Digest(QUESTION))
    assert [(q.id, q.text) for q in plan.questions] == [("q1", QUESTION)]


def test_replan_is_bounded_by_max_new_leads() -> None:
    answers = [
        ProviderAnswer(questions=("A?",)),
        ProviderAnswer(questions=tuple(f"Follow-up {i}?" for i in range(7))),
    ]
    p = ResearchPlanner(ScriptedProvider(answers), ResearchCaps(max_new_leads=3))
    d = Digest(QUESTION)
    p.initial(d)
    plan = p.replan(d, depth=0)
    assert [q.id for q in plan.questions] == ["q2", "q3", "q4"]


def test_colliding_model_ids_across_rounds_open_new_questions() -> None:
    # Both rounds number their proposals from q1, as a model does per batch.
    round1 = parse_answer(
        {"sub_questions": [{"id": "q1", "text": "What tripped first?"}, {"id": "q2", "text": "B?"}]}
    )
    round2 = parse_answer(
        {"sub_questions": [{"id": "q1", "text": "Who restored power?"}], "answered": ["q1"]}
    )
    p = ResearchPlanner(ScriptedProvider([round1, round2]))
    d = Digest(QUESTION)
    first = p.initial(d)
    second = p.replan(d, depth=0)
    assert [(q.id, q.text) for q in first.questions] == [
        ("q1", "What tripped first?"),
        ("q2", "B?"),
    ]
    assert [(q.id, q.text) for q in second.questions] == [("q3", "Who restored power?")]
    leads = leads_across("s", ["web"], second.questions, depth=1, first_ordinal=3)
    assert [lead.question_id for lead in leads] == ["q3"]
    # The caller applies the answered list; the new question stays open.
    for qid in second.answered:
        d.mark_answered(qid)
    assert [q.id for q in d.open()] == ["q2", "q3"]
    assert "q3 leads=0 claims=0: Who restored power?" in d.render()


def test_answered_is_returned_not_applied_and_filtered_to_open_ids() -> None:
    answers = [
        ProviderAnswer(questions=("A?", "B?", "C?")),
        ProviderAnswer(answered=("q2", "q9", "q2", "q1"), rationale="r"),
    ]
    p = ResearchPlanner(ScriptedProvider(answers))
    d = Digest(QUESTION)
    p.initial(d)
    d.mark_answered("q1")
    plan = p.replan(d, depth=0)
    assert plan.answered == ("q2",)
    assert [q.answered for q in d.questions()] == [True, False, False]


def test_replan_request_carries_only_the_question_and_the_digest() -> None:
    provider = ScriptedProvider([ProviderAnswer(questions=("A?",))])
    p = ResearchPlanner(provider)
    d = Digest(QUESTION)
    p.initial(d)
    d.record_lead("q1")
    d.record_dead_end("bot_block", "site:example.org outage")
    d.set_contradictions(2)
    p.replan(d, depth=0)
    decompose, replan = provider.requests
    assert decompose.key_fields() == {
        "format": "research-plan/v2",
        "kind": "decompose",
        "question": QUESTION,
        "digest": "",
        "max_questions": 4,
    }
    assert replan.kind == "replan"
    assert replan.digest_text == d.render()
    assert "contradictions=2" in replan.digest_text
    assert "bot_block x1" in replan.digest_text


def test_leads_are_spread_over_actors_round_robin_by_session_position() -> None:
    d = Digest(QUESTION)
    qs = d.add_questions(["A?", "B?", "C?"])
    first = leads_across("s1", ["web", "academic"], qs, depth=0, first_ordinal=1)
    assert [(lead.id, lead.actor) for lead in first] == [
        ("s1-L1", "web"),
        ("s1-L2", "academic"),
        ("s1-L3", "web"),
    ]
    # A round of one lead continues the rotation instead of restarting at the first actor.
    more = d.add_questions(["D?"])
    nxt = leads_across("s1", ["web", "academic"], more, depth=1, first_ordinal=4)
    assert [(lead.id, lead.actor, lead.depth) for lead in nxt] == [("s1-L4", "academic", 1)]
    # Replaying the same inputs assigns the same actors.
    assert leads_across("s1", ["web", "academic"], qs, depth=0, first_ordinal=1) == first
    with pytest.raises(ValueError, match="actors"):
        leads_across("s1", [], qs, depth=0, first_ordinal=1)
