"""The Plan RPC on a real server over the Wikipedia fixture."""

from __future__ import annotations

from collections import Counter

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_health.v1 import health_pb2, health_pb2_grpc
from grpc_status import rpc_status
from prometheus_client import REGISTRY

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.client.common import FATE_NAMES, question_request
from planner_svc.core.plan_hash import EMPTY_PLAN_HASH, plan_hash
from planner_svc.recall.timing import PLAN_STAGES
from planner_svc.server.convert import plan_from_proto
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration

FIXTURE_DOCUMENTS = 375
"""Documents of tests/fixtures/wiki_fixture.jsonl (one version of each)."""


def _field_violation(err: grpc.RpcError) -> tuple[str, str]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None, "INVALID_ARGUMENT must carry rich details"
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            violation = bad.field_violations[0]
            return violation.field, violation.description
    raise AssertionError("no BadRequest detail")


def _sources(plan: plan_pb2.EvidencePlan) -> set[str]:
    return {s.span.source_id for s in plan.spans}


def test_health_and_reflection_serve(live: Live) -> None:
    health = health_pb2_grpc.HealthStub(live.channel)
    reply = health.Check(health_pb2.HealthCheckRequest(service="planner.v1.EvidencePlannerService"))
    assert reply.status == health_pb2.HealthCheckResponse.SERVING


def test_single_hop_question_finds_the_answer_span(live: Live) -> None:
    plan = live.planner.Plan(
        question_request(
            "In which present-day country did goats first get domesticated, according to "
            "archaeological evidence?",
            budget_tokens=500,
        ),
        timeout=30,
    ).plan
    assert "wiki/Capra_(genus)" in _sources(plan)
    assert any("domestication occurred in Iran" in s.text for s in plan.spans)
    assert 0 < plan.used <= plan.budget
    # 500 requested, every span estimated -> floor(500 * 0.9)
    assert plan.budget == 450
    assert plan.stats.token_estimate


def test_multi_hop_question_reaches_the_linked_article(live: Live) -> None:
    question = (
        "The women's fast-pitch version of a diamond-field bat-and-ball sport with underhand "
        "pitching entered a major multi-sport event in 1996. In which city were the very first "
        "of those Games staged?"
    )
    plan = live.planner.Plan(question_request(question, budget_tokens=1500), timeout=30).plan
    assert "wiki/Summer_Olympic_Games" in _sources(plan)
    assert any("Athens" in s.text for s in plan.spans)


def test_plan_is_reproducible_and_its_hash_recomputes(live: Live) -> None:
    request = question_request("Which port is the world's busiest by cargo tonnage?",
                               budget_tokens=800)
    first = live.planner.Plan(request, timeout=30).plan
    second = live.planner.Plan(request, timeout=30).plan
    assert first.plan_hash == second.plan_hash
    assert first.SerializeToString(deterministic=True) == second.SerializeToString(
        deterministic=True
    )
    core = plan_from_proto(first)
    assert plan_hash(core.plan_model, core.budget, core.used, core.spans) == first.plan_hash
    keys = [(s.span.source_id, s.span.source_version_tx, s.span.start, s.span.end)
            for s in first.spans]
    assert keys == sorted(keys)
    per_source: dict[str, int] = {}
    for s in first.spans:
        per_source[s.span.source_id] = per_source.get(s.span.source_id, 0) + s.tokens
    assert max(per_source.values()) <= first.stats.cap_tokens == int(0.4 * first.budget)


def test_explain_lists_every_candidate_with_its_fate(live: Live) -> None:
    question = "In which present-day country did goats first get domesticated?"
    request = question_request(question, budget_tokens=300, explain=True)
    response = live.planner.Plan(request, timeout=30)
    plan = response.plan
    assert len(plan.explanations) == plan.stats.pool_spans > 0
    fates = [e.fate for e in plan.explanations]
    assert fates.count(plan_pb2.CANDIDATE_FATE_PACKED) == plan.stats.selected_spans
    assert fates.count(plan_pb2.CANDIDATE_FATE_DEDUPED) == plan.stats.deduped
    assert fates.count(plan_pb2.CANDIDATE_FATE_BUDGET_FULL) == plan.stats.skipped_budget_full
    assert fates.count(plan_pb2.CANDIDATE_FATE_CAP_BLOCKED) == plan.stats.cap_skipped
    assert fates.count(plan_pb2.CANDIDATE_FATE_UNPACKABLE) == plan.stats.skipped_unpackable
    assert all(e.legs.node_id and e.legs.fused > 0 for e in plan.explanations)
    assert all(0.0 <= e.legs.local <= 1.0 for e in plan.explanations)
    assert any(e.legs.rank == 0 for e in plan.explanations)
    # the recall trace: documents best first, the abstention decision and its inputs
    documents = response.recall.documents
    assert documents and documents[0].score == 1.0
    assert [d.score for d in documents] == sorted((d.score for d in documents), reverse=True)
    assert {s.span.source_id for s in plan.spans} <= {d.source_id for d in documents}
    abstention = response.recall.abstention
    assert not abstention.declined
    assert abstention.coverage >= abstention.min_coverage > 0.0
    assert abstention.best_source
    # explain does not change the plan, and without it there is no trace
    plain = live.planner.Plan(question_request(question, budget_tokens=300), timeout=30)
    assert plain.plan.plan_hash == plan.plan_hash
    assert not plain.HasField("recall")


def _stage_count(stage: str) -> float:
    return REGISTRY.get_sample_value("planner_plan_stage_duration_seconds_count",
                                     {"stage": stage}) or 0.0


def test_each_stage_is_timed_in_the_explain_response_and_the_stage_histogram(live: Live) -> None:
    question = "In which present-day country did goats first get domesticated?"
    before = {stage: _stage_count(stage) for stage in PLAN_STAGES}
    response = live.planner.Plan(question_request(question, budget_tokens=300, explain=True),
                                 timeout=30)
    timings = [(t.stage, t.duration_us) for t in response.timings]
    names = [stage for stage, _ in timings]
    # every stage a question plan runs, once each, in the order the stages first run
    assert names == [s for s in PLAN_STAGES if s in names]
    assert {"request", "queue", "catalog", "question", "semantic", "structured", "fusion",
            "hops", "passages", "abstention", "trace", "pool", "tokens", "select", "hash",
            "texts", "response"} == set(names)
    assert sum(us for _, us in timings) > 0
    # the histogram counted one observation for each of them (the servicer observes every plan)
    after = {stage: _stage_count(stage) for stage in PLAN_STAGES}
    assert {s for s in PLAN_STAGES if after[s] - before[s] == 1} == set(names)
    # without explain the response carries no timings, yet the stages are still observed
    plain = live.planner.Plan(question_request(question, budget_tokens=300), timeout=30)
    assert not plain.timings
    assert _stage_count("select") == after["select"] + 1
    assert _stage_count("trace") == after["trace"]


def test_a_question_the_store_cannot_answer_is_declined_with_its_evidence(live: Live) -> None:
    question = "What is the refund window of the Qorvlith Fenmarsh web shop?"
    with pytest.raises(grpc.RpcError) as info:
        live.planner.Plan(question_request(question), timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    status = rpc_status.from_call(info.value)  # type: ignore[arg-type]
    assert status is not None
    infos = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            ei = error_details_pb2.ErrorInfo()
            detail.Unpack(ei)
            infos.append(ei)
    assert [i.reason for i in infos] == ["INSUFFICIENT_EVIDENCE"]
    meta = infos[0].metadata
    assert float(meta["coverage"]) < float(meta["min_coverage"])
    assert float(meta["similarity"]) < float(meta["min_similarity"])
    assert meta["live_documents"] == str(FIXTURE_DOCUMENTS)
    # allow_ungrounded with explain: an empty plan and the same decision in the trace
    response = live.planner.Plan(question_request(question, allow_ungrounded=True, explain=True),
                                 timeout=10)
    assert response.plan.plan_hash == EMPTY_PLAN_HASH
    assert response.recall.abstention.declined
    assert f"{response.recall.abstention.coverage:.4f}" == meta["coverage"]


@pytest.mark.parametrize(
    ("request_msg", "field"),
    [
        (plan_pb2.PlanRequest(), "question"),
        (plan_pb2.PlanRequest(question="  "), "question"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="  ")), "structured.text"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(limit=5)), "structured.text"),
        (plan_pb2.PlanRequest(question="cash", structured=plan_pb2.StructuredRecall(text="")),
         "structured.text"),
        (plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(k=5)), "semantic.text"),
        (plan_pb2.PlanRequest(question="cash", semantic=plan_pb2.SemanticRecall(text=" ")),
         "semantic.text"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="cash"), expand_depth=3),
         "expand_depth"),
        (plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(text="cash", alpha=1.5)),
         "semantic.alpha"),
        (plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(
            vector=plan_pb2.VectorQuery(values=[0.1, 0.2]))), "semantic.vector"),
        (plan_pb2.PlanRequest(semantic=plan_pb2.SemanticRecall(
            vector=plan_pb2.VectorQuery(values=[0.0] * 256))), "semantic.vector"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="cash"),
                              max_frac_per_source=0.0), "max_frac_per_source"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="cash"), dedup_overlap=2.0),
         "dedup_overlap"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="cash"),
                              budget_tokens=10**12), "budget_tokens"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="cash"), budget_tokens=0),
         "budget_tokens"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(
            text="Paris", labels=[f"l{i}" for i in range(1100)])), "structured.labels"),
        (plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(
            text="Paris", properties={f"k{i}": "v" for i in range(1100)})),
         "structured.properties"),
    ],
)
def test_invalid_requests_name_the_field(
    live: Live, request_msg: plan_pb2.PlanRequest, field: str
) -> None:
    with pytest.raises(grpc.RpcError) as info:
        live.planner.Plan(request_msg, timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    got_field, reason = _field_violation(info.value)
    assert got_field == field
    assert reason


def test_no_evidence_is_failed_precondition_unless_ungrounded_allowed(live: Live) -> None:
    request = plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="zqxjkv wvqpzy"))
    with pytest.raises(grpc.RpcError) as info:
        live.planner.Plan(request, timeout=10)
    assert info.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
    status = rpc_status.from_call(info.value)  # type: ignore[arg-type]
    assert status is not None
    reasons = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            ei = error_details_pb2.ErrorInfo()
            detail.Unpack(ei)
            reasons.append(ei.reason)
    assert reasons == ["INSUFFICIENT_EVIDENCE"]
    request.allow_ungrounded = True
    plan = live.planner.Plan(request, timeout=10).plan
    assert plan.plan_hash == EMPTY_PLAN_HASH
    assert (len(plan.spans), plan.budget, plan.used) == (0, 0, 0)


def test_as_of_before_the_corpus_sees_nothing(live: Live) -> None:
    request = question_request("Johnny Cash backing band", at_tx_us=1, allow_ungrounded=True)
    plan = live.planner.Plan(request, timeout=10).plan
    assert plan.plan_hash == EMPTY_PLAN_HASH
    request.at_tx = 2_000_000_000_000_000
    assert live.planner.Plan(request, timeout=10).plan.spans


def test_caller_vector_matches_text_query(live: Live) -> None:
    from planner_svc.embed import default_embedder

    text = "goats first domesticated archaeological evidence"
    vec = default_embedder().embed([text])[0]
    by_text = live.planner.Plan(plan_pb2.PlanRequest(
        semantic=plan_pb2.SemanticRecall(text=text, k=5), budget_tokens=400), timeout=10).plan
    by_vec = live.planner.Plan(plan_pb2.PlanRequest(
        semantic=plan_pb2.SemanticRecall(vector=plan_pb2.VectorQuery(values=vec.tolist()), k=5),
        budget_tokens=400), timeout=10).plan
    assert by_text.plan_hash == by_vec.plan_hash
    assert by_text.spans


def test_request_id_is_echoed_on_success_and_on_error(live: Live) -> None:
    _, call = live.planner.Plan.with_call(
        question_request("Johnny Cash", budget_tokens=200), timeout=10,
        metadata=(("x-request-id", "req-ok-1"),))
    assert ("x-request-id", "req-ok-1") in tuple(call.trailing_metadata())
    with pytest.raises(grpc.RpcError) as info:
        live.planner.Plan(plan_pb2.PlanRequest(), timeout=10,
                          metadata=(("x-request-id", "req-bad-1"),))
    trailers = dict(info.value.trailing_metadata())  # type: ignore[attr-defined]
    assert trailers.get("x-request-id") == "req-bad-1"
    assert _field_violation(info.value)[0] == "question"  # rich details survive too


def test_plan_command_names_its_flag_and_explains_a_decline(
    live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    from planner_svc.cli import main

    question = "What is the refund window of the Qorvlith Fenmarsh web shop?"
    assert main(["plan", question, "--address", live.address, "--explain"]) == 4  # declined
    lines = capsys.readouterr().err.splitlines()  # the in-process server logs there too
    said = [line for line in lines if line.startswith("planner-svc plan: ")]
    assert len(said) == 1
    assert said[0].startswith("planner-svc plan: FAILED_PRECONDITION: insufficient evidence")
    assert said[0].endswith("; pass --allow-ungrounded for an empty plan")
    shown = dict(line.strip().split(" = ", 1) for line in lines if line.startswith("  "))
    assert float(shown["coverage"]) < float(shown["min_coverage"])
    assert float(shown["similarity"]) < float(shown["min_similarity"])
    assert shown["live_documents"] == str(FIXTURE_DOCUMENTS)


def test_plan_command_lists_the_packed_spans_and_the_densest_others(
    live: Live, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from planner_svc.cli import main
    from planner_svc.client.plan import EXPLAIN_SPANS

    monkeypatch.setenv("COLUMNS", "400")  # no span reference clipped

    response = live.planner.Plan(question_request("Johnny Cash", budget_tokens=200,
                                                  explain=True), timeout=30)
    ordered = sorted(response.plan.explanations, key=lambda e: -e.density)
    packed = plan_pb2.CANDIDATE_FATE_PACKED
    others = [e for e in ordered if e.fate != packed]
    assert len(others) > EXPLAIN_SPANS and any(e.fate == packed for e in ordered)

    def table(*flags: str) -> list[str]:
        capsys.readouterr()
        assert main(["plan", "Johnny Cash", "--budget", "200", "--address", live.address,
                     "--explain", *flags]) == 0
        out = capsys.readouterr().out.splitlines()
        return out[next(i for i, line in enumerate(out) if line.startswith("fate ")) + 1:]

    def ref(e: plan_pb2.CandidateExplanation) -> str:
        return f"{e.candidate.span.source_id}[{e.candidate.span.start}:{e.candidate.span.end}]"

    shown = table("--explain-spans", "3")
    kept = {id(e) for e in others[:3]}
    wanted = [ref(e) for e in ordered if e.fate == packed or id(e) in kept]
    assert [line.rsplit("  ", 1)[-1].split(" (by [")[0] for line in shown[:-1]] == wanted
    left = Counter(FATE_NAMES[e.fate] for e in others[3:])
    counts = ", ".join(f"{left[name]} {name}" for name in FATE_NAMES.values() if left[name])
    assert shown[-1] == f"... {len(others) - 3} more candidates ({counts})"
    assert len(table("--explain-spans", "-1")) == len(ordered)
    default = table()
    assert len(default) == len(ordered) - (len(others) - EXPLAIN_SPANS) + 1
    assert default[-1].startswith(f"... {len(others) - EXPLAIN_SPANS} more candidates (")
    capsys.readouterr()
    # refused before any call: no server listens at port 1 (a call would exit 3)
    assert main(["plan", "Johnny Cash", "--address", "127.0.0.1:1", "--explain-spans", "3"]) == 2
    said = capsys.readouterr()
    assert said.out == ""
    assert "error: --explain-spans only applies with --explain" in said.err


def test_plan_command_exits_3_when_no_server_answers(
    capsys: pytest.CaptureFixture[str]
) -> None:
    from planner_svc.cli import main
    from tests.serving import refused_address

    with refused_address() as address:
        assert main(["plan", "Who painted the Mona Lisa?", "--address", address,
                     "--timeout", "5"]) == 3
    said = capsys.readouterr().err.splitlines()
    assert said[-1].startswith("planner-svc plan: UNAVAILABLE: ")
    assert f"is `planner-svc serve` running at {address}?" in said[-1]


def test_plan_command_notes_a_model_the_server_cannot_count(
    live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    from planner_svc.cli import main

    question = "Who painted the Mona Lisa?"
    assert main(["plan", question, "--address", live.address, "--model", "gpt-4o-typo"]) == 0
    captured = capsys.readouterr()
    notes = [line for line in captured.err.splitlines() if line.startswith("planner-svc plan: ")]
    assert notes == ["planner-svc plan: note: the server has no tokenizer for model "
                     "'gpt-4o-typo'; token counts are estimates (its model registry lists the "
                     "models it counts exactly)"]
    assert "(token estimate)" in captured.out
    assert main(["plan", question, "--address", live.address]) == 0  # no model asked: no note
    assert not [line for line in capsys.readouterr().err.splitlines()
                if line.startswith("planner-svc plan: ")]


def test_plan_command_raises_the_per_source_cap(
    live: Live, capsys: pytest.CaptureFixture[str]
) -> None:
    import json
    import math

    from planner_svc.cli import main

    question = "Who painted the Mona Lisa?"
    shown = []
    for cap in ([], ["--max-frac-per-source", "1.0"]):
        assert main(["plan", question, "--address", live.address, "--budget", "300", "--json",
                     *cap]) == 0
        shown.append(json.loads(capsys.readouterr().out))
    # the server's default cap is 0.4 of the (effective) budget; the flag asks for all of it
    budget = int(shown[0]["budget"])
    assert shown[1]["budget"] == shown[0]["budget"]
    assert shown[0]["stats"]["capTokens"] == str(math.floor(0.4 * budget))
    assert shown[1]["stats"]["capTokens"] == str(budget)
    with pytest.raises(SystemExit) as info:
        main(["plan", question, "--address", live.address, "--max-frac-per-source", "0"])
    assert info.value.code == 2
    assert "0.0 is outside" in capsys.readouterr().err
