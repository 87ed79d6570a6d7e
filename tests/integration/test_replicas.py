"""Two planner replicas over one PostgreSQL store, as real ``planner-svc serve`` processes on
different ports: documents ingested through one are planned by the other (which built its
indexes from the store at start-up) with the same plan hashes an SQLite server gives for the
same documents, and writes through either reach the other's next plan."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.protobuf import json_format

from planner_svc.api.planner.v1 import memory_pb2, memory_pb2_grpc, plan_pb2_grpc
from planner_svc.client.common import question_request
from tests.integration.conftest import fixture_documents
from tests.pgserver import SchemaPerTest
from tests.serving import ServeProcess

pytestmark = pytest.mark.integration

LOADED_US = 1_700_000_000_000_000
"""The version and valid-from time every document is loaded at (microseconds)."""

QUESTIONS = (
    "Who was Johnny Cash's backing band?",
    "Where were goats first domesticated?",
    "Which religions revere Abraham as a patriarch?",
    "What is the highest mountain of the Andes?",
    "Which sea lies between Italy and the Balkans?",
    "Who founded the Achaemenid Empire?",
)


class Replica:
    """One ``planner-svc serve`` process and a channel to it."""

    def __init__(self, data: Path, store: str | None) -> None:
        self.server = ServeProcess(data, *(["--store", store] if store else []))
        self.address = self.server.wait_serving(timeout_s=120)
        self.channel = grpc.insecure_channel(self.address)
        self.planner = plan_pb2_grpc.EvidencePlannerServiceStub(self.channel)
        self.memory = memory_pb2_grpc.MemoryServiceStub(self.channel)

    def ingest(self, docs: list[dict[str, object]]) -> memory_pb2.IngestSourcesResponse:
        requests = []
        for d in docs:
            document = json_format.ParseDict(d, memory_pb2.SourceDocument())
            document.version_tx = LOADED_US
            document.valid_from = LOADED_US
            requests.append(memory_pb2.IngestSourcesRequest(document=document))
        response: memory_pb2.IngestSourcesResponse = self.memory.IngestSources(
            iter(requests), timeout=300)
        return response

    def hashes(self, questions: tuple[str, ...] = QUESTIONS) -> list[str]:
        return [self.planner.Plan(question_request(q, budget_tokens=600, allow_ungrounded=True),
                                  timeout=60).plan.plan_hash for q in questions]

    def stop(self) -> str:
        self.channel.close()
        code = self.server.stop()
        assert code == 0, self.server.stderr
        return self.server.stderr


@pytest.fixture()
def replicas() -> Iterator[list[Replica]]:
    started: list[Replica] = []
    yield started
    for replica in started:
        if replica.server.proc.poll() is None:
            replica.stop()


def test_ingest_through_one_replica_plan_through_another(
    postgres_schemas: SchemaPerTest, tmp_path: Path, replicas: list[Replica]
) -> None:
    docs = fixture_documents()
    url = postgres_schemas.url()
    sqlite = Replica(tmp_path / "sqlite", None)
    replicas.append(sqlite)
    first = Replica(tmp_path / "replica-a", url)
    replicas.append(first)
    assert first.ingest(docs[:-1]).ingested == len(docs) - 1
    assert sqlite.ingest(docs[:-1]).ingested == len(docs) - 1
    # a new replica builds its indexes from the shared store at start-up, and says so
    second = Replica(tmp_path / "replica-b", url)
    replicas.append(second)
    expected = sqlite.hashes()
    assert second.hashes() == expected  # same store contents, same plans as SQLite
    assert first.hashes() == expected
    # a write through either replica reaches the other's next plan once committed
    last = [str(docs[-1]["title"])]
    before = first.hashes(tuple(last))
    assert second.ingest(docs[-1:]).ingested == 1
    assert sqlite.ingest(docs[-1:]).ingested == 1
    after = sqlite.hashes(tuple(last))
    assert after != before
    assert first.hashes(tuple(last)) == after
    assert first.hashes() == second.hashes() == sqlite.hashes()
    log = second.stop()
    for event in ("startup.catalog_progress", "startup.catalog", "startup.vector_index"):
        assert event in log
