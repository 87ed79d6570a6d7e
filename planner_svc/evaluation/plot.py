"""Quality against budget, drawn from an evaluation report (matplotlib, no display).

One panel per answerable question type present (``single``, ``multi``, ``compare``) with
``allGold`` (solid) and ``answerInPlan`` (dashed) of the planner and both baselines against the
requested budget in tokens, one colour per system; when the report has ``unanswerable``
questions, one more panel with each system's declined share on them (solid; higher is better)
and on the answerable questions (dotted; lower is better). The figure is rendered by the Agg
canvas through :class:`matplotlib.figure.Figure`, never through ``pyplot``, so no display or
global backend state is involved.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from planner_svc.evaluation.metrics import ANSWERABLE_ROW
from planner_svc.evaluation.questions import ANSWERABLE_TYPES, UNANSWERABLE

COLOURS = {"planner": "#1f77b4", "cosineBaseline": "#ff7f0e", "bm25Baseline": "#2ca02c"}
"""Line colour per system (report key)."""

NAMES = {"planner": "planner", "cosineBaseline": "cosine baseline",
         "bm25Baseline": "BM25 baseline"}
STYLES: dict[str, Literal["-", "--"]] = {"allGold": "-", "answerInPlan": "--"}
"""Line style per quality metric."""

_ZORDER = {"planner": 3.0, "cosineBaseline": 2.0, "bm25Baseline": 2.5}
"""The planner drawn on top, so it stays visible where the lines coincide."""

_TYPE_TITLES = {"single": "single article", "multi": "two-hop", "compare": "comparison"}


def _series(entries: Sequence[Mapping[str, Any]], system: str, row: str,
            metric: str) -> tuple[list[int], list[float]]:
    xs: list[int] = []
    ys: list[float] = []
    for entry in entries:
        values = entry[system].get(row)
        if values is not None and metric in values:
            xs.append(int(entry["budget"]))
            ys.append(float(values[metric]))
    return xs, ys


def plot_report(report: Mapping[str, Any], path: Path, *, dpi: int = 100) -> None:
    """Write the sweep figure of ``report`` (see :mod:`planner_svc.evaluation.runner`) to
    ``path`` as PNG.

    Args:
        report: the run's report; its ``budgets`` entries are drawn in budget order.
        path: the PNG to write (its folder must exist).
        dpi: resolution, dots per inch (the figure is 10 x 7.5 in for four panels).

    Raises:
        ValueError: the report has no budget entry or no question type to draw.
    """
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D

    entries = sorted(report["budgets"], key=lambda e: int(e["budget"]))
    if not entries:
        raise ValueError("the report has no budget to plot")
    first = entries[0]["planner"]
    panels = [t for t in ANSWERABLE_TYPES if t in first]
    if UNANSWERABLE in first:
        panels.append(UNANSWERABLE)
    if not panels:
        raise ValueError("the report has no question type to plot")
    systems = [s for s in COLOURS if s in entries[0]]
    budgets = [int(e["budget"]) for e in entries]

    grid = (2, 2) if len(panels) == 4 else (1, len(panels))
    size = (10.0, 7.5) if grid == (2, 2) else (4.2 * len(panels), 4.0)
    fig = Figure(figsize=size, dpi=dpi, layout="constrained")
    axes = fig.subplots(*grid, squeeze=False).ravel()
    for ax, panel in zip(axes, panels, strict=False):
        n = first[panel]["n"]
        if panel == UNANSWERABLE:
            for system in systems:
                ax.plot(*_series(entries, system, UNANSWERABLE, "declined"),
                        color=COLOURS[system], linestyle="-", marker="o", markersize=4,
                        zorder=_ZORDER[system])
                ax.plot(*_series(entries, system, ANSWERABLE_ROW, "declined"),
                        color=COLOURS[system], linestyle=":", marker=".", markersize=4,
                        zorder=_ZORDER[system])
            ax.set_title(f"declined: unanswerable (n={n}, solid), answerable (dotted)",
                         fontsize=9)
            ax.set_ylabel("share of questions declined")
        else:
            for system in systems:
                for metric, style in STYLES.items():
                    ax.plot(*_series(entries, system, panel, metric), color=COLOURS[system],
                            linestyle=style, marker="o", markersize=4, zorder=_ZORDER[system])
            ax.set_title(f"{panel}: {_TYPE_TITLES[panel]} (n={n})", fontsize=10)
            ax.set_ylabel("share of questions")
        ax.set_xlabel("requested budget (tokens)")
        if len(budgets) > 1 and budgets[-1] >= 4 * budgets[0]:
            ax.set_xscale("log")
        ax.set_xticks(budgets, [str(b) for b in budgets])
        ax.minorticks_off()
        ax.set_ylim(-0.02, 1.02)
        ax.grid(True, alpha=0.3)
    for ax in axes[len(panels):]:
        ax.set_visible(False)

    handles = [Line2D([], [], color=COLOURS[s], label=NAMES[s]) for s in systems]
    handles += [Line2D([], [], color="black", linestyle=style, label=metric)
                for metric, style in STYLES.items()]
    fig.legend(handles=handles, loc="outside lower center", ncol=len(handles), fontsize=9)
    files = ", ".join(Path(f).name for f in report.get("questionFiles", ())) or "questions"
    fig.suptitle(f"planner-svc eval: {files} (quality against budget)")
    fig.savefig(path, format="png")
