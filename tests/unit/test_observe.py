"""Per-RPC metrics: labelled children are looked up once and record into their metric's series."""

from __future__ import annotations

import threading

import pytest
from prometheus_client import REGISTRY, CollectorRegistry, Counter, Histogram

from planner_svc.server.observe import LabelledChildren, RpcTimer


def test_a_child_is_the_metrics_labelled_series_and_is_looked_up_once() -> None:
    registry = CollectorRegistry()
    calls = Counter("calls_total", "calls", ["method", "code"], registry=registry)
    by = LabelledChildren(calls)
    child = by("Plan", "OK")
    assert child is by("Plan", "OK")
    assert child is not by("Plan", "NOT_FOUND")
    child.inc()
    by("Plan", "OK").inc(2)
    assert registry.get_sample_value("calls_total", {"method": "Plan", "code": "OK"}) == 3.0
    assert registry.get_sample_value("calls_total", {"method": "Plan", "code": "NOT_FOUND"}) == 0.0


def test_a_wrong_number_of_label_values_is_refused() -> None:
    seconds = Histogram("stage_seconds", "s", ["stage"], registry=CollectorRegistry())
    with pytest.raises(ValueError, match="Incorrect label count"):
        LabelledChildren(seconds)("recall", "extra")


def test_threads_asking_at_once_share_one_child() -> None:
    registry = CollectorRegistry()
    by = LabelledChildren(Counter("c_total", "c", ["stage"], registry=registry))
    start = threading.Barrier(8)
    got: list[Counter] = []

    def ask() -> None:
        start.wait()
        child = by("recall")
        child.inc()
        got.append(child)

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len({id(child) for child in got}) == 1
    assert registry.get_sample_value("c_total", {"stage": "recall"}) == 8.0


def test_an_rpc_timer_counts_the_call_by_method_and_code() -> None:
    method = "ObserveTestMethod"
    with RpcTimer(method) as timer:
        timer.code = "INVALID_ARGUMENT"
    with RpcTimer(method):
        pass
    assert REGISTRY.get_sample_value(
        "planner_rpc_total", {"method": method, "code": "INVALID_ARGUMENT"}) == 1.0
    assert REGISTRY.get_sample_value("planner_rpc_total", {"method": method, "code": "OK"}) == 1.0
    assert REGISTRY.get_sample_value(
        "planner_rpc_duration_seconds_count", {"method": method}) == 2.0
