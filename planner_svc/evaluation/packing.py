"""Rank-order packing shared by the baselines (pure: no I/O).

A baseline ranks candidates (a passage with its spans, or a whole document) and packs them in
rank order under a token budget. Two rules:

- :func:`pack_until_full`: the first candidate that does not fit ends the plan (the naive
  cosine baseline);
- :func:`pack_skipping`: a candidate that does not fit is skipped and the next one tried, so the
  plan keeps filling the remaining budget with lower-ranked candidates that do fit (the BM25
  baseline).

Neither deduplicates, reorders by density nor caps a source: that is what the planner adds.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class Candidate:
    """One ranked unit, taken whole or not at all.

    Attributes:
        pieces: ``(source_id, text)`` of each span the unit contributes (non-empty).
        tokens: what the unit costs, tokens (the sum over its pieces).
    """

    pieces: tuple[tuple[str, str], ...]
    tokens: int


@dataclass(frozen=True, slots=True, kw_only=True)
class PackedPlan:
    """A baseline's plan.

    Attributes:
        source_ids, texts: one entry per selected span, parallel, in rank order.
        used: tokens spent, <= the budget packed against.
    """

    source_ids: tuple[str, ...]
    texts: tuple[str, ...]
    used: int


def _plan(chosen: list[Candidate]) -> PackedPlan:
    pieces = [piece for cand in chosen for piece in cand.pieces]
    return PackedPlan(source_ids=tuple(sid for sid, _ in pieces),
                      texts=tuple(text for _, text in pieces),
                      used=sum(cand.tokens for cand in chosen))


def pack_until_full(ranked: Iterable[Candidate], budget: int) -> PackedPlan:
    """Take candidates in rank order until one does not fit ``budget`` (tokens); stop there."""
    chosen: list[Candidate] = []
    used = 0
    for cand in ranked:
        if used + cand.tokens > budget:
            break
        chosen.append(cand)
        used += cand.tokens
    return _plan(chosen)


def pack_skipping(ranked: Iterable[Candidate], budget: int) -> PackedPlan:
    """Take candidates in rank order; one that does not fit the remaining ``budget`` (tokens)
    is skipped and the next one tried, to the end of ``ranked``."""
    chosen: list[Candidate] = []
    used = 0
    for cand in ranked:
        if used + cand.tokens > budget:
            continue
        chosen.append(cand)
        used += cand.tokens
    return _plan(chosen)
