"""Leads: one unit of research work for one actor, and how they are spread over actors.

Source: the research planner reference ("LeadsAcross").
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from planner_svc.research.digest import SubQuestion


@dataclass(frozen=True, slots=True, kw_only=True)
class Lead:
    """One dispatch of one sub-question to one actor.

    Attributes:
        id: ``<session_id>-L<ordinal>``; the ordinal counts from 1 across the session.
        question_id: the digest-assigned sub-question ID.
        query: the sub-question's text.
        actor: the actor type that runs it (``web``, ``academic``, ...).
        depth: 0 for the initial decomposition, r for replan round r.
        ordinal: position of the lead in the session, from 1.
    """

    id: str
    question_id: str
    query: str
    actor: str
    depth: int
    ordinal: int


def leads_across(
    session_id: str,
    actors: Sequence[str],
    questions: Sequence[SubQuestion],
    *,
    depth: int,
    first_ordinal: int,
) -> list[Lead]:
    """One lead per sub-question, actors assigned round-robin by session-wide position.

    The lead with ordinal ``n`` goes to ``actors[(n - 1) % len(actors)]``: every actor gets
    work (a session asking for ``web`` and ``academic`` hands leads to both), no question is
    researched twice, and a replay of the same session assigns the same actor to the same
    lead. Counting across the session rather than within each batch keeps a round of one lead
    from always landing on the first actor.

    Args:
        session_id: prefix of the lead IDs.
        actors: the session's actor types, in order; at least one.
        questions: the sub-questions to dispatch, in order.
        depth: the round the leads belong to (0 = initial decomposition).
        first_ordinal: ordinal of the first lead (1 for a new session).

    Raises:
        ValueError: no actors, or ``first_ordinal < 1``.
    """
    if not actors:
        raise ValueError("actors: at least one actor is required")
    if first_ordinal < 1:
        raise ValueError(f"first_ordinal: {first_ordinal}; must be >= 1")
    leads = []
    for offset, q in enumerate(questions):
        ordinal = first_ordinal + offset
        leads.append(
            Lead(
                id=f"{session_id}-L{ordinal}",
                question_id=q.id,
                query=q.text,
                actor=actors[(ordinal - 1) % len(actors)],
                depth=depth,
                ordinal=ordinal,
            )
        )
    return leads
