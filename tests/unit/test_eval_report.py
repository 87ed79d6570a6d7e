"""The report's text tables and its sweep plot, from a tiny report dict (no server)."""

from __future__ import annotations

import struct
from pathlib import Path
from typing import Any

import pytest

from planner_svc.evaluation.metrics import judge
from planner_svc.evaluation.plot import plot_report
from planner_svc.evaluation.report import budget_table, report_text

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def row(cov: float, all_gold: float, answer: float, n: int = 2) -> dict[str, float | int]:
    return {"n": n, "goldCoverage": cov, "allGold": all_gold, "answerInPlan": answer,
            "declined": 0.0}


def entry(budget: int, lift: float, *, unanswerable: bool = True,
          compare: bool = False) -> dict[str, Any]:
    systems: dict[str, dict[str, dict[str, float | int]]] = {
        "planner": {"single": row(0.5 + lift, 0.5 + lift, 0.5), "multi": row(0.5, 0.0, 0.5),
                    "answerable": {"n": 4, "declined": 0.25}},
        "cosineBaseline": {"single": row(0.5, 0.5, 0.5), "multi": row(0.5, 0.5, 0.0),
                           "answerable": {"n": 4, "declined": 0.0}},
        "bm25Baseline": {"single": row(0.5, 0.5, 1.0), "multi": row(0.5, 0.0, 0.5),
                         "answerable": {"n": 4, "declined": 0.0}},
    }
    if compare:
        for name in systems:
            systems[name]["compare"] = row(1.0, 1.0, lift)
    if unanswerable:
        for name, share in (("planner", 0.5), ("cosineBaseline", 0.0), ("bm25Baseline", 0.0)):
            systems[name]["unanswerable"] = {"n": 2, "declined": share}
    return {"budget": budget, "effectiveBudget": budget * 9 // 10, **systems,
            "vsStrongerBaseline": judge(systems["planner"],
                                        {k: systems[k] for k in ("cosineBaseline",
                                                                 "bm25Baseline")})}


def report(*, unanswerable: bool = True, compare: bool = False) -> dict[str, Any]:
    return {"questionFiles": ["bench/eval/dev.jsonl", "extra/none.jsonl"], "questionCount": 6,
            "baselines": {"cosineK": 50, "bm25TopDocuments": 200},
            "bm25Index": {"documents": 3, "seconds": 0.01}, "seconds": 1.25,
            "budgets": [entry(b, lift, unanswerable=unanswerable, compare=compare)
                        for b, lift in ((250, 0.0), (500, 0.5), (1000, 0.5))]}


def test_budget_table_rows_and_verdicts() -> None:
    assert budget_table(entry(500, 0.5)).splitlines() == [
        "budget 500 tokens (effective 450)",
        "type           n  system   goldCoverage   allGold answerInPlan  declined",
        "single         2  planner         1.000     1.000        0.500     0.000",
        "                  cosine          0.500     0.500        0.500     0.000",
        "                  bm25            0.500     0.500        1.000     0.000",
        "                  vs best       >= both   >= both       < bm25",
        "multi          2  planner         0.500     0.000        0.500     0.000",
        "                  cosine          0.500     0.500        0.000     0.000",
        "                  bm25            0.500     0.000        0.500     0.000",
        "                  vs best       >= both  < cosine      >= bm25",
        "answerable     4  planner                                          0.250",
        "                  cosine                                           0.000",
        "                  bm25                                             0.000",
        "unanswerable   2  planner                                          0.500",
        "                  cosine                                           0.000",
        "                  bm25                                             0.000",
        "planner at or above the stronger baseline on 4 of 6 (type, metric) pairs",
    ]


def test_report_text_has_a_header_one_table_per_budget_and_the_legend() -> None:
    text = report_text(report())
    assert text.startswith("questions: bench/eval/dev.jsonl, extra/none.jsonl (6); "
                           "bm25 index: 3 documents in 0.01 s; run 1.2 s\n\n")
    assert [line for line in text.splitlines() if line.startswith("budget ")] == [
        "budget 250 tokens (effective 225)", "budget 500 tokens (effective 450)",
        "budget 1000 tokens (effective 900)"]
    assert "cosine: top-50 passages by cosine" in text
    assert "bm25: top-200 whole documents by BM25" in text


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == PNG_MAGIC
    assert data[12:16] == b"IHDR"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def test_plot_writes_a_png_with_a_panel_per_type_and_one_for_declines(tmp_path: Path) -> None:
    four = tmp_path / "sweep.png"
    plot_report(report(compare=True), four)
    # three types + the declined panel: a 2 x 2 grid at 10 x 7.5 in, 100 dpi
    assert png_size(four) == (1000, 750)
    three = tmp_path / "three.png"
    plot_report(report(), three)
    # two types + the declined panel: one row of 4.2 x 4 in panels
    assert png_size(three) == (1260, 400)
    two = tmp_path / "two.png"
    plot_report(report(unanswerable=False), two, dpi=50)
    assert png_size(two) == (420, 200)


def test_plot_of_a_report_without_budgets_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="no budget"):
        plot_report({**report(), "budgets": []}, tmp_path / "x.png")
