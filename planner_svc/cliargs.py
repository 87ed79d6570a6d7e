"""Argument types shared by the command-line tools.

Each type rejects a bad value at parse time with argparse's usual one-line error, so no command
reaches the network with a value the server would refuse or the protobuf runtime would crash on.
Ranges come from :class:`~planner_svc.core.limits.Bounds` declared beside the settings and
request fields they bound, never from literals here.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from planner_svc.core.limits import TCP_PORT, Bounds

__all__ = [
    "URL_SCHEMES",
    "DefaultsHelpFormatter",
    "FromEnvironment",
    "address",
    "bounded",
    "int_range",
    "non_empty",
]


class DefaultsHelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Help that shows each option's default, unless its help already says what the default
    is with ``default:`` (``--store``: "default: the SQLite store in --data", not "(default:
    None)" after it) or there is none to show (an option that is off unless given: no
    "(default: None)", and a switch: no "(default: False)"). A help that only mentions a
    default ("0 = server default") still gets its value."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if ("default:" in (action.help or "") or action.default is None
                or action.default == "" or action.default is False):
            return action.help
        return super()._get_help_string(action)


class FromEnvironment(str):
    """A default read from an environment variable (:attr:`variable`), so a bad value is
    blamed on the variable rather than on the option the user did not type."""

    variable: str = ""

    def __new__(cls, value: str, variable: str = "") -> FromEnvironment:
        made = super().__new__(cls, value)
        made.variable = variable
        return made

    def __getnewargs__(self) -> tuple[str, str]:  # type: ignore[override]
        return str(self), self.variable


URL_SCHEMES = ("http", "https", "grpc", "grpcs")
"""Schemes of URLs people paste for a gRPC address (HTTP clients take them); gRPC's own target
schemes (``dns:///host:port``, ``ipv4:``, ``unix:``, ...) pass through."""


def address(value: str) -> str:
    """``HOST:PORT`` (``[v6]:PORT`` for IPv6, or a gRPC target such as ``dns:///HOST:PORT``)
    with a port in :data:`~planner_svc.core.limits.TCP_PORT`; a URL (``http://...``) is
    refused with the address to give instead."""
    from planner_svc.settings import default_address

    where = (f"${value.variable} is {str(value)!r}, which"
             if isinstance(value, FromEnvironment) else repr(value))
    scheme, sep, rest = value.partition("://")
    if sep and scheme.lower() in URL_SCHEMES:
        authority = rest.split("/", 1)[0]
        _host, colon, port = authority.rpartition(":")
        example = authority if colon and port.isdigit() else default_address()
        raise argparse.ArgumentTypeError(
            f"{where} is a URL; give HOST:PORT without {scheme + '://'!r} (e.g. {example}"
            f"{'; TLS takes --tls-ca' if scheme.lower() in ('https', 'grpcs') else ''})"
        )
    host, sep, port = value.rpartition(":")
    if not sep or not host or not port.isdigit() or int(port) not in TCP_PORT:
        raise argparse.ArgumentTypeError(
            f"{where} is not HOST:PORT with a port in {TCP_PORT} (e.g. {default_address()})"
        )
    return str(value)


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


def bounded(kind: type[Any], bounds: Bounds | None) -> Callable[[str], Any]:
    """An ``int`` or ``float`` type accepting the values inside ``bounds`` (any when None)."""
    if kind is int:
        if bounds is None:
            return int
        return int_range(int(bounds.low), int(bounds.high))

    def parse(value: str) -> float:
        try:
            number = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r} is not a number") from None
        if bounds is not None and number not in bounds:
            raise argparse.ArgumentTypeError(f"{number} is outside {bounds}")
        return number

    parse.__name__ = "number" if bounds is None else f"number in {bounds}"
    return parse


def non_empty(value: str) -> str:
    """A string with something besides whitespace."""
    if not value.strip():
        raise argparse.ArgumentTypeError("must not be empty")
    return value
