"""Sessions that converge: duplicates recorded, the no-progress stop, proposals accounted for,
and resolved settings."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from planner_svc.research.digest import Digest, render_digest
from planner_svc.research.duplicates import DuplicateRule
from planner_svc.research.planner import ResearchCaps
from planner_svc.research.provider import ProviderAnswer
from planner_svc.research.session import (
    FinalUpdate,
    InitialUpdate,
    LeadReport,
    ReplanUpdate,
    ResearchSession,
    SessionStart,
    StopReason,
    Update,
)
from planner_svc.research.testing import FakeEvidence, ScriptedProvider

QUESTION = "What is a Merkle tree and who invented it?"
MERKLE = ("What is a Merkle tree?", "Define Merkle tree", "Merkle tree — definition?",
          "Ｗｈａｔ　ｉｓ　ａ　Ｍｅｒｋｌｅ　ｔｒｅｅ？")


# --- the digest --------------------------------------------------------------------------------


def test_admit_refuses_repeats_of_every_round_and_cuts_past_the_cap() -> None:
    d = Digest(QUESTION)
    first = d.admit([*MERKLE, "Who invented the Merkle tree?", "How do Merkle proofs work?"],
                    cap=2, round=0)
    assert [(q.id, q.text) for q in first.admitted] == [
        ("q1", "What is a Merkle tree?"), ("q2", "Who invented the Merkle tree?")]
    assert [(x.text, x.of, x.rule, x.round) for x in first.duplicates] == [
        ("Define Merkle tree", "q1", DuplicateRule.SIMILAR_MEANING, 0),
        ("Merkle tree — definition?", "q1", DuplicateRule.SIMILAR_MEANING, 0),
        # recorded with its whitespace collapsed, as every proposal
        ("Ｗｈａｔ ｉｓ ａ Ｍｅｒｋｌｅ ｔｒｅｅ？", "q1", DuplicateRule.SAME_WORDS, 0),
    ]
    assert (first.cut, first.cap) == (("How do Merkle proofs work?",), 2)
    # A later round is screened against every earlier sub-question; past the cap a repeat is
    # still a repeat, not a cut.
    second = d.admit(["who INVENTED the merkle tree", "How do Merkle proofs work?",
                      "Merkle tree: what is it?", "  ?!  "], cap=1, round=3)
    assert [q.id for q in second.admitted] == ["q3"]
    assert [(x.of, x.rule, x.round) for x in second.duplicates] == [
        ("q2", DuplicateRule.SAME_WORDS, 3), ("q1", DuplicateRule.SIMILAR_MEANING, 3)]
    assert second.cut == ()
    view = d.snapshot()
    assert [x.of for x in view.duplicates] == ["q1", "q1", "q1", "q2", "q1"]
    text = render_digest(view)
    assert "REFUSED AS DUPLICATES (do not propose again):" in text
    assert '- "Define Merkle tree" repeats q1' in text


def test_dead_ends_count_on_their_sub_question_and_refusals_compact_under_the_bound() -> None:
    d = Digest(QUESTION, max_chars=900)
    d.admit(["What is a Merkle tree?"], cap=None, round=0)
    d.record_lead("q1")
    d.record_dead_end("no_results", "merkle tree", question_id="q1")
    assert d.get("q1").dead_ends == 1
    assert "- q1 leads=1 claims=0 dead_ends=1: What is a Merkle tree?" in d.render()
    for i in range(40):
        d.admit([f"Define Merkle tree {'please ' * (i % 3)}"], cap=None, round=i)
    text = d.render()
    assert len(text) <= 900
    assert "REFUSED AS DUPLICATES:" in text and "not listed" in text
    with pytest.raises(KeyError):
        d.record_dead_end("no_results", "x", question_id="q9")


# --- the session ------------------------------------------------------------------------------


def session_with(answers: Sequence[ProviderAnswer], **caps: int
                 ) -> tuple[ResearchSession, ScriptedProvider, InitialUpdate]:
    provider = ScriptedProvider(answers)
    start = SessionStart(question=QUESTION, actors=("web",), caps=ResearchCaps(**caps),
                         session_id="s1", at_valid_us=1, at_tx_us=1)
    session = ResearchSession(start, provider=provider, evidence=FakeEvidence())
    (init,) = session.begin()
    assert isinstance(init, InitialUpdate)
    return session, provider, init


def final_of(updates: list[Update]) -> FinalUpdate:
    assert updates and isinstance(updates[-1], FinalUpdate), updates
    return updates[-1]


def test_a_round_of_repeats_waits_for_outstanding_leads_then_stops_without_a_call() -> None:
    session, provider, init = session_with(
        [ProviderAnswer(questions=("What is a Merkle tree?", "Who invented the Merkle tree?")),
         ProviderAnswer(questions=MERKLE[1:])],  # replan 1: paraphrases only
        replan_every=1, max_depth=8,
    )
    assert [q.id for q in init.proposals.admitted] == ["q1", "q2"]
    (replan,) = session.handle(LeadReport(lead_id="s1-L1", claims=2))
    assert isinstance(replan, ReplanUpdate)
    assert replan.questions == () and replan.leads == ()
    assert [x.of for x in replan.proposals.duplicates] == ["q1", "q1", "q1"]
    assert provider.calls == 2
    # The last round admitted nothing; a dead end is no claim: no call, and the session ends
    # once no lead is left to report one.
    final = final_of(session.handle(LeadReport(lead_id="s1-L2", dead_end_cause="no_results")))
    assert final.reason is StopReason.NO_PROGRESS
    assert final.detail == "round 1 admitted no new sub-question and no claim was reported after it"
    assert (provider.calls, final.model_calls, final.rounds) == (2, 2, 1)
    assert final.proposals is None
    assert [x.text for x in final.duplicates] == [
        "Define Merkle tree", "Merkle tree — definition?",
        "Ｗｈａｔ ｉｓ ａ Ｍｅｒｋｌｅ ｔｒｅｅ？"]


def test_a_claim_after_an_empty_round_is_progress() -> None:
    session, provider, _ = session_with(
        [ProviderAnswer(questions=("What is a Merkle tree?", "Who invented the Merkle tree?",
                                   "Where are Merkle trees used?")),
         ProviderAnswer(questions=("Define Merkle tree",)),
         ProviderAnswer(questions=("How do Merkle proofs work?",))],
        replan_every=1, max_depth=8,
    )
    session.handle(LeadReport(lead_id="s1-L1", claims=1))  # round 1: a repeat, nothing admitted
    assert session.handle(LeadReport(lead_id="s1-L2", dead_end_cause="x")) == []  # no call
    assert provider.calls == 2
    (replan,) = session.handle(LeadReport(lead_id="s1-L3", claims=3))  # a claim: call again
    assert isinstance(replan, ReplanUpdate)
    assert [p.question.text for p in replan.questions] == ["How do Merkle proofs work?"]
    assert provider.calls == 3


def test_repeats_with_nothing_outstanding_stop_at_once_and_nothing_proposed_is_done() -> None:
    session, provider, _ = session_with(
        [ProviderAnswer(questions=("What is a Merkle tree?",)),
         ProviderAnswer(questions=("Define Merkle tree", "New?", "Newer?"))],
        max_new_leads=1,
    )
    assert provider.calls == 1
    ended, _, _ = session_with(
        [ProviderAnswer(questions=("What is a Merkle tree?",)),
         ProviderAnswer(questions=("Merkle tree — definition?",))])
    final = final_of(ended.handle(LeadReport(lead_id="s1-L1", claims=1)))
    assert final.reason is StopReason.NO_PROGRESS
    assert final.detail == ("round 1 proposed only repeats (1 refused as duplicates) and no lead "
                            "is outstanding")
    assert final.proposals is not None and final.proposals.duplicates[0].of == "q1"
    quiet, _, _ = session_with([ProviderAnswer(questions=("What is a Merkle tree?",))])
    done = final_of(quiet.handle(LeadReport(lead_id="s1-L1", claims=1)))
    assert done.reason is StopReason.DONE
    assert done.detail == "nothing new to research and no lead outstanding"
    # The cap: one admitted, the rest reported as cut (a repeat stays a repeat).
    (replan,) = session.handle(LeadReport(lead_id="s1-L1", claims=1))
    assert isinstance(replan, ReplanUpdate)
    assert [q.question.text for q in replan.questions] == ["New?"]
    assert (replan.proposals.cut, replan.proposals.cap) == (("Newer?",), 1)
    assert [x.text for x in replan.proposals.duplicates] == ["Define Merkle tree"]


def test_the_initial_update_resolves_the_budget_and_the_screen() -> None:
    _, _, init = session_with([ProviderAnswer(questions=("A?",))])
    assert (init.budget.requested_tokens, init.budget.default_applied) == (100, True)
    assert init.duplicates.threshold == 0.8 and init.duplicates.embedder_name == ""
