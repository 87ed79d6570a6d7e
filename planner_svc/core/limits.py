"""Limits of requests and settings, written once, and the interval type that states them.

Every bound a request field, a setting or a command-line flag must respect is one
:class:`Bounds` here or beside the setting it bounds; validation, the flags' argument types and
their help text all read it, so a limit is never repeated as a literal.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "BUDGET_TOKENS",
    "EXPAND_DEPTH",
    "FILTER_CHARS",
    "INT64",
    "LEG_RESULTS",
    "MAX_BUDGET_TOKENS",
    "MAX_EXPAND_DEPTH",
    "MAX_FILTER_CHARS",
    "MAX_FILTER_LABELS",
    "MAX_FILTER_PROPERTIES",
    "MAX_LEG_RESULTS",
    "TCP_PORT",
    "Bounds",
]


@dataclass(frozen=True, slots=True)
class Bounds:
    """An interval of allowed values: ``[low, high]``, or ``(low, high]`` when ``low_open``.

    Integer bounds (both ``int``, closed) print as ``low..high``; others as ``[low, high]`` or
    ``(low, high]`` with the shortest float formatting (``[0, 300]``, ``(0, 1]``).
    """

    low: float
    high: float
    low_open: bool = False

    def __contains__(self, value: object) -> bool:
        """Whether ``value`` is a number (not a bool) inside the interval; NaN never is."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            return False
        above = value > self.low if self.low_open else value >= self.low
        return above and value <= self.high

    @property
    def integral(self) -> bool:
        """True for closed bounds of integers (printed ``low..high``)."""
        return isinstance(self.low, int) and isinstance(self.high, int) and not self.low_open

    def __str__(self) -> str:
        if self.integral:
            return f"{self.low}..{self.high}"
        return f"{'(' if self.low_open else '['}{self.low:g}, {self.high:g}]"


MAX_BUDGET_TOKENS = 10_000_000
"""Largest budget a plan request (or a research session's evidence budget) may ask for, tokens."""
BUDGET_TOKENS = Bounds(1, MAX_BUDGET_TOKENS)
"""Allowed requested budgets, tokens."""

MAX_LEG_RESULTS = 1000
"""Largest ``k`` / ``limit`` a recall leg may ask for (0 takes the server default)."""
LEG_RESULTS = Bounds(0, MAX_LEG_RESULTS)
"""Allowed ``semantic.k`` / ``query.limit`` (0 = the server default)."""

MAX_EXPAND_DEPTH = 2
"""Deepest hop expansion a request may ask for."""
EXPAND_DEPTH = Bounds(0, MAX_EXPAND_DEPTH)
"""Allowed ``expand_depth``."""

MAX_FILTER_LABELS = 32
"""Most labels a structured query may filter on."""
MAX_FILTER_PROPERTIES = 32
"""Most ``key = value`` pairs a structured query may filter on."""
MAX_FILTER_CHARS = 256
"""Longest label, property key or property value, in characters (code points)."""
FILTER_CHARS = Bounds(1, MAX_FILTER_CHARS)
"""Allowed length of a label, property key or property value, characters."""

TCP_PORT = Bounds(1, 65535)
"""A TCP port a client connects to (a server may also bind 0: any free port)."""

INT64 = Bounds(-(2**63), 2**63 - 1)
"""Signed 64-bit integers: the range of every time in microseconds since the Unix epoch."""
