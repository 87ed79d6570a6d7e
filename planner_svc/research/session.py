"""One research session as a plain object: the stream protocol without gRPC.

Source: docs/architecture.md, "Research sessions". The caller feeds events in order and sends every
update returned:

1. :meth:`ResearchSession.begin` makes the initial plan (one model call, then one evidence plan
   per sub-question) and dispatches one lead per sub-question.
2. :meth:`ResearchSession.handle` takes a lead result, a contradiction count or a budget report.
   After a lead result, when :meth:`ResearchPlanner.should_replan` holds, the session reaches a
   replan point and decides, in this order and before any model call:

   a. depth cap reached: end with DEPTH_CAP once no lead is outstanding (until then, wait);
   b. budget reported exhausted: end with BUDGET;
   c. no progress: the last round admitted no new sub-question and no claim was reported since
      its call. End with NO_PROGRESS once no lead is outstanding; until then wait (make no
      call), since an outstanding lead may still report a claim;
   d. otherwise replan (one model call), apply the ``answered`` IDs it returned, and end with
      DONE when the planner says so, every sub-question is answered, or nothing new was proposed
      with no lead outstanding; with NO_PROGRESS when everything proposed repeated a
      sub-question and no lead is outstanding; else dispatch the new leads and stream the
      replan (which may add nothing: it still reports what was answered and refused).

Every update reports what became of the planner call's proposals: admitted, refused as
duplicates (:mod:`planner_svc.research.duplicates`) or cut by the round's cap.
3. :meth:`ResearchSession.close_input` ends a session whose orchestrator stopped sending:
   BUDGET if the last budget report was 0, else CANCELLED; :meth:`ResearchSession.interrupt`
   ends it with CANCELLED for a reason of the caller's (the server is shutting down).

Cancellation is a :class:`threading.Event`; it is checked before every model call and every
evidence plan, and a set event raises :class:`~planner_svc.research.provider.Cancelled`.
"""

from __future__ import annotations

import enum
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

from planner_svc.core.errors import InvalidRequest, PlannerError, echo
from planner_svc.core.limits import MAX_BUDGET_TOKENS
from planner_svc.core.model import EvidencePlan, PlannedSpan
from planner_svc.research.digest import (
    DEFAULT_DIGEST_CHARS,
    Admission,
    Digest,
    Duplicate,
    SubQuestion,
)
from planner_svc.research.duplicates import DuplicatePolicy
from planner_svc.research.evidence import EvidenceBudget, EvidenceSource
from planner_svc.research.leads import Lead, leads_across
from planner_svc.research.planner import ResearchCaps, ResearchPlanner
from planner_svc.research.provider import Cancelled, EvidenceContext, ResearchProvider, Usage

MAX_QUESTION_CHARS = 1000
MAX_ACTORS = 16
MAX_CAUSE_CHARS = 64
MAX_QUERY_CHARS = 500
ACTOR_RE = re.compile(r"[a-z][a-z0-9_-]{0,31}")
SESSION_ID_RE = re.compile(r"[A-Za-z0-9._-]{1,64}")


class StopReason(enum.IntEnum):
    """Why a session ended (numbers match the proto enum ``StopReason``)."""

    DONE = 1
    DEPTH_CAP = 2
    BUDGET = 3
    CANCELLED = 4
    NO_PROGRESS = 5


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionStart:
    """A session's parameters (the ``start`` event).

    Attributes:
        question: the research question, 1..1000 characters after stripping.
        actors: actor types, 1..16, distinct, each matching ``[a-z][a-z0-9_-]{0,31}``.
        caps: planning bounds.
        at_valid_us, at_tx_us: as-of times for evidence plans (microseconds); None = now.
        budget_tokens: evidence budget per sub-question plan (tokens, >= 1); None = default.
        provider: the requested provider name (resolved by the caller's provider factory).
        session_id: prefix of lead IDs, matching ``[A-Za-z0-9._-]{1,64}``.

    Raises:
        InvalidRequest: a field out of range, named as in the proto (``start.actors[1]``).
    """

    question: str
    actors: tuple[str, ...]
    caps: ResearchCaps = field(default_factory=ResearchCaps)
    at_valid_us: int | None = None
    at_tx_us: int | None = None
    budget_tokens: int | None = None
    provider: str = ""
    session_id: str

    def __post_init__(self) -> None:
        q = self.question.strip()
        if not q:
            raise InvalidRequest("start.question", "must not be empty")
        if len(q) > MAX_QUESTION_CHARS:
            raise InvalidRequest(
                "start.question", f"{len(q)} characters; at most {MAX_QUESTION_CHARS}"
            )
        if not 1 <= len(self.actors) <= MAX_ACTORS:
            raise InvalidRequest(
                "start.actors", f"{len(self.actors)} actors; allowed 1..{MAX_ACTORS}"
            )
        for i, actor in enumerate(self.actors):
            if not ACTOR_RE.fullmatch(actor):
                raise InvalidRequest(
                    f"start.actors[{i}]", f"{echo(actor)} does not match {ACTOR_RE.pattern}"
                )
            if actor in self.actors[:i]:
                raise InvalidRequest(f"start.actors[{i}]", f"{echo(actor)} is listed twice")
        if self.budget_tokens is not None and self.budget_tokens > MAX_BUDGET_TOKENS:
            raise InvalidRequest(
                "start.budget_tokens",
                f"{self.budget_tokens}; must be <= {MAX_BUDGET_TOKENS}",
            )
        if self.budget_tokens is not None and self.budget_tokens < 1:
            raise InvalidRequest(
                "start.budget_tokens", f"{self.budget_tokens}; must be >= 1 when set"
            )
        if not SESSION_ID_RE.fullmatch(self.session_id):
            raise InvalidRequest(
                "start.session_id",
                f"{echo(self.session_id)} does not match {SESSION_ID_RE.pattern}",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class LeadReport:
    """A lead's outcome: ``claims >= 1`` found, or a dead end (``dead_end_cause`` set, claims
    0). ``dead_end_query`` empty = the lead's own query.

    Raises:
        InvalidRequest: both or neither outcome, or a cause/query out of range.
    """

    lead_id: str
    claims: int = 0
    dead_end_cause: str | None = None
    dead_end_query: str = ""

    def __post_init__(self) -> None:
        if not self.lead_id:
            raise InvalidRequest("lead_result.lead_id", "must not be empty")
        if self.dead_end_cause is None:
            if self.claims < 1:
                raise InvalidRequest(
                    "lead_result.claims",
                    f"{self.claims}; must be >= 1 (report a lead that found nothing as "
                    "dead_end with its cause)",
                )
            return
        if self.claims:
            raise InvalidRequest("lead_result", "claims and dead_end are exclusive")
        cause = self.dead_end_cause.strip()
        if not 1 <= len(cause) <= MAX_CAUSE_CHARS:
            raise InvalidRequest(
                "lead_result.dead_end.cause",
                f"{len(cause)} characters after stripping; allowed 1..{MAX_CAUSE_CHARS}",
            )
        if len(self.dead_end_query) > MAX_QUERY_CHARS:
            raise InvalidRequest(
                "lead_result.dead_end.query",
                f"{len(self.dead_end_query)} characters; at most {MAX_QUERY_CHARS}",
            )


@dataclass(frozen=True, slots=True, kw_only=True)
class ContradictionsReport:
    """The live contradiction count (>= 0), replacing the previous report."""

    live: int

    def __post_init__(self) -> None:
        if self.live < 0:
            raise InvalidRequest("contradictions.live", f"{self.live}; must be >= 0")


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetReport:
    """The session allowance still available, a fraction in [0, 1], replacing the last one."""

    remaining_fraction: float

    def __post_init__(self) -> None:
        if not 0.0 <= self.remaining_fraction <= 1.0:  # also rejects NaN
            raise InvalidRequest(
                "budget.remaining_fraction",
                f"{self.remaining_fraction}; allowed range [0, 1]",
            )


Event = LeadReport | ContradictionsReport | BudgetReport


@dataclass(frozen=True, slots=True, kw_only=True)
class PlannedQuestion:
    """A sub-question as streamed: its state, and its evidence plan or why there is none."""

    question: SubQuestion
    evidence: EvidencePlan | None
    evidence_error: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class InitialUpdate:
    """The initial plan, with the session's effective settings.

    Attributes:
        start: the session's parameters (caps resolved, as-of times as given).
        provider: the provider's resolved name.
        digest_max_chars: the digest's bound, characters.
        budget: the evidence budget every plan of the session packs to.
        duplicates: how proposals are screened (threshold, embedder).
        questions, leads, rationale, usage: the decomposition.
        proposals: what became of the decomposition's proposals.
    """

    start: SessionStart
    provider: str
    digest_max_chars: int
    budget: EvidenceBudget
    duplicates: DuplicatePolicy
    questions: tuple[PlannedQuestion, ...]
    leads: tuple[Lead, ...]
    rationale: str
    usage: Usage
    proposals: Admission = field(default_factory=Admission)


@dataclass(frozen=True, slots=True, kw_only=True)
class ReplanUpdate:
    """One replan round: new sub-questions (with evidence), their leads, what was closed."""

    round: int
    questions: tuple[PlannedQuestion, ...]
    leads: tuple[Lead, ...]
    answered: tuple[str, ...]
    rationale: str
    usage: Usage
    open_ids: tuple[str, ...]
    proposals: Admission = field(default_factory=Admission)


@dataclass(frozen=True, slots=True, kw_only=True)
class FinalUpdate:
    """The last update of a session.

    ``proposals`` is what became of the proposals of the planner call that ended the session
    (None when no call ended it); ``duplicates`` every proposal the session refused.
    """

    reason: StopReason
    detail: str
    model_calls: int
    rounds: int
    leads_run: int
    claims_found: int
    dead_ends: int
    outstanding: tuple[str, ...]
    questions: tuple[SubQuestion, ...]
    proposals: Admission | None = None
    duplicates: tuple[Duplicate, ...] = ()


Update = InitialUpdate | ReplanUpdate | FinalUpdate


class ResearchSession:
    """The session state machine (see the module docstring). Not thread-safe except
    :meth:`cancel`; one caller thread feeds it.

    Args:
        start: the session's parameters.
        provider: answers planner calls.
        evidence: plans each sub-question's evidence.
        duplicates: how proposals are screened; None = no embedder, default threshold.
        digest_max_chars: bound of the digest the planner reads (>= 1400, so that any accepted
            question fits).
        cancel: event that abandons the session when set; a new one when None.

    Raises:
        ConfigError: ``digest_max_chars`` out of range.
    """

    def __init__(
        self,
        start: SessionStart,
        *,
        provider: ResearchProvider,
        evidence: EvidenceSource,
        digest_max_chars: int = DEFAULT_DIGEST_CHARS,
        cancel: threading.Event | None = None,
        duplicates: DuplicatePolicy | None = None,
    ) -> None:
        self.start = start
        self._duplicates = duplicates or DuplicatePolicy()
        self._digest = Digest(start.question.strip(), max_chars=digest_max_chars,
                              screen=self._duplicates.screen())
        self._planner = ResearchPlanner(provider, start.caps)
        self._evidence = evidence
        self._cancel = cancel or threading.Event()
        self._outstanding: dict[str, Lead] = {}
        self._spans: dict[str, tuple[PlannedSpan, ...]] = {}
        self._completed_since_replan = 0
        self._rounds = 0
        self._model_calls = 0
        self._next_ordinal = 1
        self._started = False
        self._stop_reason: StopReason | None = None
        # progress of the last round: sub-questions it admitted, claims reported before its call
        self._last_admitted = 0
        self._claims_before_last_call = 0

    @property
    def digest(self) -> Digest:
        """The session's digest (read it; the session owns its writes)."""
        return self._digest

    @property
    def finished(self) -> bool:
        """True once the session has stopped (a final update was produced or it was cancelled)."""
        return self._stop_reason is not None

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the session stopped, None while it runs."""
        return self._stop_reason

    @property
    def model_calls(self) -> int:
        """Planning-provider calls made so far."""
        return self._model_calls

    def cancel(self) -> None:
        """Abandon the session: pending work stops at its next check; nothing more is sent."""
        self._cancel.set()
        if self._stop_reason is None:
            self._stop_reason = StopReason.CANCELLED

    def begin(self) -> list[Update]:
        """The initial plan.

        Raises:
            InvalidRequest: called twice.
            ProviderError, CassetteMiss: from the provider. Cancelled: cancel was set.
        """
        if self._started:
            raise InvalidRequest("start", "the session has already started")
        self._started = True
        budget = self._evidence.budget_for(self.start.budget_tokens)
        self._check_cancel()
        step = self._planner.initial(self._digest, cancel=self._cancel)
        self._model_calls += 1
        self._last_admitted = len(step.questions)
        leads = self._dispatch(step.questions, depth=0)
        planned = self._with_evidence(step.questions)
        return [
            InitialUpdate(
                start=self.start,
                provider=self._planner.provider.name,
                digest_max_chars=self._digest.max_chars,
                budget=budget,
                duplicates=self._duplicates,
                questions=planned,
                leads=leads,
                rationale=step.rationale,
                usage=step.usage,
                proposals=step.proposals,
            )
        ]

    def handle(self, event: Event) -> list[Update]:
        """Apply one orchestrator event; returns the updates to send (possibly none).

        Events after the session finished are ignored.

        Raises:
            InvalidRequest: before :meth:`begin`, or a lead ID that is not outstanding.
            ProviderError, CassetteMiss: from the provider. Cancelled: cancel was set.
        """
        if self._stop_reason is not None:
            return []
        if not self._started:
            raise InvalidRequest("start", "the first event of a session must be start")
        if isinstance(event, ContradictionsReport):
            self._digest.set_contradictions(event.live)
            return []
        if isinstance(event, BudgetReport):
            self._digest.set_budget_remaining(event.remaining_fraction)
            return []
        lead = self._outstanding.pop(event.lead_id, None)
        if lead is None:
            raise InvalidRequest(
                "lead_result.lead_id",
                f"{echo(event.lead_id)} is not an outstanding lead of this session "
                "(unknown, or already reported)",
            )
        if event.dead_end_cause is None:
            self._digest.record_claims(lead.question_id, event.claims)
        else:
            self._digest.record_dead_end(
                event.dead_end_cause.strip(), event.dead_end_query or lead.query,
                question_id=lead.question_id,
            )
        self._completed_since_replan += 1
        if self._planner.should_replan(self._completed_since_replan, not self._outstanding):
            return self._replan_point()
        return []

    def close_input(self) -> list[Update]:
        """The orchestrator stopped sending: end with BUDGET when the last budget report was 0,
        else CANCELLED. Returns [] when already finished."""
        if self._stop_reason is not None:
            return []
        budget = self._digest.snapshot().budget_remaining
        n = len(self._outstanding)
        if budget is not None and budget <= 0:
            return [self._stop(StopReason.BUDGET, f"budget exhausted; {n} lead(s) unreported")]
        return [
            self._stop(
                StopReason.CANCELLED, f"orchestrator closed its stream with {n} lead(s) unreported"
            )
        ]

    def interrupt(self, detail: str) -> list[Update]:
        """End the session now with CANCELLED, ``detail`` saying why (e.g. the server is shutting
        down) and how many leads were left unreported. Returns [] when already finished."""
        if self._stop_reason is not None:
            return []
        n = len(self._outstanding)
        return [self._stop(StopReason.CANCELLED, f"{detail}; {n} lead(s) unreported")]

    # --- internals ---------------------------------------------------------------------------

    def _replan_point(self) -> list[Update]:
        planner = self._planner
        if planner.depth_exhausted(self._rounds):
            if self._outstanding:
                return []  # no replan is possible; wait for the outstanding leads
            return [self._stop(StopReason.DEPTH_CAP, planner.depth_cap_reason())]
        snap = self._digest.snapshot()
        if snap.budget_remaining is not None and snap.budget_remaining <= 0:
            return [self._stop(StopReason.BUDGET, "a replan was due with the budget exhausted")]
        if self._last_admitted == 0 and snap.claims_found == self._claims_before_last_call:
            if self._outstanding:
                return []  # nothing new since the last call: no call until a claim comes
            return [self._stop(
                StopReason.NO_PROGRESS,
                f"round {self._rounds} admitted no new sub-question and no claim was reported "
                "after it",
            )]
        self._check_cancel()
        step = planner.replan(self._digest, depth=self._rounds, cancel=self._cancel,
                              evidence=self._evidence_context())
        self._model_calls += 1
        self._rounds += 1
        self._completed_since_replan = 0
        self._last_admitted = len(step.questions)
        self._claims_before_last_call = snap.claims_found
        for qid in step.answered:
            self._digest.mark_answered(qid)
        ended = step.proposals
        if step.done:
            return [self._stop(StopReason.DONE, f"planner judged it complete: {step.rationale}",
                               proposals=ended)]
        if self._digest.complete():
            return [self._stop(StopReason.DONE, "every sub-question is answered",
                               proposals=ended)]
        if not step.questions and not self._outstanding:
            if ended.duplicates:
                n = len(ended.duplicates)
                return [self._stop(
                    StopReason.NO_PROGRESS,
                    f"round {self._rounds} proposed only repeats ({n} refused as duplicates) "
                    "and no lead is outstanding",
                    proposals=ended,
                )]
            return [self._stop(StopReason.DONE, "nothing new to research and no lead outstanding",
                               proposals=ended)]
        leads = self._dispatch(step.questions, depth=self._rounds)
        planned = self._with_evidence(step.questions)
        return [
            ReplanUpdate(
                round=self._rounds,
                questions=planned,
                leads=leads,
                answered=step.answered,
                rationale=step.rationale,
                usage=step.usage,
                open_ids=tuple(q.id for q in self._digest.open()),
                proposals=ended,
            )
        ]

    def _evidence_context(self) -> EvidenceContext:
        return EvidenceContext(spans=dict(self._spans), at_valid_us=self.start.at_valid_us,
                               at_tx_us=self.start.at_tx_us)

    def _dispatch(self, questions: Sequence[SubQuestion], *, depth: int) -> tuple[Lead, ...]:
        leads = leads_across(
            self.start.session_id,
            self.start.actors,
            questions,
            depth=depth,
            first_ordinal=self._next_ordinal,
        )
        self._next_ordinal += len(leads)
        for lead in leads:
            self._outstanding[lead.id] = lead
            self._digest.record_lead(lead.question_id)
        return tuple(leads)

    def _with_evidence(self, questions: Sequence[SubQuestion]) -> tuple[PlannedQuestion, ...]:
        out = []
        for q in questions:
            self._check_cancel()
            evidence: EvidencePlan | None = None
            error = ""
            try:
                evidence = self._evidence.evidence_for(
                    q.text,
                    at_valid_us=self.start.at_valid_us,
                    at_tx_us=self.start.at_tx_us,
                    budget_tokens=self.start.budget_tokens,
                    cancelled=self._cancel.is_set,
                )
            except PlannerError as exc:  # a Cancelled one ends the session at the next check
                error = f"{type(exc).__name__}: {exc}"
            if evidence is not None:
                self._spans[q.id] = evidence.spans
            out.append(
                PlannedQuestion(
                    question=self._digest.get(q.id), evidence=evidence, evidence_error=error
                )
            )
        self._check_cancel()
        return tuple(out)

    def _check_cancel(self) -> None:
        if self._cancel.is_set():
            if self._stop_reason is None:
                self._stop_reason = StopReason.CANCELLED
            raise Cancelled("the session was cancelled")

    def _stop(self, reason: StopReason, detail: str, *,
              proposals: Admission | None = None) -> FinalUpdate:
        snap = self._digest.snapshot()
        self._stop_reason = reason
        return FinalUpdate(
            reason=reason,
            detail=detail,
            model_calls=self._model_calls,
            rounds=self._rounds,
            leads_run=snap.leads_run,
            claims_found=snap.claims_found,
            dead_ends=snap.dead_end_total,
            outstanding=tuple(self._outstanding),
            questions=snap.questions,
            proposals=proposals,
            duplicates=snap.duplicates,
        )
