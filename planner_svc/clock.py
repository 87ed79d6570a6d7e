"""The one wall clock: now in microseconds since the Unix epoch.

Everything that needs "now" takes a :data:`Clock` argument (the core takes ``now`` as a plain
number), so tests pass a fixed clock and there is one place the process reads the time.
"""

from __future__ import annotations

import time
from collections.abc import Callable

__all__ = ["Clock", "wall_clock_us"]

Clock = Callable[[], int]
"""Returns now in integer microseconds since the Unix epoch."""


def wall_clock_us() -> int:
    """Now, in integer microseconds since the Unix epoch (the system's real-time clock)."""
    return time.time_ns() // 1000
