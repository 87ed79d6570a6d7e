"""The research planner: the initial decomposition, replans against the digest, and when to
replan.

Source: the research planner reference ("Planner", "Plan", the default constants, "DepthNone"),
named :class:`ResearchPlanner` and :class:`ResearchStep` here. The two model calls of a session
happen here and nowhere else; what runs between them is bookkeeping, so planner cost grows with
the number of replans, not of leads.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

from planner_svc.core.errors import ConfigError
from planner_svc.core.limits import Bounds
from planner_svc.research.digest import Admission, Digest, SubQuestion, render_digest
from planner_svc.research.provider import (
    EvidenceContext,
    ProviderRequest,
    ResearchProvider,
    Usage,
)

DEFAULT_MAX_INITIAL_LEADS = 4
"""Sub-questions of the initial round when a session names no cap."""
DEFAULT_MAX_NEW_LEADS = 3
"""New sub-questions per replan when a session names no cap."""
DEFAULT_REPLAN_EVERY = 3
"""Completed leads between replans when a session names no cap."""
DEFAULT_MAX_DEPTH = 2
"""Follow-up rounds when ``max_depth`` is 0 (unset)."""
DEPTH_NONE = -1
"""``max_depth`` value meaning no follow-up round at all (distinct from 0, "unset")."""

LEADS_PER_ROUND = Bounds(1, 16)
"""Sub-questions (one lead each) a round may add."""
REPLAN_EVERY = Bounds(1, 100)
"""Completed leads between replans."""
MAX_DEPTH = Bounds(DEPTH_NONE, 8)
"""Follow-up rounds: -1 (none), 0 (unset: the default) or a count."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ResearchCaps:
    """Bounds of one session's planning.

    Attributes:
        max_initial_leads: sub-questions (one lead each) of the initial round, 1..16.
        max_new_leads: new sub-questions per replan, 1..16.
        replan_every: completed leads between replans, 1..100.
        max_depth: follow-up (replan) rounds, -1..8: 0 = unset (:data:`DEFAULT_MAX_DEPTH`),
            -1 = :data:`DEPTH_NONE` (initial round only).

    Raises:
        ConfigError: a field out of range (the field is named).
    """

    max_initial_leads: int = DEFAULT_MAX_INITIAL_LEADS
    max_new_leads: int = DEFAULT_MAX_NEW_LEADS
    replan_every: int = DEFAULT_REPLAN_EVERY
    max_depth: int = 0

    BOUNDS: ClassVar[Mapping[str, Bounds]] = MappingProxyType({
        "max_initial_leads": LEADS_PER_ROUND,
        "max_new_leads": LEADS_PER_ROUND,
        "replan_every": REPLAN_EVERY,
        "max_depth": MAX_DEPTH,
    })
    """The allowed interval of each field (validation, flags and their help read it)."""

    def __post_init__(self) -> None:
        for name, bounds in self.BOUNDS.items():
            value = getattr(self, name)
            if value not in bounds:
                raise ConfigError(name, f"{value}; allowed range {bounds}")

    @property
    def follow_up_rounds(self) -> int:
        """Replan rounds allowed: 0 for -1, :data:`DEFAULT_MAX_DEPTH` for 0, else max_depth."""
        if self.max_depth == DEPTH_NONE:
            return 0
        return self.max_depth or DEFAULT_MAX_DEPTH

    @property
    def resolved_max_depth(self) -> int:
        """``max_depth`` with the default applied and -1 kept (the echoed setting)."""
        return DEPTH_NONE if self.max_depth == DEPTH_NONE else self.follow_up_rounds


@dataclass(frozen=True, slots=True, kw_only=True)
class ResearchStep:
    """What one planning step produced.

    Attributes:
        questions: sub-questions this step registered in the digest, with digest IDs (one lead
            each); duplicates of earlier wording are not among them.
        proposals: what became of every proposal of the call: admitted (``questions``),
            refused as a duplicate (also recorded in the digest) or cut by the round's cap.
        answered: IDs of open sub-questions the provider considers closed. Returned, never
            applied: the caller owns the digest.
        done: the provider judged the research complete (replans only).
        rationale: one line for a trace.
        usage: tokens the model call spent (zero when no call was made).
        model_called: whether a provider call was made.
        depth_capped: the step was refused by the depth cap (no call, nothing proposed).
    """

    questions: tuple[SubQuestion, ...] = ()
    proposals: Admission = field(default_factory=Admission)
    answered: tuple[str, ...] = ()
    done: bool = False
    rationale: str = ""
    usage: Usage = field(default_factory=Usage)
    model_called: bool = False
    depth_capped: bool = False


class ResearchPlanner:
    """Decomposes a question and decides what to research next.

    Args:
        provider: answers planning requests.
        caps: the session's bounds.
    """

    def __init__(self, provider: ResearchProvider, caps: ResearchCaps | None = None) -> None:
        self.provider = provider
        self.caps = caps or ResearchCaps()

    def initial(self, digest: Digest, *, cancel: threading.Event | None = None) -> ResearchStep:
        """The first round: decompose ``digest.question`` into at most ``max_initial_leads``
        sub-questions and register them in ``digest``.

        The provider sees only the (delimited) question. Proposals are screened by
        :meth:`Digest.admit` (duplicates refused and recorded, the rest past the cap cut). When
        none is admitted, the question itself becomes the single sub-question, so a session
        always has work.

        Raises:
            ProviderError, CassetteMiss, Cancelled: from the provider.
        """
        request = ProviderRequest(
            kind="decompose",
            question=digest.question,
            digest_text="",
            max_questions=self.caps.max_initial_leads,
        )
        answer = self.provider.propose(request, cancel=cancel)
        admission = digest.admit(answer.questions, cap=self.caps.max_initial_leads, round=0)
        if not admission.admitted and not digest.questions():
            fallback = digest.admit([digest.question], cap=1, round=0)
            admission = Admission(admitted=fallback.admitted, duplicates=admission.duplicates,
                                  cut=admission.cut, cap=admission.cap)
        return ResearchStep(
            questions=admission.admitted,
            proposals=admission,
            rationale=answer.rationale,
            usage=answer.usage,
            model_called=True,
        )

    def replan(
        self,
        digest: Digest,
        *,
        depth: int,
        cancel: threading.Event | None = None,
        evidence: EvidenceContext | None = None,
    ) -> ResearchStep:
        """A follow-up round from the digest: at most ``max_new_leads`` new sub-questions.

        Args:
            digest: the session's digest; the provider reads its rendered form (and the
                snapshot it came from). New sub-questions and refused duplicates are written to
                it.
            evidence: the sub-questions' evidence, for providers inside the service (see
                :class:`~planner_svc.research.provider.EvidenceContext`).
            depth: rounds run so far (0 after the initial round). When
                :meth:`depth_exhausted` holds, returns a ``depth_capped`` plan without calling
                the provider; callers should check first, before reserving anything.
            cancel: set to abandon a pending call.

        ``answered`` keeps only IDs that are open in the digest, in the provider's order.

        Raises:
            ProviderError, CassetteMiss, Cancelled: from the provider.
        """
        if self.depth_exhausted(depth):
            return ResearchStep(depth_capped=True, rationale=self.depth_cap_reason())
        view = digest.snapshot()
        request = ProviderRequest(
            kind="replan",
            question=digest.question,
            digest_text=render_digest(view),
            max_questions=self.caps.max_new_leads,
            digest=view,
            evidence=evidence,
        )
        answer = self.provider.propose(request, cancel=cancel)
        open_ids = {q.id for q in view.open()}
        answered = tuple(dict.fromkeys(a for a in answer.answered if a in open_ids))
        admission = digest.admit(answer.questions, cap=self.caps.max_new_leads, round=depth + 1)
        return ResearchStep(
            questions=admission.admitted,
            proposals=admission,
            answered=answered,
            done=answer.done,
            rationale=answer.rationale,
            usage=answer.usage,
            model_called=True,
        )

    def should_replan(self, completed_since_last_replan: int, queue_empty: bool) -> bool:
        """True every ``replan_every`` completed leads (exactly at the boundary and beyond) or
        when no dispatched lead is outstanding."""
        return queue_empty or completed_since_last_replan >= self.caps.replan_every

    def depth_exhausted(self, depth: int) -> bool:
        """True when ``depth`` replan rounds already reach the cap (always, for -1)."""
        return depth >= self.caps.follow_up_rounds

    def depth_cap_reason(self) -> str:
        """One line naming the cap, for the stop reason; makes no call."""
        s = self.caps
        if s.max_depth == DEPTH_NONE:
            return "follow-up rounds disabled (max_depth=-1): initial decomposition only"
        shown = f"max_depth={s.max_depth}" if s.max_depth else "max_depth unset, default"
        return f"depth cap reached: {s.follow_up_rounds} follow-up round(s) ({shown})"

