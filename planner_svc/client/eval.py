"""``planner-svc eval``: plan quality of a running server against two baselines.

The server side of an evaluation lives here: :class:`GrpcPlans` asks a running server for each
plan (the request ``planner-svc plan`` sends for a question: both recall legs from the question
text, one hop) and recognises a decline: ``FAILED_PRECONDITION`` carrying
``google.rpc.ErrorInfo{reason: INSUFFICIENT_EVIDENCE}``; any other failure, including a
``FAILED_PRECONDITION`` with another reason or none, is an error of the run.

Reads one or more question files, runs :func:`planner_svc.evaluation.runner.run_eval` at one
budget (``--budget N``) or several (``--budgets 250,500,...``), and prints one table per budget
or (``--json``) the report as one JSON object; ``--plot FILE.png`` also draws quality against
budget. Bad input (a question file, a budget list, a plot folder, a data directory without a
readable store) is one line on stderr and exit code 2; a failed plan request is one line and
exit code 3 when the service is unavailable (a condition to retry:
:data:`~planner_svc.client.connection.RETRY_LATER`), else 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from planner_svc.cliargs import address, bounded
from planner_svc.client.connection import (
    ADDRESS_HELP,
    DEADLINE_S,
    EXIT_USAGE,
    add_tls_flags,
    auth_metadata,
    client_address,
    command_channel,
    failure_exit,
    rich_status,
    unavailable_hint,
)
from planner_svc.core.limits import BUDGET_TOKENS, LEG_RESULTS, Bounds
from planner_svc.evaluation.cosine_baseline import DEFAULT_COSINE_K
from planner_svc.settings import DEFAULT_DATA_DIR

if TYPE_CHECKING:
    import grpc
    from google.rpc import error_details_pb2

    from planner_svc.evaluation.runner import ServerPlan

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "INSUFFICIENT_EVIDENCE",
    "MAX_BUDGETS",
    "GrpcPlans",
    "budget_list",
    "error_reasons",
    "is_decline",
    "register",
    "request_plan",
]

INSUFFICIENT_EVIDENCE = "INSUFFICIENT_EVIDENCE"
"""``ErrorInfo.reason`` of a plan declined for lack of evidence."""
DEFAULT_TIMEOUT_S = 30.0
"""Deadline of each plan request by default, seconds."""
MAX_BUDGETS = 20
"""Most budgets one run sweeps."""


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
    if seconds not in DEADLINE_S:
        raise argparse.ArgumentTypeError(f"{seconds} is outside {DEADLINE_S} seconds")
    return seconds


def error_infos(err: grpc.RpcError) -> list[error_details_pb2.ErrorInfo]:
    """Every ``google.rpc.ErrorInfo`` in the rich status details of ``err``
    (``grpc-status-details-bin``), in order; empty when there are none or the details are
    malformed or disagree with the call's code and message (:func:`rich_status`)."""
    from google.rpc import error_details_pb2

    status = rich_status(err)
    if status is None:
        return []
    infos: list[error_details_pb2.ErrorInfo] = []
    for detail in status.details:
        if detail.Is(error_details_pb2.ErrorInfo.DESCRIPTOR):
            info = error_details_pb2.ErrorInfo()
            detail.Unpack(info)
            infos.append(info)
    return infos


def error_reasons(err: grpc.RpcError) -> list[str]:
    """The ``ErrorInfo.reason`` of every ErrorInfo of ``err`` (:func:`error_infos`)."""
    return [info.reason for info in error_infos(err)]


def is_decline(err: grpc.RpcError) -> bool:
    """Whether ``err`` is the server declining for insufficient evidence:
    ``FAILED_PRECONDITION`` with an ErrorInfo whose reason is ``INSUFFICIENT_EVIDENCE``."""
    import grpc

    code = err.code()  # type: ignore[attr-defined]
    return code == grpc.StatusCode.FAILED_PRECONDITION and INSUFFICIENT_EVIDENCE in error_reasons(
        err
    )


def request_plan(
    stub: Any,
    question: str,
    *,
    budget: int,
    timeout_s: float,
    metadata: Sequence[tuple[str, str | bytes]] = (),
) -> ServerPlan:
    """Ask ``stub`` (an ``EvidencePlannerServiceStub``) for the plan of ``question``.

    Args:
        budget: requested budget, tokens.
        timeout_s: the call's deadline, seconds.
        metadata: call metadata (e.g. authorization).

    Raises:
        grpc.RpcError: any failure other than a decline (see :func:`is_decline`).
    """
    import grpc

    from planner_svc.client.common import question_request
    from planner_svc.evaluation.runner import ServerPlan

    try:
        plan = stub.Plan(question_request(question, budget_tokens=budget),
                         timeout=timeout_s, metadata=tuple(metadata)).plan
    except grpc.RpcError as err:
        if is_decline(err):
            return ServerPlan(source_ids=(), texts=(), used=0, refused=True)
        raise
    return ServerPlan(source_ids=tuple(s.span.source_id for s in plan.spans),
                      texts=tuple(s.text for s in plan.spans), used=int(plan.used),
                      refused=False)


class GrpcPlans:
    """A :data:`~planner_svc.evaluation.runner.PlanSource` over a running server's Plan RPC.

    Args:
        channel: a channel to the server.
        address: the server's ``HOST:PORT`` (named in errors).
        timeout_s: deadline of each plan request, seconds.
    """

    def __init__(self, channel: grpc.Channel, *, address: str, timeout_s: float) -> None:
        from planner_svc.api.planner.v1 import plan_pb2_grpc

        self._stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        self._address = address
        self._timeout_s = timeout_s
        self._metadata = auth_metadata()

    def __call__(self, question: str, budget: int) -> ServerPlan:
        """The server's plan of ``question`` at ``budget`` tokens (a decline is ``refused``).

        Raises:
            EvalError: the request failed other than by a decline (one line, with a hint).
        """
        import grpc

        from planner_svc.evaluation.runner import EvalError

        try:
            return request_plan(self._stub, question, budget=budget, timeout_s=self._timeout_s,
                                metadata=self._metadata)
        except grpc.RpcError as err:
            name = err.code().name  # type: ignore[attr-defined]
            details = (f"no answer from {self._address} within {self._timeout_s:g} s"
                       if name == "DEADLINE_EXCEEDED"
                       else err.details())  # type: ignore[attr-defined]
            raise EvalError(f"{name}: {details}"
                            f"{unavailable_hint(name, self._address, err)}",
                            exit_code=failure_exit(name)) from None


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
    from planner_svc.settings import read_environment

    settings = EvalSettings(
        question_files=tuple(args.questions),
        budgets=budgets,
        data_dir=Path(args.data),
        store=args.store,
        cosine_k=args.k,
        per_question=args.per_question,
        model_dir=read_environment().model_dir,
    )
    channel = command_channel(args, "eval")
    if channel is None:
        return EXIT_USAGE
    try:
        with channel:
            plans = GrpcPlans(channel, address=args.address, timeout_s=args.timeout)
            report = run_eval(questions, settings, plans=plans,
                              warn=lambda line: print(f"planner-svc eval: warning: {line}",
                                                      file=sys.stderr))
    except EvalInputError as exc:
        return _fail(str(exc), 2)
    except EvalError as exc:  # a failed plan request: 3 to retry, else 1
        return _fail(str(exc), exc.exit_code)
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
    parser = subparsers.add_parser(
        "eval", help="score plans of a running server on questions with gold evidence"
    )
    parser.add_argument("questions", nargs="+", metavar="QUESTIONS",
                        help="JSON Lines question files (id, type, question, gold, answer)")
    parser.add_argument("--address", type=address, default=client_address(),
                        help=ADDRESS_HELP)
    budgets = parser.add_mutually_exclusive_group(required=True)
    budgets.add_argument("--budget", type=bounded(int, BUDGET_TOKENS),
                         help="requested budget, tokens")
    budgets.add_argument("--budgets", metavar="N,N,...",
                         help="several requested budgets, comma-separated (e.g. 250,500,1000)")
    parser.add_argument("--plot", metavar="FILE.png",
                        help="also draw quality against budget to this PNG")
    parser.add_argument("--data", default=str(DEFAULT_DATA_DIR),
                        help="the server's data directory (for the baselines and titles)")
    parser.add_argument("--store", default=None, metavar="URL",
                        help="the server's shared store (postgresql://...), when it has one")
    parser.add_argument("--k", type=bounded(int, Bounds(1, LEG_RESULTS.high)),
                        default=DEFAULT_COSINE_K, help="passages the cosine baseline considers")
    parser.add_argument("--timeout", type=_positive_seconds, default=DEFAULT_TIMEOUT_S,
                        help="per-plan deadline, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--per-question", action="store_true",
                        help="include each question's outcome per budget in the JSON")
    add_tls_flags(parser)
    parser.set_defaults(func=_run)
