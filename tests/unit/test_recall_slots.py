"""Planning slots: at most N plans at once; a cancelled waiter leaves without a slot."""

from __future__ import annotations

import threading
import time

import pytest

from planner_svc.core.errors import Cancelled
from planner_svc.recall.slots import POLL_S, PlanSlots


def _never() -> bool:
    return False


def test_no_limit_never_waits() -> None:
    slots = PlanSlots(None)
    held = [slots.take(_never) for _ in range(100)]
    with held[0], held[-1]:
        pass


def test_size_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PlanSlots(0)


def test_a_waiter_gets_the_slot_its_holder_gives_back() -> None:
    slots = PlanSlots(1)
    order: list[str] = []
    first = slots.take(_never)
    first.__enter__()

    def second() -> None:
        with slots.take(_never):
            order.append("second planned")

    waiter = threading.Thread(target=second)
    waiter.start()
    waiter.join(3 * POLL_S)
    assert waiter.is_alive() and order == []
    order.append("first done")
    first.__exit__(None, None, None)
    waiter.join(5)
    assert order == ["first done", "second planned"]


def test_two_slots_let_two_plans_run_at_once() -> None:
    slots = PlanSlots(2)
    with slots.take(_never), slots.take(_never), pytest.raises(Cancelled):
        slots.take(lambda: True)


def test_a_cancelled_waiter_leaves_and_keeps_no_slot() -> None:
    slots = PlanSlots(1)
    cancel = threading.Event()
    outcome: list[BaseException] = []

    def waiter() -> None:
        try:
            slots.take(cancel.is_set)
        except Cancelled as exc:
            outcome.append(exc)

    with slots.take(_never):
        thread = threading.Thread(target=waiter)
        thread.start()
        cancel.set()
        started = time.monotonic()
        thread.join(5)
        assert time.monotonic() - started < 1.0
    assert [type(e) for e in outcome] == [Cancelled]
    assert "waiting for a planning slot" in str(outcome[0])
    with slots.take(lambda: True):  # free again: taken at once, no cancellation looked at
        pass


def test_a_waiter_cancelled_as_the_slot_frees_gives_it_back() -> None:
    # acquire succeeds on the poll after the holder gives the slot back, but the caller was
    # cancelled meanwhile: the slot must go back, not be kept by a plan that will not run
    slots = PlanSlots(1)
    cancelled = threading.Event()
    outcome: list[BaseException] = []
    held = slots.take(_never)
    held.__enter__()

    def waiter() -> None:
        try:
            slots.take(cancelled.is_set)
        except Cancelled as exc:
            outcome.append(exc)

    thread = threading.Thread(target=waiter)
    thread.start()
    time.sleep(POLL_S / 5)
    cancelled.set()
    held.__exit__(None, None, None)
    thread.join(5)
    assert [type(e) for e in outcome] == [Cancelled]
    with slots.take(lambda: True):
        pass


def _queued(slots: PlanSlots, count: int) -> bool:
    """Whether ``count`` calls wait in ``slots``' queue (within 5 s)."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if len(slots._queue) == count:
            return True
        time.sleep(0.001)
    return False


def test_waiters_get_the_slot_in_the_order_they_came() -> None:
    slots = PlanSlots(1)
    order: list[int] = []
    holder = slots.take(_never)
    holder.__enter__()

    def call(n: int) -> None:
        with slots.take(_never):
            order.append(n)

    threads = []
    for n in range(4):
        thread = threading.Thread(target=call, args=(n,))
        thread.start()
        threads.append(thread)
        assert _queued(slots, n + 1)
    holder.__exit__(None, None, None)
    for thread in threads:
        thread.join(5)
    assert order == [0, 1, 2, 3]


def test_a_new_call_does_not_overtake_a_waiting_one() -> None:
    slots = PlanSlots(1)
    holder = slots.take(_never)
    holder.__enter__()
    got: list[str] = []
    waiter = threading.Thread(target=lambda: (slots.take(_never), got.append("waiter")))
    waiter.start()
    assert _queued(slots, 1)
    holder.__exit__(None, None, None)  # handed to the waiter, not left free
    with pytest.raises(Cancelled):
        slots.take(lambda: True)
    waiter.join(5)
    assert got == ["waiter"]


def test_a_cancellation_check_that_raises_leaves_no_slot_behind() -> None:
    slots = PlanSlots(1)
    holder = slots.take(_never)
    holder.__enter__()
    calls = 0

    def broken() -> bool:
        nonlocal calls
        calls += 1
        raise RuntimeError("peer gone")

    failed: list[BaseException] = []
    thread = threading.Thread(target=lambda: _capture(failed, lambda: slots.take(broken)))
    thread.start()
    thread.join(5)
    assert [type(e) for e in failed] == [RuntimeError] and calls == 1
    assert len(slots._queue) == 0
    holder.__exit__(None, None, None)
    with slots.take(lambda: True):  # the slot came back free
        pass


def _capture(into: list[BaseException], call: object) -> None:
    try:
        call()  # type: ignore[operator]
    except BaseException as exc:
        into.append(exc)
