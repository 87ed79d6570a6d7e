"""``planner-svc eval``: plan quality of a running server against a naive baseline.

For every question it asks the server for the plan ``planner-svc plan`` would request (both
legs from the question text, one hop) and builds, in this process over the same data directory,
the baseline plan (top-k passages by cosine, in rank order, until the budget is full) under the
same effective budget. Prints per-type ``n``, ``goldCoverage``, ``allGold`` and ``answerInPlan``
for both, as a table or (``--json``) as one JSON object, with the share of plans declined per
type: for ``unanswerable`` questions the share rightly declined, for the others (and overall,
row ``answerable``) the share wrongly declined.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from planner_svc.cliargs import DEFAULT_ADDRESS, address, int_range


def _table(report: dict[str, Any]) -> str:
    metrics = ("goldCoverage", "allGold", "answerInPlan", "declined")
    lines = [
        f"budget {report['budget']} tokens (effective {report['effectiveBudget']})",
        f"{'type':<12} {'n':>3}  {'':<9}" + "".join(f" {m:>12}" for m in metrics),
    ]
    for qtype in ("single", "multi", "compare", "answerable", "unanswerable"):
        for who in ("planner", "baseline"):
            row = report[who].get(qtype)
            if row is None:
                continue
            cells = "".join(f" {row[m]:>12.3f}" if m in row else " " * 13 for m in metrics)
            lines.append(f"{qtype:<12} {row['n']:>3}  {who:<9}{cells}".rstrip())
    lines.append("declined: plans refused for insufficient evidence or empty; the baseline has "
                 "no decline rule")
    return "\n".join(lines)


def _run(args: argparse.Namespace) -> int:
    import grpc

    from planner_svc.api.planner.v1 import plan_pb2_grpc
    from planner_svc.cliargs import auth_metadata, unavailable_hint
    from planner_svc.core.errors import InvalidRequest
    from planner_svc.core.tokens import effective_budget
    from planner_svc.embed import default_embedder
    from planner_svc.evaluation.baseline import baseline_plan
    from planner_svc.evaluation.metrics import aggregate, declined, score
    from planner_svc.evaluation.questions import load_questions
    from planner_svc.evaluation.server_plans import request_plan
    from planner_svc.index import VectorIndex
    from planner_svc.store import Store

    try:
        questions = load_questions([Path(p) for p in args.questions])
    except OSError as exc:
        print(f"planner-svc eval: cannot read questions: {exc.filename or ''}: "
              f"{exc.strerror or exc}", file=sys.stderr)
        return 2
    except InvalidRequest as exc:
        print(f"planner-svc eval: bad questions: {exc}", file=sys.stderr)
        return 2
    data = Path(args.data)
    if not (data / "store.sqlite").exists():
        print(f"planner-svc eval: no store under {data} (use --data)", file=sys.stderr)
        return 2
    now_us = time.time_ns() // 1000
    effective = effective_budget(args.budget, None, True)
    planner_outcomes = []
    baseline_outcomes = []
    per_question = []
    with Store.open(data) as store, grpc.insecure_channel(args.address) as channel:
        embedder = default_embedder()
        index = VectorIndex.open_or_build(data, store, embedder_name=embedder.name,
                                          dim=embedder.dim)
        titles: dict[str, str | None] = {}

        def title(source_id: str) -> str:
            if source_id not in titles:
                titles[source_id] = store.source_title(source_id)
            return titles[source_id] or source_id

        stub = plan_pb2_grpc.EvidencePlannerStub(channel)
        unknown: set[str] = set()
        for q in questions:
            try:
                got = request_plan(stub, q.question, budget=args.budget,
                                   timeout_s=args.timeout, metadata=auth_metadata())
            except grpc.RpcError as err:
                name = err.code().name  # type: ignore[attr-defined]
                print(f"planner-svc eval: {name}: {err.details()}"  # type: ignore[attr-defined]
                      f"{unavailable_hint(name, args.address)}", file=sys.stderr)
                return 1
            unknown.update(s for s in got.source_ids if store.source_title(s) is None)
            p_out = declined(q) if got.refused else score(
                q, [title(s) for s in got.source_ids], got.texts, got.used)
            base = baseline_plan(store, index, embedder, q.question, budget=effective,
                                 k=args.k, valid_us=now_us, tx_us=now_us)
            b_out = score(q, [title(s) for s in base.source_ids], base.texts, base.used)
            planner_outcomes.append(p_out)
            baseline_outcomes.append(b_out)
            per_question.append({
                "id": q.id, "type": q.type,
                "planner": {"covered": list(p_out.covered), "answer": p_out.answer_in_plan,
                            "declined": p_out.declined},
                "baseline": {"covered": list(b_out.covered), "answer": b_out.answer_in_plan,
                             "declined": b_out.declined},
            })
    if unknown:
        print(f"planner-svc eval: warning: the server's plans cite {len(unknown)} source(s) "
              f"missing from {data} (e.g. {sorted(unknown)[0]}): is --data the server's data "
              "directory?", file=sys.stderr)
    report: dict[str, Any] = {
        "budget": args.budget,
        "effectiveBudget": effective,
        "planner": aggregate(planner_outcomes),
        "baseline": aggregate(baseline_outcomes),
    }
    if args.per_question:
        report["questions"] = per_question
    if args.json:
        print(json.dumps(report))
    else:
        print(_table(report))
    return 0


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``eval`` subcommand."""
    parser = subparsers.add_parser(
        "eval", help="score plans of a running server on questions with gold evidence"
    )
    parser.add_argument("questions", nargs="+", metavar="QUESTIONS",
                        help="JSON Lines question files (id, type, question, gold, answer)")
    parser.add_argument("--address", type=address, default=DEFAULT_ADDRESS,
                        help="server HOST:PORT")
    parser.add_argument("--budget", type=int_range(1, 10_000_000), required=True,
                        help="requested budget, tokens")
    parser.add_argument("--data", default="data/demo",
                        help="the server's data directory (for the baseline and titles)")
    parser.add_argument("--k", type=int_range(1, 1000), default=50,
                        help="baseline passages considered")
    parser.add_argument("--timeout", type=float, default=30.0, help="per-plan deadline, seconds")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--per-question", action="store_true",
                        help="include each question's coverage in the JSON")
    parser.set_defaults(func=_run)
