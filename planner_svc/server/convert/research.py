"""Research stream messages <-> the session's types: events in, updates out.

Every malformed field becomes :class:`~planner_svc.core.errors.InvalidRequest` with the field's
path in the event (``start.caps.max_depth``, ``lead_result.dead_end.cause``). A sub-question's
evidence plan is converted once, by :func:`planner_svc.server.convert.plan.plan_to_proto`.
"""

from __future__ import annotations

import hashlib

from planner_svc.api.planner.v1 import research_pb2
from planner_svc.core.errors import ConfigError, InvalidRequest
from planner_svc.research.digest import Admission, Duplicate, SubQuestion
from planner_svc.research.leads import Lead
from planner_svc.research.planner import ResearchCaps
from planner_svc.research.provider import Usage
from planner_svc.research.session import (
    BudgetReport,
    ContradictionsReport,
    Event,
    FinalUpdate,
    InitialUpdate,
    LeadReport,
    PlannedQuestion,
    ReplanUpdate,
    SessionStart,
    Update,
)
from planner_svc.server.convert.plan import plan_to_proto


def derive_session_id(start: research_pb2.StartSession) -> str:
    """``rs-`` + 16 hex digits of SHA-256 over the deterministic encoding of ``start`` without
    its ``provider``: recording a session and replaying its cassette give the same lead IDs."""
    keyed = research_pb2.StartSession()
    keyed.CopyFrom(start)
    keyed.ClearField("provider")
    blob = keyed.SerializeToString(deterministic=True)
    return "rs-" + hashlib.sha256(blob).hexdigest()[:16]


def caps_from_proto(caps: research_pb2.ResearchCaps) -> ResearchCaps:
    """The session's caps from their message (absent or 0 = default).

    Raises:
        InvalidRequest: a cap out of range (field ``start.caps.<name>``).
    """
    defaults = ResearchCaps()
    try:
        return ResearchCaps(
            max_initial_leads=caps.max_initial_leads or defaults.max_initial_leads,
            max_new_leads=caps.max_new_leads or defaults.max_new_leads,
            replan_every=caps.replan_every or defaults.replan_every,
            max_depth=caps.max_depth,
        )
    except ConfigError as exc:
        raise InvalidRequest(f"start.caps.{exc.field}", exc.reason) from exc


def start_from_proto(event: research_pb2.ResearchRequest) -> SessionStart:
    """The session parameters of a first event.

    Raises:
        InvalidRequest: the event is not ``start``, or a field is out of range.
    """
    if event.WhichOneof("event") != "start":
        raise InvalidRequest("start", "the first event of a session must be start")
    s = event.start
    return SessionStart(
        question=s.question,
        actors=tuple(s.actors),
        caps=caps_from_proto(s.caps),
        at_valid_us=s.at_valid if s.HasField("at_valid") else None,
        at_tx_us=s.at_tx if s.HasField("at_tx") else None,
        budget_tokens=s.budget_tokens if s.HasField("budget_tokens") else None,
        provider=s.provider.strip(),
        session_id=s.session_id or derive_session_id(s),
    )


def event_from_proto(event: research_pb2.ResearchRequest) -> Event:
    """A follow-up event.

    Raises:
        InvalidRequest: no event set, a second ``start``, or a field out of range.
    """
    kind = event.WhichOneof("event")
    if kind == "lead_result":
        r = event.lead_result
        outcome = r.WhichOneof("outcome")
        if outcome is None:
            raise InvalidRequest("lead_result.outcome", "set claims or dead_end")
        if outcome == "claims":
            return LeadReport(lead_id=r.lead_id, claims=r.claims)
        return LeadReport(
            lead_id=r.lead_id, dead_end_cause=r.dead_end.cause, dead_end_query=r.dead_end.query
        )
    if kind == "contradictions":
        return ContradictionsReport(live=event.contradictions.live)
    if kind == "budget":
        return BudgetReport(remaining_fraction=event.budget.remaining_fraction)
    if kind == "start":
        raise InvalidRequest("start", "the session has already started")
    raise InvalidRequest("event", "no event set")


def _question(q: SubQuestion, out: research_pb2.SubQuestion) -> None:
    out.id = q.id
    out.text = q.text
    out.leads = q.leads
    out.claims = q.claims
    out.answered = q.answered
    out.dead_ends = q.dead_ends


def _duplicate(d: Duplicate, out: research_pb2.DuplicateProposal) -> None:
    out.text = d.text
    out.duplicate_of = d.of
    out.rule = research_pb2.DuplicateRule.ValueType(int(d.rule))
    out.similarity = d.similarity
    out.round = d.round


def _proposals(a: Admission, out: research_pb2.ProposalOutcomes) -> None:
    out.SetInParent()
    out.admitted.extend(q.id for q in a.admitted)
    for d in a.duplicates:
        _duplicate(d, out.duplicates.add())
    out.cut.extend(a.cut)
    out.cap = a.cap


def _planned(p: PlannedQuestion, out: research_pb2.SubQuestion) -> None:
    _question(p.question, out)
    if p.evidence is not None:
        out.evidence.CopyFrom(plan_to_proto(p.evidence))
    out.evidence_error = p.evidence_error


def _lead(lead: Lead, out: research_pb2.Lead) -> None:
    out.id = lead.id
    out.question_id = lead.question_id
    out.query = lead.query
    out.actor = lead.actor
    out.depth = lead.depth


def _usage(u: Usage, out: research_pb2.PlannerUsage) -> None:
    out.prompt_tokens = u.prompt_tokens
    out.completion_tokens = u.completion_tokens
    out.model = u.model


def update_to_proto(update: Update) -> research_pb2.ResearchResponse:
    """The wire form of one session update."""
    msg = research_pb2.ResearchResponse()
    if isinstance(update, InitialUpdate):
        init = msg.initial
        st = update.start
        cfg = init.settings
        cfg.caps.max_initial_leads = st.caps.max_initial_leads
        cfg.caps.max_new_leads = st.caps.max_new_leads
        cfg.caps.replan_every = st.caps.replan_every
        cfg.caps.max_depth = st.caps.resolved_max_depth
        cfg.actors.extend(st.actors)
        if st.at_valid_us is not None:
            cfg.at_valid = st.at_valid_us
        if st.at_tx_us is not None:
            cfg.at_tx = st.at_tx_us
        cfg.budget_tokens = update.budget.requested_tokens
        cfg.budget_default = update.budget.default_applied
        cfg.effective_budget_tokens = update.budget.effective_tokens
        cfg.duplicate_similarity = update.duplicates.threshold
        cfg.duplicate_embedder = update.duplicates.embedder_name
        cfg.provider = update.provider
        cfg.digest_max_chars = update.digest_max_chars
        cfg.session_id = st.session_id
        for p in update.questions:
            _planned(p, init.sub_questions.add())
        for lead in update.leads:
            _lead(lead, init.leads.add())
        init.rationale = update.rationale
        _usage(update.usage, init.usage)
        _proposals(update.proposals, init.proposals)
    elif isinstance(update, ReplanUpdate):
        rp = msg.replan
        rp.round = update.round
        for p in update.questions:
            _planned(p, rp.sub_questions.add())
        for lead in update.leads:
            _lead(lead, rp.leads.add())
        rp.answered.extend(update.answered)
        rp.rationale = update.rationale
        _usage(update.usage, rp.usage)
        rp.open.extend(update.open_ids)
        _proposals(update.proposals, rp.proposals)
    elif isinstance(update, FinalUpdate):
        fin = msg.final
        fin.reason = research_pb2.StopReason.ValueType(int(update.reason))
        fin.detail = update.detail
        fin.model_calls = update.model_calls
        fin.rounds = update.rounds
        fin.leads_run = update.leads_run
        fin.claims_found = update.claims_found
        fin.dead_ends = update.dead_ends
        fin.outstanding_leads.extend(update.outstanding)
        for q in update.questions:
            _question(q, fin.sub_questions.add())
        if update.proposals is not None:
            _proposals(update.proposals, fin.proposals)
        for d in update.duplicates:
            _duplicate(d, fin.duplicates.add())
    return msg
