"""Rank-order packing of the baselines: stop at the first misfit, or skip it and go on."""

from __future__ import annotations

from planner_svc.evaluation.packing import Candidate, PackedPlan, pack_skipping, pack_until_full


def cand(source_id: str, tokens: int, pieces: int = 1) -> Candidate:
    return Candidate(
        pieces=tuple((source_id, f"{source_id}#{i}") for i in range(pieces)), tokens=tokens
    )


RANKED = [cand("a", 40), cand("b", 70, pieces=2), cand("c", 25), cand("d", 35), cand("e", 5)]


def test_until_full_stops_at_the_first_candidate_that_does_not_fit() -> None:
    assert pack_until_full(RANKED, 100) == PackedPlan(source_ids=("a",), texts=("a#0",), used=40)
    assert pack_until_full(RANKED, 110) == PackedPlan(
        source_ids=("a", "b", "b"), texts=("a#0", "b#0", "b#1"), used=110)


def test_skipping_tries_every_later_candidate_and_keeps_rank_order() -> None:
    assert pack_skipping(RANKED, 100) == PackedPlan(
        source_ids=("a", "c", "d"), texts=("a#0", "c#0", "d#0"), used=100)
    assert pack_skipping(RANKED, 39) == PackedPlan(
        source_ids=("c", "e"), texts=("c#0", "e#0"), used=30)


def test_nothing_fits_gives_the_empty_plan() -> None:
    empty = PackedPlan(source_ids=(), texts=(), used=0)
    assert pack_skipping(RANKED, 4) == empty
    assert pack_until_full(RANKED, 39) == empty
    assert pack_skipping([], 1000) == empty
