"""``planner-svc eval``: plan quality of a running server against two baselines.

Reads one or more question files, runs :func:`planner_svc.evaluation.runner.run_eval` at one
budget (``--budget N``) or several (``--budgets 250,500,...``), and prints one table per budget
or (``--json``) the report as one JSON object; ``--plot FILE.png`` also draws quality against
budget. Bad input (a question file, a budget list, a plot folder, a data directory without a
readable store) is one line on stderr and exit code 2; a failed plan request is one line and
exit code 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from planner_svc.cliargs import DEFAULT_ADDRESS, address, bounded
from planner_svc.core.limits import BUDGET_TOKENS, LEG_RESULTS, Bounds
from planner_svc.settings import DEFAULT_DATA_DIR

MAX_BUDGETS = 20
"""Most budgets one run sweeps."""
TIMEOUT_S = Bounds(0.0, 3600.0, low_open=True)
"""Allowed per-plan deadline, seconds."""


def budget_list(value: str) -> tuple[int, ...]:
    """Comma-separated distinct budgets in :data:`~planner_svc.core.limits.BUDGET_TOKENS` (at
    most :data:`MAX_BUDGETS`), ascending.

    Raises:
        argparse.ArgumentTypeError: the list is malformed (the message names the problem).
    """
    parts = [p.strip() for p in value.split(",")]
    if not value.strip() or any(not p for p in parts):
        raise argparse.ArgumentTypeError(f"{value!r} is not a comma-separated list of budgets "
                                         "(e.g. 250,500,1000)")
    budgets: list[int] = []
    for part in parts:
        try:
            number = int(part)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{part!r} is not an integer") from None
        if number not in BUDGET_TOKENS:
            raise argparse.ArgumentTypeError(f"budget {number} is outside {BUDGET_TOKENS}")
        if number in budgets:
            raise argparse.ArgumentTypeError(f"budget {number} appears more than once")
        budgets.append(number)
    if len(budgets) > MAX_BUDGETS:
        raise argparse.ArgumentTypeError(f"{len(budgets)} budgets; at most {MAX_BUDGETS}")
    return tuple(sorted(budgets))


def _positive_seconds(value: str) -> float:
    try:
        seconds = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds") from None
    if seconds not in TIMEOUT_S:
        raise argparse.ArgumentTypeError(f"{seconds} is outside {TIMEOUT_S} seconds")
    return seconds


def _fail(message: str, code: int) -> int:
    print(f"planner-svc eval: {message}", file=sys.stderr)
    return code


def _run(args: argparse.Namespace) -> int:
    from planner_svc.core.errors import InvalidRequest
    from planner_svc.evaluation.questions import load_questions

    try:
        budgets = budget_list(args.budgets) if args.budgets is not None else (args.budget,)
    except argparse.ArgumentTypeError as exc:
        return _fail(f"bad --budgets: {exc}", 2)
    try:
        questions = load_questions([Path(p) for p in args.questions])
    except OSError as exc:
        return _fail(f"cannot read questions: {exc.filename or ''}: {exc.strerror or exc}", 2)
    except InvalidRequest as exc:
        return _fail(f"bad questions: {exc}", 2)
    plot = Path(args.plot) if args.plot else None
    if plot is not None and not plot.parent.is_dir():
        return _fail(f"cannot write the plot: no folder {plot.parent}", 2)

    from planner_svc.evaluation.report import report_text
    from planner_svc.evaluation.runner import EvalError, EvalInputError, EvalSettings, run_eval

    settings = EvalSettings(
        question_files=tuple(args.questions),
        budgets=budgets,
        data_dir=Path(args.data),
        address=args.address,
        cosine_k=args.k,
        timeout_s=args.timeout,
        per_question=args.per_question,
    )
    try:
        report = run_eval(questions, settings,
                          warn=lambda line: print(f"planner-svc eval: warning: {line}",
                                                  file=sys.stderr))
    except EvalInputError as exc:
        return _fail(str(exc), 2)
    except EvalError as exc:
        return _fail(str(exc), 1)
    print(json.dumps(report) if args.json else report_text(report), flush=True)
    if plot is not None:
        from planner_svc.evaluation.plot import plot_report

        try:
            plot_report(report, plot)
        except OSError as exc:
            return _fail(f"cannot write the plot {plot}: {exc.strerror or exc}", 1)
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``eval`` subcommand."""
    from planner_svc.evaluation.runner import EvalSettings

    defaults = EvalSettings(question_files=(), budgets=(1,), data_dir=DEFAULT_DATA_DIR,
                            address=DEFAULT_ADDRESS)
    parser = subparsers.add_parser(
        "eval", help="score plans of a running server on questions with gold evidence"
    )
    parser.add_argument("questions", nargs="+", metavar="QUESTIONS",
                        help="JSON Lines question files (id, type, question, gold, answer)")
    parser.add_argument("--address", type=address, default=DEFAULT_ADDRESS,
                        help="server HOST:PORT")
    budgets = parser.add_mutually_exclusive_group(required=True)
    budgets.add_argument("--budget", type=bounded(int, BUDGET_TOKENS),
                         help="requested budget, tokens")
    budgets.add_argument("--budgets", metavar="N,N,...",
                         help="several requested budgets, comma-separated (e.g. 250,500,1000)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also draw quality against budget to this PNG")
    parser.add_argument("--data", default=str(DEFAULT_DATA_DIR),
                        help="the server's data directory (for the baselines and titles)")
    parser.add_argument("--k", type=bounded(int, Bounds(1, LEG_RESULTS.high)),
                        default=defaults.cosine_k, help="passages the cosine baseline considers")
    parser.add_argument("--timeout", type=_positive_seconds, default=defaults.timeout_s,
                        help="per-plan deadline, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--per-question", action="store_true",
                        help="include each question's outcome per budget in the JSON")
    parser.set_defaults(func=_run)
