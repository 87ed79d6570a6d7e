"""The offline provider explores the graph around the evidence, over a real gRPC stream on the
fixture corpus, played by the ``planner-svc research`` orchestrator."""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pytest

from planner_svc.api.planner.v1 import research_pb2, research_pb2_grpc
from planner_svc.client import research as cli
from planner_svc.research.duplicates import wording_key
from planner_svc.research.offline import names
from planner_svc.store import Store
from tests.integration.conftest import Live

pytestmark = pytest.mark.integration


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli.register(parser.add_subparsers())
    return parser.parse_args(["research", *argv])


def test_the_offline_provider_explores_the_graph_around_the_evidence(
    live: Live, fixture_data_dir: Path
) -> None:
    question = "What caused the Cold War and how did it end?"
    args = parse(question, "--max-depth", "8", "--replan-every", "1")
    out: list[str] = []

    class Lines:
        def write(self, text: str) -> int:
            out.append(text)
            return len(text)

        def flush(self) -> None:
            pass

    stub = research_pb2_grpc.ResearchPlannerServiceStub(live.channel)
    final = cli.play(stub, cli.build_start(args), timeout_s=120, out=Lines())  # type: ignore[arg-type]
    assert final is not None
    assert final.reason in (research_pb2.STOP_REASON_DONE, research_pb2.STOP_REASON_NO_PROGRESS)
    texts = [q.text for q in final.sub_questions]
    keys = [wording_key(t) for t in texts]
    assert len(set(keys)) == len(keys), texts  # no two sub-questions with the same words
    with Store.open(fixture_data_dir) as store:
        explored = [m.group(1) for t in texts if (m := re.match(r"How is (.+) related to ", t))]
        new_entities = [e for e in explored
                        if store.source_ids_by_title(e) and not names(question, e)]
    assert new_entities, texts
    printed = "".join(out)
    assert "new proposal(s) past the cap of 3 leads: " in printed
    assert "evidence budget: 6000 tokens (server default), plans pack to 5400" in printed
