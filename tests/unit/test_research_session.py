"""ResearchSession: the stream protocol without gRPC (stop reasons, events, replay)."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from planner_svc.core.errors import InsufficientEvidence, InvalidRequest
from planner_svc.core.model import EvidencePlan
from planner_svc.research.offline import OfflineProvider
from planner_svc.research.planner import ResearchCaps
from planner_svc.research.provider import Cancelled, ProviderAnswer, ResearchProvider
from planner_svc.research.session import (
    BudgetReport,
    ContradictionsReport,
    Event,
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
from planner_svc.server.convert import research as wire

QUESTION = "What caused the 2021 outage and how was it fixed? Who reported it first?"


def make(
    *,
    provider: ResearchProvider | None = None,
    evidence: FakeEvidence | None = None,
    actors: tuple[str, ...] = ("web", "academic"),
    **caps: int,
) -> tuple[ResearchSession, FakeEvidence]:
    evidence = evidence or FakeEvidence()
    start = SessionStart(
        question=QUESTION,
        actors=actors,
        caps=ResearchCaps(**caps),
        at_valid_us=1_600_000_000_000_000,
        budget_tokens=300,
        session_id="s1",
    )
    return ResearchSession(start, provider=provider or OfflineProvider(), evidence=evidence), (
        evidence
    )


def initial(session: ResearchSession) -> InitialUpdate:
    (update,) = session.begin()
    assert isinstance(update, InitialUpdate)
    return update


def claims(lead_id: str, n: int = 2) -> LeadReport:
    return LeadReport(lead_id=lead_id, claims=n)


def final_of(updates: list[Update]) -> FinalUpdate:
    assert updates and isinstance(updates[-1], FinalUpdate), updates
    return updates[-1]


def test_initial_plan_decomposes_dispatches_and_plans_evidence() -> None:
    session, evidence = make()
    init = initial(session)
    assert [p.question.text for p in init.questions] == [
        "What caused the 2021 outage?",
        "How was it fixed?",
        "Who reported it first?",
    ]
    assert [(lead.id, lead.question_id, lead.actor) for lead in init.leads] == [
        ("s1-L1", "q1", "web"),
        ("s1-L2", "q2", "academic"),
        ("s1-L3", "q3", "web"),
    ]
    assert all(p.evidence is not None and len(p.evidence.spans) == 2 for p in init.questions)
    assert [p.question.leads for p in init.questions] == [1, 1, 1]
    assert evidence.calls[0] == ("What caused the 2021 outage?", 1_600_000_000_000_000, None, 300)
    assert init.provider == "offline"
    assert session.model_calls == 1


def test_two_actors_both_get_leads_across_the_whole_session() -> None:
    provider = ScriptedProvider(
        [
            ProviderAnswer(questions=("A?", "B?", "C?", "D?")),
            ProviderAnswer(questions=("E?",)),
            ProviderAnswer(questions=("F?",)),
        ]
    )
    session, _ = make(provider=provider, replan_every=4)
    init = initial(session)
    updates: list[Update] = []
    for lead in init.leads:
        updates += session.handle(claims(lead.id))
    (replan,) = updates
    assert isinstance(replan, ReplanUpdate)
    actors = [lead.actor for lead in (*init.leads, *replan.leads)]
    assert actors == ["web", "academic", "web", "academic", "web"]


def test_full_offline_session_ends_done_when_every_sub_question_has_claims() -> None:
    session, _ = make()
    init = initial(session)
    out: list[Update] = []
    for lead in init.leads:
        out += session.handle(claims(lead.id))
    final = final_of(out)
    assert final.reason is StopReason.DONE
    assert (final.model_calls, final.rounds, final.leads_run, final.claims_found) == (2, 1, 3, 6)
    assert all(q.answered for q in final.questions)
    assert session.handle(claims("s1-L1")) == []  # ignored after the end


def test_dead_end_leads_to_a_rephrased_follow_up_lead() -> None:
    evidence = FakeEvidence(spans_for=lambda text: 0 if "fixed" in text else 2)
    session, _ = make(evidence=evidence)
    init = initial(session)
    out: list[Update] = []
    for lead in init.leads:
        n = len(next(p for p in init.questions if p.question.id == lead.question_id).evidence.spans)  # type: ignore[union-attr]
        out += session.handle(
            claims(lead.id, n) if n else LeadReport(lead_id=lead.id, dead_end_cause="no_evidence")
        )
    (replan,) = out
    assert isinstance(replan, ReplanUpdate)
    assert replan.round == 1
    assert replan.answered == ("q1", "q3")
    assert [p.question.text for p in replan.questions] == [
        "Which sources cover fixed caused 2021 outage reported first?"
    ]
    assert [(lead.id, lead.actor, lead.depth) for lead in replan.leads] == [
        ("s1-L4", "academic", 1)
    ]
    assert replan.open_ids == ("q2", "q4")
    assert "no_evidence x1" in session.digest.render()


def run_to_end(session: ResearchSession, init: InitialUpdate, *, dead: bool) -> list[Update]:
    """Report every lead (claims, or dead ends when ``dead``) until the session ends."""
    queue = list(init.leads)
    out: list[Update] = []
    while queue and not session.finished:
        lead = queue.pop(0)
        report = (
            LeadReport(lead_id=lead.id, dead_end_cause="no_results", dead_end_query=lead.query)
            if dead
            else claims(lead.id)
        )
        for update in session.handle(report):
            out.append(update)
            if isinstance(update, ReplanUpdate):
                queue += update.leads
    return out


def test_max_depth_minus_one_stops_after_the_initial_round_with_the_depth_cap() -> None:
    provider = ScriptedProvider([ProviderAnswer(questions=("A?", "B?"))])
    session, _ = make(provider=provider, max_depth=-1)
    final = final_of(run_to_end(session, initial(session), dead=True))
    assert final.reason is StopReason.DEPTH_CAP
    assert "max_depth=-1" in final.detail
    assert (final.model_calls, final.rounds) == (1, 0)
    assert provider.calls == 1


class RotatingProvider:
    """Proposes one new, distinct sub-question per call."""

    def __init__(self) -> None:
        self.calls = 0

    @property
    def name(self) -> str:
        return "rotating"

    def propose(self, request: object, *, cancel: threading.Event | None = None) -> ProviderAnswer:
        self.calls += 1
        return ProviderAnswer(questions=(f"Distinct sub-question {self.calls}?",))


def test_max_depth_zero_means_the_default_two_rounds_not_none() -> None:
    provider = RotatingProvider()
    session, _ = make(provider=provider, max_depth=0, replan_every=1)
    out = run_to_end(session, initial(session), dead=True)
    final = final_of(out)
    assert final.reason is StopReason.DEPTH_CAP
    assert "default" in final.detail
    assert (final.model_calls, final.rounds, provider.calls) == (3, 2, 3)
    assert [u.round for u in out if isinstance(u, ReplanUpdate)] == [1, 2]


def test_depth_cap_waits_for_outstanding_leads_then_reports_the_cap() -> None:
    provider = ScriptedProvider([ProviderAnswer(questions=("A?", "B?", "C?", "D?"))])
    session, _ = make(provider=provider, max_depth=-1, replan_every=2)
    init = initial(session)
    assert session.handle(claims(init.leads[0].id)) == []
    assert session.handle(claims(init.leads[1].id)) == []  # replan due, but capped: wait
    assert session.handle(claims(init.leads[2].id)) == []
    final = final_of(session.handle(claims(init.leads[3].id)))
    assert final.reason is StopReason.DEPTH_CAP
    assert final.outstanding == ()


def test_depth_cap_is_reported_instead_of_an_exhausted_budget() -> None:
    provider = ScriptedProvider([ProviderAnswer(questions=("A?", "B?"))])
    session, _ = make(provider=provider, max_depth=-1)
    init = initial(session)
    session.handle(BudgetReport(remaining_fraction=0.0))
    final = final_of(run_to_end(session, init, dead=True))
    assert final.reason is StopReason.DEPTH_CAP
    assert provider.calls == 1


def test_exhausted_budget_stops_at_the_replan_point_without_a_model_call() -> None:
    provider = ScriptedProvider([ProviderAnswer(questions=("A?", "B?"))])
    session, _ = make(provider=provider)
    init = initial(session)
    session.handle(BudgetReport(remaining_fraction=0.0))
    final = final_of(run_to_end(session, init, dead=True))
    assert final.reason is StopReason.BUDGET
    assert provider.calls == 1
    assert final.model_calls == 1


def test_disputed_questions_are_not_marked_answered() -> None:
    session, _ = make()
    init = initial(session)
    session.handle(ContradictionsReport(live=2))
    out: list[Update] = []
    for lead in init.leads:
        out += session.handle(claims(lead.id))
    (replan,) = out
    assert isinstance(replan, ReplanUpdate)
    assert replan.answered == ()
    assert not session.finished
    assert [p.question.text for p in replan.questions] == [
        "Where do sources disagree on: What caused the 2021 outage and how was it fixed? "
        "Who reported it first?"
    ]
    assert all(not q.answered for q in session.digest.questions())
    # Once the verifier reports the disagreement resolved, the questions close.
    session.handle(ContradictionsReport(live=0))
    final = final_of(session.handle(claims(replan.leads[0].id)))
    assert final.reason is StopReason.DONE
    assert all(q.answered for q in final.questions)


def test_planner_done_ends_the_session_even_with_leads_outstanding() -> None:
    provider = ScriptedProvider(
        [
            ProviderAnswer(questions=("A?", "B?", "C?", "D?")),
            ProviderAnswer(done=True, rationale="enough"),
        ]
    )
    session, _ = make(provider=provider)
    init = initial(session)
    session.handle(claims(init.leads[0].id))
    session.handle(claims(init.leads[1].id))
    final = final_of(session.handle(claims(init.leads[2].id)))
    assert final.reason is StopReason.DONE
    assert final.detail == "planner judged it complete: enough"
    assert final.outstanding == ("s1-L4",)


@pytest.mark.parametrize(
    ("event", "field"),
    [
        (LeadReport(lead_id="s1-L99", claims=1), "lead_result.lead_id"),
        (LeadReport(lead_id="s1-L1", claims=1), "lead_result.lead_id"),  # reported twice
    ],
)
def test_unknown_or_repeated_lead_ids_are_rejected(event: Event, field: str) -> None:
    session, _ = make()
    initial(session)
    session.handle(claims("s1-L1"))
    with pytest.raises(InvalidRequest) as err:
        session.handle(event)
    assert err.value.field == field


@pytest.mark.parametrize(
    ("build", "field"),
    [
        (lambda: LeadReport(lead_id="x", claims=0), "lead_result.claims"),
        (lambda: LeadReport(lead_id="", claims=1), "lead_result.lead_id"),
        (lambda: LeadReport(lead_id="x", dead_end_cause=" "), "lead_result.dead_end.cause"),
        (
            lambda: LeadReport(lead_id="x", dead_end_cause="c", dead_end_query="q" * 501),
            "lead_result.dead_end.query",
        ),
        (lambda: ContradictionsReport(live=-1), "contradictions.live"),
        (lambda: BudgetReport(remaining_fraction=1.5), "budget.remaining_fraction"),
        (lambda: BudgetReport(remaining_fraction=float("nan")), "budget.remaining_fraction"),
        (lambda: SessionStart(question=" ", actors=("web",), session_id="s"), "start.question"),
        (lambda: SessionStart(question="q", actors=(), session_id="s"), "start.actors"),
        (
            lambda: SessionStart(question="q", actors=("web", "Web!"), session_id="s"),
            "start.actors[1]",
        ),
        (
            lambda: SessionStart(question="q", actors=("web", "web"), session_id="s"),
            "start.actors[1]",
        ),
        (
            lambda: SessionStart(question="q", actors=("web",), session_id="s", budget_tokens=0),
            "start.budget_tokens",
        ),
        (lambda: SessionStart(question="q", actors=("web",), session_id="a/b"), "start.session_id"),
    ],
)
def test_malformed_events_name_the_field(build: object, field: str) -> None:
    with pytest.raises(InvalidRequest) as err:
        build()  # type: ignore[operator]
    assert err.value.field == field


def test_events_before_begin_are_rejected() -> None:
    session, _ = make()
    with pytest.raises(InvalidRequest) as err:
        session.handle(claims("s1-L1"))
    assert err.value.field == "start"


def test_close_input_reports_cancelled_or_budget() -> None:
    session, _ = make()
    initial(session)
    final = final_of(session.close_input())
    assert final.reason is StopReason.CANCELLED
    assert final.outstanding == ("s1-L1", "s1-L2", "s1-L3")
    budget_session, _ = make()
    initial(budget_session)
    budget_session.handle(BudgetReport(remaining_fraction=0.0))
    assert final_of(budget_session.close_input()).reason is StopReason.BUDGET


def test_cancel_stops_pending_evidence_planning() -> None:
    cancel = threading.Event()
    calls: list[str] = []

    class CancellingEvidence(FakeEvidence):
        def evidence_for(self, question: str, **times: int | None) -> EvidencePlan:
            calls.append(question)
            cancel.set()  # the caller cancels while the first plan is being made
            return super().evidence_for(question, at_valid_us=None, at_tx_us=None,
                                        budget_tokens=None)

    start = SessionStart(question=QUESTION, actors=("web",), session_id="s1")
    session = ResearchSession(
        start,
        provider=OfflineProvider(),
        evidence=CancellingEvidence(),  # type: ignore[arg-type]
        cancel=cancel,
    )
    with pytest.raises(Cancelled):
        session.begin()
    assert calls == ["What caused the 2021 outage?"]
    assert session.stop_reason is StopReason.CANCELLED


def test_evidence_failures_are_reported_on_the_sub_question() -> None:
    class NoEvidence(FakeEvidence):
        def evidence_for(self, question: str, **times: int | None) -> EvidencePlan:
            raise InsufficientEvidence("recall found no span")

    start = SessionStart(question="Why?", actors=("web",), session_id="s1")
    session = ResearchSession(
        start,
        provider=OfflineProvider(),
        evidence=NoEvidence(),  # type: ignore[arg-type]
    )
    init = initial(session)
    assert init.questions[0].evidence is None
    assert init.questions[0].evidence_error == "InsufficientEvidence: recall found no span"


def test_same_events_give_the_same_stream() -> None:
    def transcript() -> list[bytes]:
        session, _ = make()
        init = initial(session)
        out: list[Update] = [init]
        queue = list(init.leads)
        while queue and not session.finished:
            lead = queue.pop(0)
            n = 0 if "fixed" in lead.query else len(lead.query) % 3 + 1
            report = claims(lead.id, n) if n else LeadReport(lead_id=lead.id, dead_end_cause="nil")
            for update in session.handle(report):
                out.append(update)
                if isinstance(update, ReplanUpdate):
                    queue += update.leads
        return [wire.update_to_proto(u).SerializeToString(deterministic=True) for u in out]

    first = transcript()
    assert len(first) >= 3
    assert transcript() == first


def test_start_budget_beyond_the_plan_limit_is_rejected_at_start() -> None:
    from planner_svc.core.errors import InvalidRequest
    from planner_svc.core.limits import MAX_BUDGET_TOKENS
    from planner_svc.research.session import SessionStart

    with pytest.raises(InvalidRequest) as info:
        SessionStart(question="Why?", actors=("web",), session_id="s1",
                     budget_tokens=MAX_BUDGET_TOKENS + 1)
    assert info.value.field == "start.budget_tokens"


def test_evidence_planning_sees_the_session_cancel() -> None:
    # a sub-question's plan that waits for a planning slot must leave when the session is
    # cancelled (its client gone, or the server stopping), not hold the session open
    cancel = threading.Event()
    seen: list[Callable[[], bool]] = []

    class WaitingEvidence(FakeEvidence):
        def evidence_for(self, question: str, *, cancelled: Callable[[], bool] = lambda: False,
                         **times: int | None) -> EvidencePlan:
            seen.append(cancelled)
            assert not cancelled()
            cancel.set()  # the session is cancelled while this plan waits
            assert cancelled()
            raise Cancelled("request cancelled while waiting for a planning slot")

    start = SessionStart(question=QUESTION, actors=("web",), session_id="s1")
    session = ResearchSession(start, provider=OfflineProvider(),
                              evidence=WaitingEvidence(),  # type: ignore[arg-type]
                              cancel=cancel)
    with pytest.raises(Cancelled):
        session.begin()
    assert len(seen) == 1  # no later sub-question was planned
    assert session.stop_reason is StopReason.CANCELLED
