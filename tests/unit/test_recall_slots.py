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
