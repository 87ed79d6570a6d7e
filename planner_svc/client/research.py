"""``planner-svc research``: play orchestrator against a running server's research stream.

Each lead's result is taken from its sub-question's evidence plan: the number of planned spans
is the claim count, and a plan with no span (or none at all) is a dead end with cause
``no_evidence`` (``evidence_error`` when planning failed). Prints the session's effective
settings, the initial plan, each replan as it arrives (with the proposals refused as duplicates
or cut by the round's cap), and the stop reason with the planner's model calls against the leads
run. The caps' ranges are the server's (:attr:`ResearchCaps.BOUNDS`).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc

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
    unavailable_hint,
)
from planner_svc.core.limits import BUDGET_TOKENS
from planner_svc.research.planner import DEFAULT_MAX_DEPTH, ResearchCaps


def register(subparsers: argparse._SubParsersAction) -> None:  # type: ignore[type-arg]
    """Add the ``research`` subcommand."""
    p = subparsers.add_parser(
        "research",
        help="run a research session against a server (evidence plans as lead results)",
        description=(
            "Play orchestrator against a running server's research stream: each lead's result "
            "is its sub-question's evidence plan (claims = planned spans; a dead end when "
            "there are none). Prints the initial plan, each replan as it arrives, the stop "
            "reason, and the planner's model calls against the leads run."
        ),
    )
    p.add_argument("question", help="the research question")
    p.add_argument(
        "--actors",
        default="web",
        help="comma-separated actor types that run leads, round-robin (default: web)",
    )
    p.add_argument("--address", type=address, default=client_address(),
                   help=ADDRESS_HELP)
    caps = ResearchCaps.BOUNDS
    p.add_argument("--budget", type=bounded(int, BUDGET_TOKENS), default=None,
                   help=f"evidence budget per plan, tokens, {BUDGET_TOKENS} (default: the "
                        "server's default budget)")
    p.add_argument(
        "--max-depth",
        type=bounded(int, caps["max_depth"]),
        default=None,
        help=f"follow-up rounds, {caps['max_depth']}: 0 = server default ({DEFAULT_MAX_DEPTH}), "
             "-1 = none",
    )
    p.add_argument("--replan-every", type=bounded(int, caps["replan_every"]), default=None,
                   help=f"completed leads per replan, {caps['replan_every']} "
                        f"(default: the server's, {ResearchCaps().replan_every})")
    p.add_argument("--max-initial-leads", type=bounded(int, caps["max_initial_leads"]),
                   default=None,
                   help=f"sub-questions of the initial decomposition, {caps['max_initial_leads']} "
                        f"(default: the server's, {ResearchCaps().max_initial_leads})")
    p.add_argument("--max-new-leads", type=bounded(int, caps["max_new_leads"]), default=None,
                   help=f"new sub-questions per replan, {caps['max_new_leads']} "
                        f"(default: the server's, {ResearchCaps().max_new_leads})")
    p.add_argument(
        "--provider",
        default="",
        help="offline | openai | cassette:NAME | record:NAME (server side; default offline)",
    )
    p.add_argument("--timeout", type=bounded(float, DEADLINE_S), default=300.0,
                   help="session deadline (seconds)")
    add_tls_flags(p)
    p.set_defaults(func=_run)


def build_start(args: argparse.Namespace) -> research_pb2.ResearchRequest:
    """The start event for the parsed arguments."""
    from planner_svc.api.planner.v1 import research_pb2

    event = research_pb2.ResearchRequest()
    start = event.start
    start.question = args.question
    start.actors.extend(a.strip() for a in args.actors.split(",") if a.strip())
    start.provider = args.provider
    if args.budget is not None:
        start.budget_tokens = args.budget
    if args.max_depth is not None:
        start.caps.max_depth = args.max_depth
    if args.replan_every is not None:
        start.caps.replan_every = args.replan_every
    if args.max_initial_leads is not None:
        start.caps.max_initial_leads = args.max_initial_leads
    if args.max_new_leads is not None:
        start.caps.max_new_leads = args.max_new_leads
    return event


def lead_results(
    leads: list[research_pb2.Lead], questions: dict[str, research_pb2.SubQuestion]
) -> list[research_pb2.ResearchRequest]:
    """One result event per lead from its sub-question's evidence plan (see module doc)."""
    from planner_svc.api.planner.v1 import research_pb2

    events = []
    for lead in leads:
        event = research_pb2.ResearchRequest()
        event.lead_result.lead_id = lead.id
        q = questions.get(lead.question_id)
        spans = len(q.evidence.spans) if q is not None and q.HasField("evidence") else 0
        if spans:
            event.lead_result.claims = spans
        else:
            failed = q is not None and bool(q.evidence_error)
            event.lead_result.dead_end.cause = "evidence_error" if failed else "no_evidence"
            event.lead_result.dead_end.query = lead.query[:500]
        events.append(event)
    return events


def _print_questions(
    subs: list[research_pb2.SubQuestion], leads: list[research_pb2.Lead], out: TextIO
) -> None:
    actor_of = {lead.question_id: f"{lead.id} -> {lead.actor}" for lead in leads}
    for q in subs:
        if q.HasField("evidence"):
            ev = f"{len(q.evidence.spans)} span(s), {q.evidence.used} tokens"
        else:
            ev = q.evidence_error or "no plan"
        print(f"  {q.id}: {q.text}  [{actor_of.get(q.id, '-')}; evidence: {ev}]", file=out)


def _print_proposals(outcomes: research_pb2.ProposalOutcomes, out: TextIO) -> None:
    """Print the proposals a planner call did not admit: refused duplicates, then cut ones."""
    from planner_svc.api.planner.v1 import research_pb2

    for dup in outcomes.duplicates:
        rule = research_pb2.DuplicateRule.Name(dup.rule).removeprefix("DUPLICATE_RULE_").lower()
        print(f"  refused: {dup.text!r} repeats {dup.duplicate_of} "
              f"({rule.replace('_', ' ')}, similarity {dup.similarity:.2f})", file=out)
    if outcomes.cut:
        shown = ", ".join(repr(t) for t in outcomes.cut[:3])
        more = f" and {len(outcomes.cut) - 3} more" if len(outcomes.cut) > 3 else ""
        print(f"  cut: {len(outcomes.cut)} new proposal(s) past the cap of {outcomes.cap} leads: "
              f"{shown}{more}", file=out)


def play(
    stub: research_pb2_grpc.ResearchPlannerServiceStub,
    start: research_pb2.ResearchRequest,
    *,
    timeout_s: float,
    out: TextIO,
) -> research_pb2.Final | None:
    """Run one session through ``stub``, printing updates as they arrive; returns the final
    message (None if the stream ended without one).

    Raises:
        grpc.RpcError: the stream failed.
    """
    import queue

    pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
    pending.put(start)

    def events() -> Iterator[research_pb2.ResearchRequest]:
        while (event := pending.get()) is not None:
            yield event

    questions: dict[str, research_pb2.SubQuestion] = {}
    final: research_pb2.Final | None = None

    def dispatch(
        sub_questions: Iterable[research_pb2.SubQuestion], leads: Iterable[research_pb2.Lead]
    ) -> None:
        """Print new sub-questions and their leads, then queue each lead's result."""
        sub_questions, leads = list(sub_questions), list(leads)
        _print_questions(sub_questions, leads, out)
        questions.update({q.id: q for q in sub_questions})
        for event in lead_results(leads, questions):
            pending.put(event)
    try:
        for update in stub.Research(events(), timeout=timeout_s, metadata=auth_metadata()):
            kind = update.WhichOneof("update")
            if kind == "initial":
                init = update.initial
                cfg = init.settings
                caps = cfg.caps
                print(
                    f"session {cfg.session_id} provider={cfg.provider} "
                    f"actors={','.join(cfg.actors)} "
                    f"caps: initial={caps.max_initial_leads} new={caps.max_new_leads} "
                    f"every={caps.replan_every} max_depth={caps.max_depth}",
                    file=out,
                )
                budget = "server default" if cfg.budget_default else "requested"
                embedder = cfg.duplicate_embedder or "no embedder"
                print(
                    f"evidence budget: {cfg.budget_tokens} tokens ({budget}), plans pack to "
                    f"{cfg.effective_budget_tokens}; duplicates: similarity >= "
                    f"{cfg.duplicate_similarity:g} ({embedder})",
                    file=out,
                )
                print(f"initial plan ({init.rationale}):", file=out)
                dispatch(init.sub_questions, init.leads)
                _print_proposals(init.proposals, out)
            elif kind == "replan":
                rp = update.replan
                print(
                    f"replan {rp.round} ({rp.rationale}): answered={list(rp.answered)} "
                    f"open={list(rp.open)}",
                    file=out,
                )
                dispatch(rp.sub_questions, rp.leads)
                _print_proposals(rp.proposals, out)
            elif kind == "final":
                final = update.final
                fp = final.proposals
                if fp.duplicates or fp.cut:
                    print(f"round {final.rounds}, the last:", file=out)
                    _print_proposals(fp, out)
                break
    finally:
        pending.put(None)
    return final


def _run(args: argparse.Namespace) -> int:
    import grpc

    from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc

    start = build_start(args)
    channel = command_channel(args, "research")
    if channel is None:
        return EXIT_USAGE
    with channel:
        stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
        try:
            final = play(stub, start, timeout_s=args.timeout, out=sys.stdout)
        except grpc.RpcError as exc:
            code = exc.code() if isinstance(exc, grpc.Call) else None
            details = exc.details() if isinstance(exc, grpc.Call) else str(exc)
            name = code.name if code is not None else "UNKNOWN"
            if code == grpc.StatusCode.DEADLINE_EXCEEDED:  # --timeout bounds the session
                details = (f"the session with {args.address} did not finish within "
                           f"{args.timeout:g} s")
            print(f"planner-svc research: {name}: {details}"
                  f"{unavailable_hint(name, args.address, exc)}", file=sys.stderr)
            return failure_exit(name)
    if final is None:
        print("research stream ended without a final message", file=sys.stderr)
        return 1
    reason = research_pb2.StopReason.Name(final.reason)
    print(f"stopped: {reason} ({final.detail})")
    print(
        f"planner model calls: {final.model_calls} for {final.leads_run} lead(s) run "
        f"({final.rounds} replan round(s), {final.claims_found} claim(s), "
        f"{final.dead_ends} dead end(s))"
    )
    return 0
