"""``planner-svc eval`` input errors: one line naming the problem, exit code 2, no traceback."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pytest

from planner_svc.cli import main
from planner_svc.client.eval import budget_list

GOOD = json.dumps({"id": "s1", "type": "single", "question": "Who?", "gold": ["A"],
                   "answer": "x"}) + "\n"


def test_budget_lists_parse_sorted_and_distinct() -> None:
    assert budget_list("1500,250, 500") == (250, 500, 1500)
    assert budget_list("7") == (7,)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("250,,500", "'250,,500' is not a comma-separated list of budgets (e.g. 250,500,1000)"),
        ("", "'' is not a comma-separated list of budgets (e.g. 250,500,1000)"),
        ("250,abc", "'abc' is not an integer"),
        ("0,500", "budget 0 is outside 1..10000000"),
        ("500,250,500", "budget 500 appears more than once"),
        (",".join(str(b) for b in range(1, 22)), "21 budgets; at most 20"),
    ],
)
def test_bad_budget_lists_name_the_problem(value: str, message: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError) as info:
        budget_list(value)
    assert str(info.value) == message


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = main(["eval", *argv])
    except SystemExit as exc:
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_bad_budgets_flag_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(GOOD)
    code, out, err = run([str(questions), "--budgets", "250,x"], capsys)
    assert (code, out, err) == (2, "", "planner-svc eval: bad --budgets: 'x' is not an integer\n")
    code, _, err = run([str(questions), "--budgets", "250", "--budget", "250"], capsys)
    assert code == 2
    assert "not allowed with argument" in err.splitlines()[-1]


def test_bad_question_files_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(GOOD + json.dumps({"id": "s2", "type": "trivia", "question": "Q?",
                                      "gold": ["A"], "answer": "x"}) + "\n")
    code, out, err = run([str(bad), "--budget", "500", "--data", str(tmp_path)], capsys)
    assert (code, out) == (2, "")
    assert err == (f"planner-svc eval: bad questions: {bad} line 2: type: must be one of "
                   "('single', 'multi', 'compare', 'unanswerable'), got 'trivia'\n")
    missing = tmp_path / "missing.jsonl"
    code, out, err = run([str(missing), "--budget", "500"], capsys)
    assert (code, out) == (2, "")
    assert err == (f"planner-svc eval: cannot read questions: {missing}: "
                   "No such file or directory\n")


def test_a_missing_store_or_plot_folder_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    questions = tmp_path / "q.jsonl"
    questions.write_text(GOOD)
    code, _, err = run([str(questions), "--budget", "500", "--data", str(tmp_path / "none")],
                       capsys)
    assert (code, err) == (2, f"planner-svc eval: no store under {tmp_path / 'none'} "
                              "(use --data, or --store)\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "store.sqlite").write_bytes(b"")
    plot = tmp_path / "nowhere" / "sweep.png"
    code, _, err = run([str(questions), "--budgets", "250,500", "--data",
                        str(tmp_path / "data"), "--plot", str(plot)], capsys)
    assert (code, err) == (2, f"planner-svc eval: cannot write the plot: no folder "
                              f"{plot.parent}\n")


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (b"this is not a database" * 100, "file is not a database"),
        (None, "has schema version 99; this build reads up to"),
    ],
)
def test_an_unreadable_store_exits_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: bytes | None, reason: str
) -> None:
    import sqlite3

    questions = tmp_path / "q.jsonl"
    questions.write_text(GOOD)
    data = tmp_path / "data"
    data.mkdir()
    if content is None:
        with sqlite3.connect(data / "store.sqlite") as conn:
            conn.execute("PRAGMA user_version = 99")
    else:
        (data / "store.sqlite").write_bytes(content)
    code, out, err = run([str(questions), "--budget", "500", "--data", str(data)], capsys)
    assert (code, out) == (2, "")
    assert err.startswith("planner-svc eval: cannot open the store: ")
    assert reason in err
    assert len(err.splitlines()) == 1


def test_a_bad_timeout_is_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(["q.jsonl", "--budget", "500", "--timeout", "0"], capsys)
    assert code == 2
    assert err.splitlines()[-1] == (
        "planner-svc eval: error: argument --timeout: 0.0 is outside (0, 3600] seconds")
