"""Argument types and error wording shared by the command-line clients.

Each type rejects a bad value at parse time with argparse's usual one-line error, so no command
reaches the network with a value the server would refuse or the protobuf runtime would crash on.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable

DEFAULT_ADDRESS = "127.0.0.1:50151"


def address(value: str) -> str:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6) with a port in 1..65535."""
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not HOST:PORT with a port in 1..65535 (e.g. {DEFAULT_ADDRESS})"
        )
    return value


def int_range(low: int, high: int) -> Callable[[str], int]:
    """An integer type accepting ``low <= n <= high``."""

    def parse(value: str) -> int:
        try:
            number = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not an integer") from None
        if not low <= number <= high:
            raise argparse.ArgumentTypeError(f"{number} is outside {low}..{high}")
        return number

    parse.__name__ = f"integer in {low}..{high}"
    return parse


def non_empty(value: str) -> str:
    """A string with something besides whitespace."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value


def unavailable_hint(code_name: str, target: str) -> str:
    """Extra advice for a status a user can fix from the command line."""
    if code_name == "UNAVAILABLE":
        return f" (is `planner-svc serve` running at {target}? pass --address HOST:PORT)"
    if code_name == "UNAUTHENTICATED":
        return " (set PLANNER_SVC_AUTH_TOKEN to the server's token)"
    return ""


def auth_metadata() -> tuple[tuple[str, str | bytes], ...]:
    """``authorization: Bearer <token>`` from ``PLANNER_SVC_AUTH_TOKEN``, or no metadata."""
    token = os.environ.get("PLANNER_SVC_AUTH_TOKEN")
    return (("authorization", f"Bearer {token}"),) if token else ()
