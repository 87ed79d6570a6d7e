"""A caller's deadline stops the plan's work on the server, not just the caller's wait."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import grpc
import pytest

from planner_svc.api.planner.v1 import plan_pb2, plan_pb2_grpc
from planner_svc.core.config import SelectionSettings
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.server.app import create_server
from planner_svc.server.services import Services
from planner_svc.settings import ServerSettings, TransportSettings

pytestmark = pytest.mark.integration


class SlowStore:
    """A store whose full-text search takes 0.5 s and which records later reads."""

    def __init__(self) -> None:
        self.searched = threading.Event()
        self.read_after_search = threading.Event()

    def search_text(self, query: str, **kwargs: Any) -> list[tuple[str, float]]:
        self.searched.set()
        time.sleep(0.5)
        return [("n1", 1.0)]

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> Mapping[str, Any]:
        self.read_after_search.set()
        return {}

    def edges_as_of(self, node_ids: Iterable[str], valid_us: int, tx_us: int,
                    *, direction: str = "out") -> Sequence[Any]:
        self.read_after_search.set()
        return []

    def span_kinds(self, keys: Iterable[Any]) -> Mapping[Any, str]:
        return {}

    def canonical_slices(self, keys: Iterable[Any]) -> Mapping[Any, str]:
        return {}

    def source_ids_by_title(self, title: str) -> list[str]:
        return []

    def count_sources(self) -> int:
        return 0

    def close(self) -> None:
        pass

    def __getattr__(self, name: str) -> Any:  # snapshot() and other optional reads
        if name == "snapshot":
            import contextlib

            return contextlib.nullcontext
        raise AttributeError(name)


def test_deadline_stops_recall_between_stages(tmp_path: Path) -> None:
    store = SlowStore()
    settings = ServerSettings(data_dir=tmp_path, semantic=False,
                              transport=TransportSettings(port=0))
    planner = EvidencePlanner(store, index=None, embedder=None, config=SelectionSettings())
    services = Services.assemble(settings, store=store, embedder=None,  # type: ignore[arg-type]
                                 index=None, planner=planner)
    running = create_server(settings, services)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = plan_pb2_grpc.EvidencePlannerStub(channel)
            request = plan_pb2.PlanRequest(query=plan_pb2.StructuredQuery(text="anything"),
                                           expand_depth=1)
            with pytest.raises(grpc.RpcError) as info:
                stub.Plan(request, timeout=0.2)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert store.searched.is_set()
        time.sleep(0.8)  # the search finishes; the planner must notice the cancellation
        assert not store.read_after_search.is_set(), "recall went on after the deadline"
    finally:
        running.stop(0)
