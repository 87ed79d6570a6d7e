"""``planner-svc eval`` against a real server over the fixture: a two-budget sweep with both
baselines, the JSON report and the plot; and a real decline recognised as one."""

from __future__ import annotations

import json
from pathlib import Path

import grpc
import pytest

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.cli import main
from planner_svc.client.eval import is_decline
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration

QUESTIONS = [
    {"id": "t1", "type": "single", "question": "What was the name of Johnny Cash's backing band?",
     "gold": ["Johnny Cash"], "answer": "Tennessee Three"},
    {"id": "t2", "type": "unanswerable", "gold": [],
     "question": "How many parking spaces does the Brindlewood office of Tessaly Freight have?"},
]


def test_sweep_reports_every_budget_for_the_planner_and_both_baselines(
    live: Live, fixture_data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    plot = tmp_path / "sweep.png"
    code = main(["eval", str(questions), "--address", live.address,
                 "--data", str(fixture_data_dir), "--budgets", "600,300", "--json",
                 "--per-question", "--plot", str(plot)])
    out, err = capsys.readouterr()
    assert code == 0
    # the in-process server logs to stderr too; eval itself warned of nothing
    assert "planner-svc eval" not in err
    report = json.loads(out)
    assert report["questionFiles"] == [str(questions)]
    assert report["questionCount"] == 2
    assert report["bm25Index"]["documents"] == 375
    assert [(e["budget"], e["effectiveBudget"]) for e in report["budgets"]] == [
        (300, 270), (600, 540)]
    for entry in report["budgets"]:
        for system in ("planner", "cosineBaseline", "bm25Baseline"):
            assert set(entry[system]) == {"single", "answerable", "unanswerable"}
            assert entry[system]["unanswerable"]["n"] == 1
            assert set(entry[system]["single"]) == {
                "n", "goldCoverage", "allGold", "answerInPlan", "declined"}
        # the BM25 baseline finds the article by name and packs something for every question
        assert entry["bm25Baseline"]["single"]["allGold"] == 1.0
        assert entry["bm25Baseline"]["unanswerable"]["declined"] == 0.0
        assert set(entry["vsStrongerBaseline"]) == {"single"}
        assert [row["id"] for row in entry["questions"]] == ["t1", "t2"]
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_servers_insufficient_evidence_status_is_a_decline(live: Live) -> None:
    request = plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="zqxjkv wvqpzy"))
    with pytest.raises(grpc.RpcError) as info:
        live.planner.Plan(request, timeout=10)
    assert is_decline(info.value)


def test_eval_and_research_exit_3_when_no_server_answers(
    fixture_data_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from tests.serving import refused_address

    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS))
    with refused_address() as address:
        assert main(["eval", str(questions), "--address", address, "--timeout", "5",
                     "--data", str(fixture_data_dir), "--budget", "300"]) == 3
        assert capsys.readouterr().err.splitlines()[-1].startswith(
            "planner-svc eval: UNAVAILABLE: ")
        assert main(["research", "Who painted the Mona Lisa?", "--address", address,
                     "--timeout", "5"]) == 3
        assert capsys.readouterr().err.splitlines()[-1].startswith(
            "planner-svc research: UNAVAILABLE: ")
