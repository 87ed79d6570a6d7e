"""Research sessions that converge, over a real gRPC stream: paraphrases refused as
duplicates, the no-progress stop, every proposal accounted for, resolved settings echoed, and
the CLI's ranges taken from the server's."""

from __future__ import annotations

import argparse
import queue
import re
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent import futures

import grpc
import pytest

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.client import research as cli
from planner_svc.embed import default_embedder
from planner_svc.research.duplicates import (
    DEFAULT_DUPLICATE_SIMILARITY,
    DuplicatePolicy,
)
from planner_svc.research.planner import ResearchCaps
from planner_svc.research.provider import ProviderAnswer, ResearchProvider
from planner_svc.research.testing import FakeEvidence, ScriptedProvider
from planner_svc.server.research import add_research_servicer
from tests.integration.conftest import Live, plain_log

pytestmark = pytest.mark.integration

MERKLE = ("What is a Merkle tree?", "Define Merkle tree", "Merkle tree — definition?",
          "Ｗｈａｔ ｉｓ ａ Ｍｅｒｋｌｅ ｔｒｅｅ？")


class Scripted:
    """A gRPC server whose sessions plan with one scripted provider and fake evidence."""

    def __init__(self, provider: ResearchProvider) -> None:
        self.provider = provider
        self.handlers = futures.ThreadPoolExecutor(max_workers=4)
        self.server = grpc.server(self.handlers, options=[("grpc.so_reuseport", 0)])
        add_research_servicer(
            self.server,
            evidence=FakeEvidence(),
            provider_factory=lambda spec: provider,
            duplicates=DuplicatePolicy(embedder=default_embedder()),
        )
        self.address = f"127.0.0.1:{self.server.add_insecure_port('127.0.0.1:0')}"
        self.server.start()

    def __enter__(self) -> Scripted:
        return self

    def __exit__(self, *exc: object) -> None:
        # let each session's handler finish (it logs research.end after its last update), so
        # no log line of this test's server is written after the test has returned
        self.server.stop(grace=5).wait()
        self.handlers.shutdown(wait=True)


def start_event(question: str = "What is a Merkle tree and who invented it?",
                **caps: int) -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.start.question = question
    event.start.actors.append("web")
    for name, value in caps.items():
        setattr(event.start.caps, name, value)
    return event


def lead_result(lead_id: str, claims: int) -> research_pb2.ResearchRequest:
    event = research_pb2.ResearchRequest()
    event.lead_result.lead_id = lead_id
    if claims:
        event.lead_result.claims = claims
    else:
        event.lead_result.dead_end.cause = "no_results"
    return event


def orchestrate(address: str, start: research_pb2.ResearchRequest,
                claims_for: Callable[[research_pb2.Lead], int] = lambda lead: 2,
                ) -> list[research_pb2.ResearchResponse]:
    """Answer every lead as it is dispatched; returns every response up to the final."""
    pending: queue.Queue[research_pb2.ResearchRequest | None] = queue.Queue()
    pending.put(start)

    def events() -> Iterator[research_pb2.ResearchRequest]:
        while (event := pending.get()) is not None:
            yield event

    updates = []
    with grpc.insecure_channel(address) as channel:
        stub = research_pb2_grpc.ResearchPlannerServiceStub(channel)
        try:
            for update in stub.Research(events(), timeout=60):
                updates.append(update)
                kind = update.WhichOneof("update")
                if kind == "final":
                    break
                leads = update.initial.leads if kind == "initial" else update.replan.leads
                for lead in leads:
                    pending.put(lead_result(lead.id, claims_for(lead)))
        finally:
            pending.put(None)
    return updates


def duplicates_of(outcomes: research_pb2.ProposalOutcomes) -> list[tuple[str, str, str]]:
    return [(d.text, d.duplicate_of, research_pb2.DuplicateRule.Name(d.rule))
            for d in outcomes.duplicates]


def test_paraphrases_are_refused_recorded_and_shown_to_the_planner() -> None:
    provider = ScriptedProvider([
        ProviderAnswer(questions=(*MERKLE, "Who invented the Merkle tree?")),
        ProviderAnswer(questions=("Who invented Merkle trees",), done=True),
    ])
    with Scripted(provider) as served:
        updates = orchestrate(served.address, start_event())
    init, final = updates[0].initial, updates[-1].final
    assert [q.text for q in init.sub_questions] == [
        "What is a Merkle tree?", "Who invented the Merkle tree?"]
    assert list(init.proposals.admitted) == ["q1", "q2"]
    assert duplicates_of(init.proposals) == [
        ("Define Merkle tree", "q1", "DUPLICATE_RULE_SIMILAR_MEANING"),
        ("Merkle tree — definition?", "q1", "DUPLICATE_RULE_SIMILAR_MEANING"),
        ("Ｗｈａｔ ｉｓ ａ Ｍｅｒｋｌｅ ｔｒｅｅ？", "q1", "DUPLICATE_RULE_SAME_WORDS"),
    ]
    assert [d.similarity for d in init.proposals.duplicates] == [1.0, 1.0, 1.0]
    assert init.proposals.cut == [] and init.proposals.cap == 4
    # The planner's next view (the digest) lists what it had proposed in vain.
    digest = provider.requests[1].digest_text
    assert '- "Define Merkle tree" repeats q1' in digest
    assert '- "Merkle tree — definition?" repeats q1' in digest
    # The round that ended the session reports its own refusal; the final lists all four.
    assert final.reason == research_pb2.STOP_REASON_DONE
    assert duplicates_of(final.proposals) == [
        ("Who invented Merkle trees", "q2", "DUPLICATE_RULE_SIMILAR_MEANING")]
    assert [d.duplicate_of for d in final.duplicates] == ["q1", "q1", "q1", "q2"]
    assert [d.round for d in final.duplicates] == [0, 0, 0, 1]
    assert [q.id for q in final.sub_questions] == ["q1", "q2"]


def test_a_planner_that_keeps_rephrasing_stops_with_no_progress() -> None:
    """Before: 12 sub-questions (11 paraphrases) and a model call per round up to the depth
    cap. Now the paraphrases are refused, and once a round admits nothing and no claim follows
    the session ends before another model call."""
    provider = ScriptedProvider(
        [ProviderAnswer(questions=("What is a Merkle tree?", "Who invented the Merkle tree?"))],
        fallback=ProviderAnswer(questions=MERKLE[1:]),
    )
    with Scripted(provider) as served:
        updates = orchestrate(served.address, start_event(max_depth=8, replan_every=1),
                              claims_for=lambda lead: 2 if lead.question_id == "q1" else 0)
    kinds = [u.WhichOneof("update") for u in updates]
    assert kinds == ["initial", "replan", "final"]
    replan, final = updates[1].replan, updates[2].final
    assert list(replan.sub_questions) == [] and list(replan.leads) == []
    assert [d.duplicate_of for d in replan.proposals.duplicates] == ["q1", "q1", "q1"]
    assert final.reason == research_pb2.STOP_REASON_NO_PROGRESS
    assert final.detail == (
        "round 1 admitted no new sub-question and no claim was reported after it")
    assert (final.model_calls, final.rounds, provider.calls) == (2, 1, 2)
    assert [q.id for q in final.sub_questions] == ["q1", "q2"]
    assert not final.HasField("proposals")  # decided before a call
    assert len(final.duplicates) == 3


def test_proposals_cut_by_the_caps_are_reported_in_order() -> None:
    provider = ScriptedProvider([
        ProviderAnswer(questions=("Alpha?", "Beta?", "Gamma?", "Define alpha", "Delta?")),
        ProviderAnswer(questions=("Epsilon?", "Zeta?", "beta", "Eta?")),
    ])
    with Scripted(provider) as served:
        updates = orchestrate(served.address,
                              start_event(max_initial_leads=2, max_new_leads=1, max_depth=1))
    init, replan, final = (updates[0].initial, updates[1].replan, updates[2].final)
    assert (list(init.proposals.admitted), list(init.proposals.cut), init.proposals.cap) == (
        ["q1", "q2"], ["Gamma?", "Delta?"], 2)
    assert duplicates_of(init.proposals) == [
        ("Define alpha", "q1", "DUPLICATE_RULE_SIMILAR_MEANING")]
    assert (list(replan.proposals.admitted), list(replan.proposals.cut), replan.proposals.cap) == (
        ["q3"], ["Zeta?", "Eta?"], 1)
    assert duplicates_of(replan.proposals) == [("beta", "q2", "DUPLICATE_RULE_SAME_WORDS")]
    assert final.reason == research_pb2.STOP_REASON_DEPTH_CAP


def _wait_for_ends(capsys: pytest.CaptureFixture[str], session_ids: Sequence[str]) -> str:
    """The captured log once it holds a ``research.end`` line of each session (a cancelled
    session ends on the server after the call returns: waiting keeps its line in this test's
    capture, not in the next test's output)."""
    logged = ""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        logged += plain_log(capsys.readouterr().err)
        ends = [line for line in logged.splitlines() if "research.end" in line]
        if all(any(f"session_id={sid}" in line for line in ends) for sid in session_ids):
            break
        time.sleep(0.01)
    return logged


def test_settings_echo_the_resolved_budget_and_screen_on_a_real_server(
        live: Live, capsys: pytest.CaptureFixture[str]) -> None:
    stub = research_pb2_grpc.ResearchPlannerServiceStub(live.channel)
    call = stub.Research(iter([start_event("What caused the Cold War?")]), timeout=60)
    first = next(call)
    call.cancel()
    cfg = first.initial.settings
    assert cfg.HasField("budget_tokens") and cfg.budget_tokens == 6000  # the server default
    assert cfg.budget_default is True
    assert cfg.effective_budget_tokens == 5400  # estimated tokens: x0.9
    assert all(q.evidence.budget == 5400 for q in first.initial.sub_questions)
    assert cfg.duplicate_similarity == DEFAULT_DUPLICATE_SIMILARITY
    assert cfg.duplicate_embedder == default_embedder().name
    assert (cfg.caps.max_initial_leads, cfg.caps.max_new_leads, cfg.caps.replan_every,
            cfg.caps.max_depth) == (4, 3, 3, 2)
    asked = start_event("What caused the Cold War?")
    asked.start.budget_tokens = 500
    call = stub.Research(iter([asked]), timeout=60)
    second = next(call).initial.settings
    call.cancel()
    assert (second.budget_tokens, second.budget_default, second.effective_budget_tokens) == (
        500, False, 450)
    logged = _wait_for_ends(capsys, [cfg.session_id, second.session_id])
    for sid in (cfg.session_id, second.session_id):
        assert re.search(rf"research\.end .*reason=CANCELLED .*session_id={re.escape(sid)}",
                         logged), sid


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["research", "q", *argv])


@pytest.mark.parametrize("cap", sorted(ResearchCaps.BOUNDS))
def test_the_cli_takes_its_ranges_from_the_server(cap: str,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    bounds = ResearchCaps.BOUNDS[cap]
    flag = "--" + cap.replace("_", "-")
    for value in (int(bounds.low), int(bounds.high)):
        args = parse(flag, str(value))
        assert getattr(cli.build_start(args).start.caps, cap) == value
    for value in (int(bounds.low) - 1, int(bounds.high) + 1):
        with pytest.raises(SystemExit):
            parse(flag, str(value))
        assert f"{value} is outside {bounds}" in capsys.readouterr().err
    # What the CLI accepts the server accepts.
    provider = ScriptedProvider([ProviderAnswer(questions=("A?",))])
    with Scripted(provider) as served:
        updates = orchestrate(served.address, cli.build_start(parse(flag, str(int(bounds.high)))))
    assert updates[-1].WhichOneof("update") == "final"


def test_same_words_never_admitted_twice_across_rounds() -> None:
    rounds: Sequence[ProviderAnswer] = [
        ProviderAnswer(questions=("Which sources cover end Cold War caused?",)),
        ProviderAnswer(questions=("Which sources cover Cold War caused end?", "What ended it?")),
    ]
    provider = ScriptedProvider(rounds)
    with Scripted(provider) as served:
        updates = orchestrate(served.address, start_event(max_depth=1))
    final = updates[-1].final
    assert [q.text for q in final.sub_questions] == [
        "Which sources cover end Cold War caused?", "What ended it?"]
    assert duplicates_of(updates[1].replan.proposals) == [
        ("Which sources cover Cold War caused end?", "q1", "DUPLICATE_RULE_SAME_WORDS")]
