"""``planner-svc plan``: ask a running server for the evidence plan of a question."""

from __future__ import annotations

import argparse
import json
import sys

from planner_svc.cliargs import DefaultsHelpFormatter, address, bounded, int_range, non_empty
from planner_svc.client.connection import (
    ADDRESS_HELP,
    DEADLINE_S,
    EXIT_REFUSED,
    EXIT_UNAVAILABLE,
    EXIT_USAGE,
    add_tls_flags,
    auth_metadata,
    client_address,
    command_channel,
    failure_exit,
    unavailable_hint,
)
from planner_svc.core.config import MAX_FRAC_PER_SOURCE, SelectionSettings
from planner_svc.core.limits import BUDGET_TOKENS, EXPAND_DEPTH, INT64, LEG_RESULTS
from planner_svc.recall.request import QUESTION_EXPAND_DEPTH

__all__ = ["EXIT_DECLINED", "EXIT_OK", "register"]

EXIT_OK = 0
"""Exit code: the plan was printed. The others: ``EXIT_REFUSED`` (1), ``EXIT_USAGE`` (2) and
``EXIT_UNAVAILABLE`` (3, a condition to retry: unreachable, shutting down, the server's shared
store unreachable, the TLS handshake failed, or no plan within ``--timeout``) of
:mod:`planner_svc.client.connection`, and :data:`EXIT_DECLINED`."""
EXIT_DECLINED = 4
"""Exit code: the server declined for insufficient evidence (``FAILED_PRECONDITION`` with
``ErrorInfo{INSUFFICIENT_EVIDENCE}``): the corpus does not answer the question."""

EXPLAIN_SPANS = 30
"""Candidate spans the plan did not pack that ``plan --explain`` lists by default, besides
every packed one (a plan's pool often holds a hundred or more)."""

_FMT = DefaultsHelpFormatter


def _plan(args: argparse.Namespace) -> int:
    import grpc
    from google.protobuf import json_format

    from planner_svc.api.planner.v1 import plan_pb2_grpc
    from planner_svc.client.common import (
        question_request,
        render_explanations,
        render_plan,
        render_recall,
        render_timings,
    )
    from planner_svc.client.eval import error_infos

    if args.explain_spans is not None and not args.explain:
        print("planner-svc plan: error: --explain-spans only applies with --explain",
              file=sys.stderr)
        return EXIT_USAGE
    request = question_request(
        args.question,
        budget_tokens=args.budget,
        expand_depth=args.expand_depth,
        k=args.k,
        model=args.model,
        at_valid_us=args.at_valid,
        at_tx_us=args.at_tx,
        allow_ungrounded=args.allow_ungrounded,
        explain=args.explain,
        max_frac_per_source=args.max_frac_per_source,
    )
    metadata = auth_metadata()
    channel = command_channel(args, "plan")
    if channel is None:
        return EXIT_USAGE
    with channel:
        stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
        try:
            response = stub.Plan(request, timeout=args.timeout, metadata=metadata)
        except grpc.RpcError as err:
            code = err.code()  # type: ignore[attr-defined]
            details = str(err.details())  # type: ignore[attr-defined]
            declined = [info for info in error_infos(err)
                        if info.reason == "INSUFFICIENT_EVIDENCE"
                        and code == grpc.StatusCode.FAILED_PRECONDITION]
            if declined:  # the request field, as this command spells it
                details = details.replace("set allow_ungrounded", "pass --allow-ungrounded")
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:
                details = f"no answer from {args.address} within {args.timeout:g} s"
            print(f"planner-svc plan: {code.name}: {details}"
                  f"{unavailable_hint(code.name, args.address, err)}", file=sys.stderr)
            if declined and args.explain:
                for key, value in sorted(declined[0].metadata.items()):
                    print(f"  {key} = {value}", file=sys.stderr)
            if declined:
                return EXIT_DECLINED
            return failure_exit(code.name)
    plan = response.plan
    if args.model and plan.stats.token_estimate:
        print(f"planner-svc plan: note: the server has no tokenizer for model {args.model!r}; "
              "token counts are estimates (its model registry lists the models it counts "
              "exactly)", file=sys.stderr)
    if args.json:
        shown = response if args.explain else plan
        print(json.dumps(json_format.MessageToDict(shown), ensure_ascii=False, indent=2))
        return EXIT_OK
    print(render_plan(plan))
    if args.explain:
        print()
        print(render_recall(response.recall))
        print()
        print(render_timings(response.timings))
        print()
        others = EXPLAIN_SPANS if args.explain_spans is None else args.explain_spans
        print(render_explanations(plan, others=None if others < 0 else others))
    return EXIT_OK


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``plan`` subcommand."""
    plan = subparsers.add_parser(
        "plan", help="ask a running server for an evidence plan", formatter_class=_FMT,
        epilog=f"exit codes: {EXIT_OK} plan printed, {EXIT_REFUSED} request refused, {EXIT_USAGE} "
               f"bad arguments, {EXIT_UNAVAILABLE} unavailable, retry (unreachable, shutting "
               f"down, TLS handshake failed, --timeout passed), {EXIT_DECLINED} declined: "
               "insufficient evidence")
    plan.add_argument("question", type=non_empty,
                      help="the question; both recall legs search with it")
    plan.add_argument("--address", type=address, default=client_address(),
                      help=ADDRESS_HELP)
    plan.add_argument("--budget", type=bounded(int, BUDGET_TOKENS), default=None,
                      # "%(default).0s" prints nothing and keeps the formatter from
                      # appending "(default: None)"
                      help="budget in tokens (default: the server's, "
                           f"{SelectionSettings().default_budget_tokens} unless configured)"
                           "%(default).0s")
    plan.add_argument("--max-frac-per-source", type=bounded(float, MAX_FRAC_PER_SOURCE),
                      default=None,
                      help="the per-source cap, a fraction of the budget in (0, 1] (default: "
                           f"the server's, {SelectionSettings().max_frac_per_source} unless "
                           "configured)%(default).0s")
    plan.add_argument("--expand-depth", type=bounded(int, EXPAND_DEPTH),
                      default=QUESTION_EXPAND_DEPTH,
                      help="hop expansion depth")
    plan.add_argument("--k", type=bounded(int, LEG_RESULTS), default=0,
                      help="semantic neighbours (0 = server default)")
    plan.add_argument("--model", default="", help="model for exact token accounting")
    plan.add_argument("--at-valid", type=bounded(int, INT64), default=None,
                      help="as-of valid time, µs since the epoch")
    plan.add_argument("--at-tx", type=bounded(int, INT64), default=None,
                      help="as-of transaction time, µs since the epoch")
    plan.add_argument("--allow-ungrounded", action="store_true",
                      help="empty plan instead of an error when nothing is found")
    plan.add_argument("--explain", action="store_true",
                      help="show the candidate documents, the abstention decision and the "
                           "candidates' fates")
    plan.add_argument("--explain-spans", type=int_range(-1, 1_000_000), metavar="N",
                      default=None,
                      help="with --explain: the number of unpacked candidate spans to list, "
                           "densest first, besides every packed one; the rest are counted by "
                           f"fate (default {EXPLAIN_SPANS}; -1: all; --json always has all)")
    plan.add_argument("--json", action="store_true",
                      help="print the plan as proto3 JSON (the whole PlanResponse with --explain)")
    plan.add_argument("--timeout", type=bounded(float, DEADLINE_S), default=30.0,
                      help="deadline, seconds")
    add_tls_flags(plan)
    plan.set_defaults(func=_plan)
