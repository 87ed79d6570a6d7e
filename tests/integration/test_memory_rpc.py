"""Memory writes over gRPC, auth and shutdown, each on its own server over a copy of the data."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import grpc
import pytest

from planner_svc.api.planner.v1 import memory_pb2, plan_pb2
from planner_svc.client.common import question_request
from planner_svc.settings import ServerSettings, TransportSettings
from tests.integration.conftest import Live, start

pytestmark = pytest.mark.integration

TX = 1_790_000_000_000_000  # after the fixture's version time, before now


@pytest.fixture
def fresh(fixture_data_dir: Path, tmp_path: Path) -> Iterator[Live]:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = start(ServerSettings(data_dir=data,
                                  transport=TransportSettings(port=0, max_workers=4)))
    yield server
    server.channel.close()
    server.running.stop(0)


def _doc(source_id: str, text: str, **kw: object) -> memory_pb2.IngestSourcesRequest:
    return memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id=source_id, title=str(kw.pop("title", source_id)), media_type="text/markdown",
        text=text, **kw,  # type: ignore[arg-type]
    ))


def test_ingest_stream_reports_bad_documents_and_keeps_the_rest(fresh: Live) -> None:
    docs = [
        _doc("notes/zebrafish", "# Zebrafish lab\n\nThe zebrafish colony lives in tank 42.",
             version_tx=TX),
        _doc("notes/empty", "", version_tx=TX),
        _doc("notes/quokka", "# Quokka\n\nQuokkas were counted on Rottnest in 2024.",
             version_tx=TX),
    ]
    summary = fresh.memory.IngestSources(iter(docs), timeout=60)
    assert (summary.received, summary.ingested, summary.failed) == (3, 2, 1)
    assert [e.source_id for e in summary.errors] == ["notes/empty"]
    plan = fresh.planner.Plan(question_request("Which tank holds the zebrafish colony?",
                                               budget_tokens=300), timeout=30).plan
    assert any("tank 42" in s.text for s in plan.spans)
    again = fresh.memory.IngestSources(iter(docs[:1] + docs[2:]), timeout=60)
    assert (again.ingested, again.unchanged) == (0, 2)
    replan = fresh.planner.Plan(question_request("Which tank holds the zebrafish colony?",
                                                 budget_tokens=300), timeout=30).plan
    assert replan.plan_hash == plan.plan_hash


def test_node_without_provenance_is_recalled_but_never_evidence(fresh: Live) -> None:
    fresh.memory.PutNode(memory_pb2.PutNodeRequest(node=memory_pb2.NodeWrite(
        node_id="api:quasar-note", labels=["note"], text="quasar brightness survey notes")),
        timeout=10)
    request = plan_pb2.PlanRequest(
        structured=plan_pb2.StructuredRecall(text="quasar", labels=["note"]),
        allow_ungrounded=True)
    plan = fresh.planner.Plan(request, timeout=10).plan
    assert plan.stats.nodes_without_spans >= 1
    assert all(s.span.source_id != "api:quasar-note" for s in plan.spans)


def test_put_node_rejects_bad_fields(fresh: Live) -> None:
    with pytest.raises(grpc.RpcError) as info:
        fresh.memory.PutNode(memory_pb2.PutNodeRequest(node=memory_pb2.NodeWrite(
            node_id="api:x", confidence=1.5)), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
    assert "confidence" in info.value.details()  # type: ignore[attr-defined]
    with pytest.raises(grpc.RpcError) as info:
        fresh.memory.PutEdge(memory_pb2.PutEdgeRequest(
            src_node_id="a", dst_node_id="b", relation="rel", weight=-1.0), timeout=10)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]


def test_bearer_token_is_required_when_configured(fixture_data_dir: Path, tmp_path: Path) -> None:
    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = start(ServerSettings(data_dir=data,
                                  transport=TransportSettings(port=0, auth_token="s3cret")))
    try:
        request = question_request("Johnny Cash", budget_tokens=200)
        with pytest.raises(grpc.RpcError) as info:
            server.planner.Plan(request, timeout=10)
        assert info.value.code() == grpc.StatusCode.UNAUTHENTICATED  # type: ignore[attr-defined]
        plan = server.planner.Plan(request, timeout=10,
                                   metadata=(("authorization", "Bearer s3cret"),)).plan
        assert plan.spans
    finally:
        server.channel.close()
        server.running.stop(0)


def test_running_server_catches_up_with_another_process_ingest(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    from planner_svc.embed import default_embedder
    from planner_svc.ingest import DocumentIn, ingest_documents
    from planner_svc.store import Store

    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    server = start(ServerSettings(data_dir=data, transport=TransportSettings(port=0)))
    try:
        with Store.open(data) as store:  # what `planner-svc ingest --data` does, beside it
            ingest_documents(store, default_embedder(), [DocumentIn(
                source_id="notes/axolotl", title="Axolotl tank", media_type="text/markdown",
                text="# Axolotl tank\n\nThe axolotl tank is kept at sixteen degrees.",
                version_tx_us=TX)], now_us=TX)
        semantic_only = plan_pb2.PlanRequest(
            semantic=plan_pb2.SemanticRecall(text="axolotl tank temperature", k=3),
            budget_tokens=200)
        # the very next plan searches an index caught up with the store
        plan = server.planner.Plan(semantic_only, timeout=10).plan
        assert any(s.span.source_id == "notes/axolotl" for s in plan.spans)
    finally:
        server.channel.close()
        server.running.stop(0)


def test_cancelled_ingest_keeps_completed_batches(
    fixture_data_dir: Path, tmp_path: Path
) -> None:
    import threading

    from planner_svc.ingest.service import STREAM_BATCH as INGEST_BATCH
    from planner_svc.ingest.service import IngestService
    from planner_svc.server.services import Services
    from planner_svc.store import Store

    data = tmp_path / "data"
    shutil.copytree(fixture_data_dir, data)
    settings = ServerSettings(data_dir=data, transport=TransportSettings(port=0))
    services = Services.open(settings)
    index = services.index
    assert index is not None
    batch_indexed = threading.Event()
    stream_over = threading.Event()

    class SignalledIndex:
        """The index, signalling each catch-up: a batch is committed and indexed."""

        def sync(self) -> int:
            added = index.sync()
            batch_indexed.set()
            return added

    class WatchedIngest(IngestService):
        """The ingest service, signalling when it is done with a stream."""

        def ingest(self, documents: Iterator[Any], *, cancelled: Any = lambda: False) -> Any:
            try:
                return super().ingest(documents, cancelled=cancelled)
            finally:
                stream_over.set()

    services.ingest = WatchedIngest(services.store, embedder=services.embedder,
                                    index=SignalledIndex(), write_lock=threading.Lock())
    server = start(settings, services)
    release = threading.Event()
    sent = threading.Event()

    def documents() -> Iterator[memory_pb2.IngestSourcesRequest]:
        for i in range(INGEST_BATCH + 10):
            yield _doc(f"bulk/{i:04d}", f"# Bulk {i}\n\nBulk note number {i}.", version_tx=TX)
        sent.set()
        release.wait(30)  # the client stalls mid-batch, then gives up

    try:
        future = server.memory.IngestSources.future(documents(), timeout=60)
        assert sent.wait(30)
        assert batch_indexed.wait(30)  # the first batch committed; the second is being read
        future.cancel()  # the generator stays blocked: the stream never ends normally
        with pytest.raises(grpc.FutureCancelledError):
            future.result()
        assert stream_over.wait(30)  # the server saw the cancellation and let the stream go
        with Store.open(data) as store:
            assert store.latest_version("bulk/0000") is not None
            assert store.latest_version(f"bulk/{INGEST_BATCH - 1:04d}") is not None
            # The partial batch may or may not be kept: gRPC can deliver the end of the request
            # stream before the cancellation. Either way it is whole or absent, never half.
            kept = [store.latest_version(f"bulk/{i:04d}") is not None
                    for i in range(INGEST_BATCH, INGEST_BATCH + 10)]
            assert all(kept) or not any(kept)
        # the server is still serving
        assert fresh_plan_ok(server)
    finally:
        release.set()
        server.channel.close()
        server.running.stop(0)


def fresh_plan_ok(server: Live) -> bool:
    plan = server.planner.Plan(question_request("Bulk note number 7", budget_tokens=200),
                               timeout=10).plan
    return any(s.span.source_id == "bulk/0007" for s in plan.spans)


def test_serve_refuses_a_folder_that_is_not_a_data_directory(tmp_path: Path) -> None:
    from planner_svc.core.errors import ConfigError
    from planner_svc.server.services import Services

    (tmp_path / "notes.md").write_text("# My notes\n")
    with pytest.raises(ConfigError) as info:
        Services.open(ServerSettings(data_dir=tmp_path, semantic=False,
                                     transport=TransportSettings(port=0)))
    assert info.value.field == "data_dir"
    assert not (tmp_path / "store.sqlite").exists()
