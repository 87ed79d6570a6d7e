"""What ``planner-svc plan --explain`` prints of the recall trace and the stage timings."""

from __future__ import annotations

import pytest

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.client.common import (
    location_text,
    render_explanations,
    render_plan,
    render_recall,
    render_timings,
)


def test_recall_trace_shows_the_decision_and_the_best_documents() -> None:
    trace = plan_pb2.RecallTrace(
        documents=[
            plan_pb2.DocumentScore(source_id="wiki/Zambezi", score=1.0, structured=1.0,
                                   semantic=1.0, hop=0.019, hop_from="wiki/Zambia"),
            plan_pb2.DocumentScore(source_id="wiki/Zambia", score=1.0, structured=1.0,
                                   semantic=0.5),
            plan_pb2.DocumentScore(source_id="wiki/Lusaka", score=0.64, hop=0.64,
                                   hop_from="wiki/Zambia", residual_terms=["altitud"]),
            *(plan_pb2.DocumentScore(source_id=f"wiki/D{i}", score=0.1) for i in range(3)),
        ],
        abstention=plan_pb2.Abstention(coverage=0.52, best_source="wiki/Zambia + wiki/Lusaka",
                                       similarity=0.64, min_coverage=0.4, min_similarity=0.65),
    )
    lines = render_recall(trace, documents=4).splitlines()
    assert lines[0] == ("abstention: answered: coverage 0.520 (min 0.40, wiki/Zambia + "
                        "wiki/Lusaka), similarity 0.640 (min 0.65)")
    # ranked by its direct scores; the weaker hop that also reached it comes second
    assert lines[2] == (" 1.000  1.000  1.000  0.019  wiki/Zambezi  "
                        "(direct; also a hop from wiki/Zambia)")
    assert lines[3] == " 1.000  1.000  0.500  0.000  wiki/Zambia"
    assert lines[4] == (" 0.640  0.000  0.000  0.640  wiki/Lusaka  "
                        "(hop from wiki/Zambia; residual altitud)")
    assert lines[-1] == "... 2 more documents"
    declined = plan_pb2.RecallTrace(abstention=plan_pb2.Abstention(coverage=0.1, declined=True))
    assert render_recall(declined).startswith(
        "abstention: declined: coverage 0.100 (min 0.00, no document), similarity n/a")
    # similar enough, yet declined: no document holds a term, so the similarity did not count
    gibberish = plan_pb2.RecallTrace(abstention=plan_pb2.Abstention(
        coverage=0.0, similarity=0.68, min_coverage=0.4, min_similarity=0.65, declined=True))
    assert render_recall(gibberish).splitlines()[0] == (
        "abstention: declined: coverage 0.000 (min 0.40, no document), similarity 0.680 "
        "(min 0.65; not counted: no document holds a term of the question)")


def test_stage_timings_print_in_milliseconds_with_their_total() -> None:
    timings = [plan_pb2.StageTiming(stage="semantic", duration_us=1250),
               plan_pb2.StageTiming(stage="select", duration_us=300)]
    assert render_timings(timings).splitlines() == [
        "stages (ms, 1.55 in all):",
        "    semantic     1.25",
        "      select     0.30",
    ]


def test_plan_table_shows_each_span_location() -> None:
    def span(source: str, text: str, **where: object) -> plan_pb2.PlannedSpan:
        out = plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id=source, end=len(text)),
                                   kind="paragraph", tokens=4, weight=0.5, text=text)
        if where:
            out.location.CopyFrom(plan_pb2.SpanLocation(**where))  # type: ignore[arg-type]
        return out

    plan = plan_pb2.EvidencePlan(spans=[
        span("handbook.pdf", "Inspect every week.", page=2, heading_path=["Swarm control"]),
        span("varroa.html", "Count mites.", heading_path=["The varroa mite", "Monitoring"]),
        span("mite-counts.ipynb", "Hive 2 is above.", cell_index=4, heading_path=["Finding"]),
        span("README.txt", "Shared folder."),
    ], plan_hash="b3:" + "0" * 64)
    assert [location_text(s) for s in plan.spans] == [
        "p. 2 \u00b7 Swarm control", "The varroa mite \u203a Monitoring",
        "cell 4 \u00b7 Finding", ""]
    lines = render_plan(plan, width=120).splitlines()
    assert lines[0].split() == ["source", "kind", "location", "tokens", "weight", "text"]
    assert lines[1] == ("handbook.pdf       paragraph  p. 2 \u00b7 Swarm control"
                        "               4  0.5000  Inspect every week.")
    assert "The varroa mite \u203a Monitoring" in lines[2]
    assert lines[4].startswith("README.txt         paragraph                         ")


def test_an_ungrounded_empty_plan_says_so_rather_than_used_0_of_0() -> None:
    plan = plan_pb2.EvidencePlan(plan_hash="b3:" + "1" * 64, budget=0, used=0,
                                 stats=plan_pb2.PlanStats(nodes_recalled=12, structured_hits=3))
    lines = render_plan(plan, width=120).splitlines()
    assert lines == [
        "plan b3:" + "1" * 64 + "  empty: no span to cite (the ungrounded plan "
        "--allow-ungrounded asks for when recall declines or finds nothing)",
        "recall: 12 passages scored; documents by the structured leg 3, by hops 0; "
        "semantic neighbours 0",
    ]
    grounded = plan_pb2.EvidencePlan(plan_hash="b3:" + "2" * 64, budget=100)
    assert "used 0/100 tokens" in render_plan(grounded, width=120)
    no_room = plan_pb2.EvidencePlan(plan_hash="b3:" + "3" * 64, budget=0, stats=plan_pb2.PlanStats(
        pool_spans=4, skipped_budget_full=4))  # a budget of 1 token: 0 once the margin is off
    assert "used 0/0 tokens  0/4 spans" in render_plan(no_room, width=120)


def test_explained_densities_keep_their_order_visible() -> None:
    from planner_svc.client.common import render_explanations

    plan = plan_pb2.EvidencePlan(explanations=[
        plan_pb2.CandidateExplanation(
            candidate=plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id=f"wiki/D{i}",
                                                                 start=0, end=9),
                                           weight=weight, tokens=100),
            fate=plan_pb2.CANDIDATE_FATE_BUDGET_FULL, density=weight / 100)
        for i, weight in enumerate([2.4e-4, 7.1e-5])])
    lines = render_explanations(plan, width=200).splitlines()
    assert "2.400e-06 2.400e-04" in lines[1] and "wiki/D0" in lines[1]
    assert "7.100e-07 7.100e-05" in lines[2] and "wiki/D1" in lines[2]


def _plan_with_stats(budget: int, **stats: int) -> plan_pb2.EvidencePlan:
    text = "Heading"
    span = plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id="runbook.md", end=len(text)),
                                kind="heading", tokens=9, weight=0.05, text=text)
    return plan_pb2.EvidencePlan(plan_hash="b3:00", budget=budget, used=9, spans=[span],
                                 stats=plan_pb2.PlanStats(**stats))  # type: ignore[arg-type]


def test_a_budget_left_unused_by_the_cap_gets_advice() -> None:
    stranded = _plan_with_stats(90, cap_skipped=1, budget_stranded_by_cap=81, cap_tokens=36)
    lines = render_plan(stranded, width=120).splitlines()
    assert lines[-2] == ("note: 81 of 90 tokens unused, and the per-source cap (36 tokens a "
                         "source) refused 1 span(s), one at least that would have fit the "
                         "budget; a span larger than the cap is never selected: raise "
                         "--max-frac-per-source (or --budget, which scales the cap)")
    # a few tokens stranded (under a quarter of the budget): no note
    few = _plan_with_stats(360, cap_skipped=1, budget_stranded_by_cap=2, cap_tokens=144)
    assert not any(line.startswith("note:") for line in render_plan(few).splitlines())


def test_explanations_list_every_packed_span_and_the_densest_others() -> None:
    packed, full = plan_pb2.CANDIDATE_FATE_PACKED, plan_pb2.CANDIDATE_FATE_BUDGET_FULL
    cap, deduped = plan_pb2.CANDIDATE_FATE_CAP_BLOCKED, plan_pb2.CANDIDATE_FATE_DEDUPED
    # (source, fate, density), in the order the plan gives them: not by density, with a tie
    pool = [("a", full, 0.2), ("b", packed, 0.05), ("c", cap, 0.9), ("d", full, 0.5),
            ("e", deduped, 0.5), ("f", full, 0.01), ("g", packed, 0.7), ("h", cap, 0.3)]
    plan = plan_pb2.EvidencePlan(explanations=[
        plan_pb2.CandidateExplanation(
            candidate=plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id=source, end=10),
                                           tokens=5, weight=0.5),
            fate=fate, density=density,
            legs=plan_pb2.LegScores(structured=0.5, expanded=0.25))
        for source, fate, density in pool])

    def sources(text: str) -> list[str]:
        return [line.rsplit(None, 1)[-1].split("[")[0] for line in text.splitlines()[1:]
                if not line.startswith("...")]

    two = render_explanations(plan, width=200, others=2)
    lines = two.splitlines()
    assert lines[0].split() == ["fate", "density", "weight", "tokens", "struct/sem/hop", "local",
                                "rank", "span"]
    # densest first; both packed spans, however light, and the two densest of the others
    # (d before e: equal densities keep the plan's order)
    assert sources(two) == ["c", "g", "d", "b"]
    three = render_explanations(plan, width=200, others=3)
    assert sources(three) == ["c", "g", "d", "e", "b"]
    assert lines[1].split()[:5] == ["cap", "blocked", "9.000e-01", "5.000e-01", "5"]
    assert lines[1].split()[5] == "0.500/-/0.250"  # the semantic leg did not reach it
    assert lines[-1] == "... 4 more candidates (1 deduped, 2 budget full, 1 cap blocked)"
    assert render_explanations(plan, width=200, others=5).splitlines()[-1] == (
        "... 1 more candidate (1 budget full)")
    everything = render_explanations(plan, width=200)
    assert sources(everything) == ["c", "g", "d", "e", "h", "a", "b", "f"]
    assert render_explanations(plan, width=200, others=6) == everything
    assert render_explanations(plan, width=200, others=100) == everything
    assert sources(render_explanations(plan, width=200, others=0)) == ["g", "b"]
    with pytest.raises(ValueError, match="others must be >= 0"):
        render_explanations(plan, others=-1)


def test_explanations_count_a_fate_this_client_does_not_name() -> None:
    plan = plan_pb2.EvidencePlan(explanations=[
        plan_pb2.CandidateExplanation(
            candidate=plan_pb2.PlannedSpan(span=plan_pb2.SpanRef(source_id="a", end=4)),
            fate=fate, density=0.5)  # type: ignore[arg-type]
        for fate in (0, 7, 7, plan_pb2.CANDIDATE_FATE_BUDGET_FULL)])
    assert render_explanations(plan, width=200, others=0).splitlines()[1:] == [
        "... 4 more candidates (1 budget full, 3 ?)"]
    only_unknown = plan_pb2.EvidencePlan(explanations=plan.explanations[:3])
    assert render_explanations(only_unknown, width=200, others=0).splitlines()[1:] == [
        "... 3 more candidates (3 ?)"]
    line = render_explanations(only_unknown, width=200, others=1).splitlines()[1]
    assert line.startswith("?            5.000e-01")
