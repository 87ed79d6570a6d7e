"""A real server on a loopback ephemeral port over the committed Wikipedia fixture."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import grpc
import pytest

from planner_svc.api.planner.v1 import memory_pb2_grpc, plan_pb2_grpc
from planner_svc.server.app import RunningServer, create_server
from planner_svc.server.services import Services
from planner_svc.settings import ServerSettings, TransportSettings

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "wiki_fixture.jsonl"
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def plain_log(text: str) -> str:
    """Captured console log lines without their colours (tests log through the console
    renderer)."""
    return _ANSI.sub("", text)


def fixture_documents() -> list[dict[str, object]]:
    """The committed fixture documents (proto3 JSON SourceDocument objects)."""
    with FIXTURE.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


@pytest.fixture(scope="session")
def fixture_data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A data directory with the fixture ingested (once per test session)."""
    from planner_svc.embed import default_embedder
    from planner_svc.ingest import DocumentIn, ingest_documents
    from planner_svc.store import Store

    data_dir = tmp_path_factory.mktemp("fixture-data")
    docs = [
        DocumentIn(
            source_id=str(d["sourceId"]),
            title=str(d["title"]),
            media_type=str(d.get("mediaType", "text/markdown")),
            text=str(d["text"]),
            valid_from_us=int(d["validFrom"]) if "validFrom" in d else None,  # type: ignore[arg-type]
            version_tx_us=int(d["versionTx"]) if "versionTx" in d else None,  # type: ignore[arg-type]
            properties=dict(d.get("properties", {})),  # type: ignore[arg-type]
        )
        for d in fixture_documents()
    ]
    with Store.open(data_dir) as store:
        report = ingest_documents(store, default_embedder(), docs, now_us=1_800_000_000_000_000)
        assert not report.errors, report.errors
    return data_dir


@dataclass
class Live:
    """A running server and stubs connected to it."""

    running: RunningServer
    channel: grpc.Channel
    planner: plan_pb2_grpc.EvidencePlannerServiceStub
    memory: memory_pb2_grpc.MemoryServiceStub
    address: str


def start(settings: ServerSettings, services: Services | None = None) -> Live:
    """Start a server for ``settings`` (port 0 = ephemeral) over ``services`` (opened from the
    settings when None)."""
    running = create_server(settings, services or Services.open(settings))
    address = f"127.0.0.1:{running.port}"
    channel = grpc.insecure_channel(address)
    return Live(
        running=running,
        channel=channel,
        planner=plan_pb2_grpc.EvidencePlannerServiceStub(channel),
        memory=memory_pb2_grpc.MemoryServiceStub(channel),
        address=address,
    )


@pytest.fixture(scope="session")
def live(fixture_data_dir: Path) -> Iterator[Live]:
    """A server over the fixture for the whole session."""
    server = start(ServerSettings(data_dir=fixture_data_dir,
                                  transport=TransportSettings(port=0, max_workers=4)))
    yield server
    server.channel.close()
    server.running.stop(0)
