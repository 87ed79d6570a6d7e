"""The human-readable form of an evaluation report (pure: text in, text out).

One table per budget: per question type the planner, the cosine baseline and the BM25 baseline,
then a ``vs best`` row marking, per quality metric, the stronger baseline and whether the planner
is at or above it (``>= bm25``) or below it (``< bm25``; ``both`` when the baselines tie).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from planner_svc.evaluation.metrics import ANSWERABLE_ROW
from planner_svc.evaluation.questions import ANSWERABLE_TYPES, UNANSWERABLE

LABELS = {"planner": "planner", "cosineBaseline": "cosine", "bm25Baseline": "bm25"}
"""Short table label of each system's report key."""

_ROWS = (*ANSWERABLE_TYPES, ANSWERABLE_ROW, UNANSWERABLE)
_WIDTHS = {"goldCoverage": 12, "allGold": 9, "answerInPlan": 12, "declined": 9}

LEGEND = (
    "cosine: top-{cosineK} passages by cosine, rank order, stop at the first that does not fit; "
    "bm25: top-{bm25TopDocuments} whole documents by BM25, rank order, skip what does not fit.\n"
    "vs best: the planner against the stronger baseline per metric (>= at or above, < below). "
    "declined: share of plans refused or empty (wrong for answerable questions); "
    "the baselines have no decline rule, theirs counts plans where nothing fit."
)


def _verdict(cell: Mapping[str, Any]) -> str:
    names = cell["stronger"]
    who = "both" if len(names) > 1 else LABELS.get(names[0], names[0])
    return f"{'>=' if cell['atOrAbove'] else '<'} {who}"


def budget_table(entry: Mapping[str, Any]) -> str:
    """The table of one budget entry of the report (see :mod:`planner_svc.evaluation.runner`)."""
    header = f"{'type':<12} {'n':>3}  {'system':<8}" + "".join(
        f" {m:>{w}}" for m, w in _WIDTHS.items()
    )
    lines = [f"budget {entry['budget']} tokens (effective {entry['effectiveBudget']})", header]
    planner = entry["planner"]
    for row in _ROWS:
        if row not in planner:
            continue
        for i, system in enumerate(LABELS):
            values = entry[system][row]
            first = f"{row:<12} {values['n']:>3}" if i == 0 else " " * 16
            cells = "".join(
                f" {values[m]:>{w}.3f}" if m in values else " " * (w + 1)
                for m, w in _WIDTHS.items()
            )
            lines.append(f"{first}  {LABELS[system]:<8}{cells}".rstrip())
        verdicts = entry.get("vsStrongerBaseline", {}).get(row)
        if verdicts:
            cells = "".join(
                f" {_verdict(verdicts[m]):>{w}}" if m in verdicts else " " * (w + 1)
                for m, w in _WIDTHS.items()
            )
            lines.append(f"{'':<16}  {'vs best':<8}{cells}".rstrip())
    judged = [c for per_type in entry.get("vsStrongerBaseline", {}).values()
              for c in per_type.values()]
    if judged:
        met = sum(c["atOrAbove"] for c in judged)
        lines.append(f"planner at or above the stronger baseline on {met} of {len(judged)} "
                     f"(type, metric) pairs")
    return "\n".join(lines)


def report_text(report: Mapping[str, Any]) -> str:
    """The whole report as text: a run header, one table per budget, the legend."""
    index = report["bm25Index"]
    head = (f"questions: {', '.join(report['questionFiles'])} ({report['questionCount']}); "
            f"bm25 index: {index['documents']} documents in {index['seconds']:.2f} s; "
            f"run {report['seconds']:.1f} s")
    tables = [budget_table(entry) for entry in report["budgets"]]
    return "\n\n".join([head, *tables, LEGEND.format(**report["baselines"])])
