"""Planning slots: how many plans one process computes at once.

A plan is CPU-bound Python (recall's per-candidate work holds the interpreter lock), so plans
computed at once in one process only take turns on one core, and every turn costs a lock
hand-off and cold caches. Measured on 2 cores with ghz at 8 concurrent calls and 8 handler
threads: 93 plans/s with every handler planning at once, 112-118 plans/s with one or two
planning slots, with p99 latency down from 178 ms to 115-134 ms; since then one slot has
served more plans than two (the default is 1, docs/architecture.md). A process therefore plans
in one slot or a few, and the other calls wait their turn with their handler thread blocked
(not holding the interpreter lock), while handler threads stay free for health checks and
research streams. More processes (``serve --workers``) are how a host's other cores serve plans.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from types import TracebackType

from planner_svc.core.errors import Cancelled

__all__ = ["POLL_S", "PlanSlots"]

POLL_S = 0.05
"""Seconds between two looks at whether a waiting call was cancelled (its deadline passing
cancels it too): a cancelled call leaves the queue within this time."""


class _Held:
    """One taken slot (a context manager that gives it back)."""

    __slots__ = ("_release",)

    def __init__(self, release: Callable[[], None] | None) -> None:
        self._release = release

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._release is not None:
            self._release()


_UNLIMITED = _Held(None)


class PlanSlots:
    """At most ``size`` plans at once; None: no limit (in-process use: eval, tests).

    Thread-safe and first come, first served: a call that finds every slot taken queues, and a
    slot given back goes straight to the call that has waited longest (a newly arrived call
    never takes it first), so no call waits behind a stream of later ones.

    Raises:
        ValueError: ``size`` is below 1.
    """

    def __init__(self, size: int | None) -> None:
        if size is not None and size < 1:
            raise ValueError(f"planning slots must be at least 1, got {size}")
        self.size = size
        self._lock = threading.Lock()
        self._free = size or 0
        self._queue: deque[threading.Event] = deque()  # set: the slot was handed to it

    def take(self, cancelled: Callable[[], bool]) -> _Held:
        """Wait for a free slot; returns a context manager that gives it back.

        Raises:
            Cancelled: ``cancelled()`` turned true while waiting (no slot is kept, and the call
                leaves the queue).
        """
        if self.size is None:
            return _UNLIMITED
        with self._lock:
            if self._free and not self._queue:
                self._free -= 1
                return _Held(self._give_back)
            handed = threading.Event()
            self._queue.append(handed)
        try:
            while not handed.wait(POLL_S):
                if cancelled():
                    raise Cancelled("request cancelled while waiting for a planning slot")
            if cancelled():  # cancelled as the slot came: it goes to the next call
                raise Cancelled("request cancelled while waiting for a planning slot")
        except BaseException:
            self._leave(handed)
            raise
        return _Held(self._give_back)

    def _leave(self, handed: threading.Event) -> None:
        """A waiter gives up: out of the queue, or, if a slot reached it meanwhile, the slot
        passes on."""
        with self._lock:
            if not handed.is_set():
                self._queue.remove(handed)
                return
        self._give_back()

    def _give_back(self) -> None:
        with self._lock:
            if self._queue:
                self._queue.popleft().set()
            else:
                self._free += 1
