"""A caller's deadline stops the plan's work on the server, not just the caller's wait."""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, TypeVar

import grpc
import pytest

from planner_svc.api.planner.v1 import plan_pb2, plan_pb2_grpc
from planner_svc.core.config import SelectionSettings
from planner_svc.recall.planner import EvidencePlanner, EvidenceResult
from planner_svc.recall.request import EvidenceQuery
from planner_svc.recall.timing import StageClock
from planner_svc.server.app import RunningServer, create_server
from planner_svc.server.services import Services
from planner_svc.settings import ServerSettings, TransportSettings
from planner_svc.store import FeedPosition

pytestmark = pytest.mark.integration


class HeldStore:
    """A store whose change feed waits for ``release`` while the plan catches its catalog up;
    records reads made after that and when the plan's snapshot ends."""

    def __init__(self) -> None:
        self.searched = threading.Event()
        self.release = threading.Event()
        self.read_after_search = threading.Event()
        self.plan_over = threading.Event()
        self._depth = 0

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        self._depth += 1
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.plan_over.set()

    def generation(self) -> int:
        return 1

    def feed_position(self) -> FeedPosition:
        self.searched.set()
        assert self.release.wait(10)
        return FeedPosition(generation=1)

    def node_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        return []

    def edge_versions_closed_since(self, tx_us: int) -> list[tuple[int, int]]:
        return []

    def search_text(self, query: str, **kwargs: Any) -> list[tuple[str, float]]:
        self.read_after_search.set()
        return []

    def get_many_as_of(
        self, node_ids: Iterable[str], valid_us: int, tx_us: int
    ) -> Mapping[str, Any]:
        self.read_after_search.set()
        return {}

    def span_kinds(self, keys: Iterable[Any]) -> Mapping[Any, str]:
        return {}

    def canonical_slices(self, keys: Iterable[Any]) -> Mapping[Any, str]:
        self.read_after_search.set()
        return {}

    def source_ids_by_title(self, title: str) -> list[str]:
        return []

    def count_sources(self) -> int:
        return 0

    def close(self) -> None:
        pass


class WatchedPlanner(EvidencePlanner):
    """Hands the test the cancellation check the servicer passes to each plan."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.checks: list[Callable[[], bool]] = []

    def plan(self, query: EvidenceQuery, *, cancelled: Callable[[], bool] = lambda: False,
             clock: StageClock | None = None) -> EvidenceResult:
        self.checks.append(cancelled)
        return super().plan(query, cancelled=cancelled, clock=clock)


_P = TypeVar("_P", bound=WatchedPlanner)


def _serve(tmp_path: Path, store: HeldStore, kind: type[_P], **planner_kwargs: Any
           ) -> tuple[RunningServer, _P]:
    """A server on an ephemeral port over ``store`` without the semantic leg, planning with a
    ``kind`` planner."""
    settings = ServerSettings(data_dir=tmp_path, semantic=False,
                              transport=TransportSettings(port=0))
    planner = kind(store, index=None, embedder=None, config=SelectionSettings(),
                   **planner_kwargs)
    services = Services.assemble(settings, store=store, embedder=None,  # type: ignore[arg-type]
                                 index=None, planner=planner)
    return create_server(settings, services), planner


def _wait_for(condition: Callable[[], bool], timeout_s: float = 10.0) -> bool:
    """Whether ``condition`` holds within ``timeout_s`` (checked every few milliseconds)."""
    done = threading.Event()
    for _ in range(int(timeout_s / 0.005)):
        if condition():
            return True
        done.wait(0.005)
    return condition()


def test_deadline_stops_recall_between_stages(tmp_path: Path) -> None:
    store = HeldStore()
    running, planner = _serve(tmp_path, store, WatchedPlanner)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
            request = plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="anything"),
                                           expand_depth=1)
            with pytest.raises(grpc.RpcError) as info:
                stub.Plan(request, timeout=0.2)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
        assert store.searched.is_set()
        # The server sees the deadline too; then the catch-up returns, and the planner must stop.
        [cancelled] = planner.checks
        assert _wait_for(cancelled), "the server never saw the deadline pass"
        store.release.set()
        assert store.plan_over.wait(10)
        assert not store.read_after_search.is_set(), "recall went on after the deadline"
    finally:
        store.release.set()
        running.stop(0)


class ClosingStore(HeldStore):
    """A :class:`HeldStore` that records, in order, the plan's snapshot ending and the store
    closing."""

    def __init__(self) -> None:
        super().__init__()
        self.events: list[str] = []

    @contextlib.contextmanager
    def snapshot(self) -> Iterator[None]:
        with super().snapshot():
            yield
        self.events.append("plan over")

    def close(self) -> None:
        self.events.append("closed")


def test_stop_closes_the_store_after_cancelled_handlers_return(tmp_path: Path) -> None:
    # The transport cancels an in-flight call at the end of the grace period, but its handler
    # runs on until the plan's next check: the store must stay open until it returns.
    store = ClosingStore()
    running, _planner = _serve(tmp_path, store, WatchedPlanner)
    stopper = threading.Thread(target=running.stop, args=(0,))
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
            call = stub.Plan.future(plan_pb2.PlanRequest(
                structured=plan_pb2.StructuredRecall(text="anything"), expand_depth=1))
            assert store.searched.wait(10)
            stopper.start()
            with pytest.raises(grpc.RpcError) as info:
                call.result(timeout=10)
            # the transport ends the call as UNAVAILABLE ("Cancelling all calls"): retry elsewhere
            assert info.value.code() == grpc.StatusCode.UNAVAILABLE  # type: ignore[attr-defined]
            # the handler is still inside the plan: the store stays open for it
            stopper.join(0.3)
            assert stopper.is_alive()
            assert store.events == []
    finally:
        store.release.set()
    stopper.join(10)
    assert not stopper.is_alive()
    assert store.events == ["plan over", "closed"]
    assert not store.read_after_search.is_set(), "recall went on after the call was cancelled"


class CountingPlanner(WatchedPlanner):
    """A :class:`WatchedPlanner` that counts the plans that started (got a planning slot)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.started = 0

    def _plan(self, query: EvidenceQuery, cancelled: Callable[[], bool],
              clock: StageClock) -> EvidenceResult:
        self.started += 1
        return super()._plan(query, cancelled, clock)


def test_a_call_waiting_for_a_planning_slot_leaves_when_its_deadline_passes(
        tmp_path: Path) -> None:
    store = HeldStore()
    running, planner = _serve(tmp_path, store, CountingPlanner, plan_slots=1)
    request = plan_pb2.PlanRequest(structured=plan_pb2.StructuredRecall(text="anything"),
                                   expand_depth=1)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{running.port}") as channel:
            stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
            first = stub.Plan.future(request)
            assert store.searched.wait(10)  # the first plan holds the only slot
            with pytest.raises(grpc.RpcError) as info:
                stub.Plan(request, timeout=0.3)
            assert info.value.code() == grpc.StatusCode.DEADLINE_EXCEEDED  # type: ignore[attr-defined]
            _first_check, second_check = planner.checks
            assert _wait_for(second_check), "the server never saw the second deadline pass"
            assert planner.started == 1, "the second plan ran without a slot"
            store.release.set()
            outcome = first.exception(timeout=10)  # type: ignore[call-arg]  # grpc-stubs lacks it
            # the empty store declines the question; the slot is given back either way
            assert isinstance(outcome, grpc.RpcError)
            assert outcome.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
            with pytest.raises(grpc.RpcError) as again:
                stub.Plan(request, timeout=5)
            assert again.value.code() == grpc.StatusCode.FAILED_PRECONDITION  # type: ignore[attr-defined]
            assert planner.started == 2
    finally:
        store.release.set()
        running.stop(0)
