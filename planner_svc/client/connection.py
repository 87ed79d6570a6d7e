"""Where a client finds the server and how it authenticates, without importing gRPC.

Kept apart from the gRPC helpers so a command's module loads cheaply (``planner-svc`` imports
every subcommand module to build its help).
"""

from __future__ import annotations

from planner_svc.settings import ENV_AUTH_TOKEN, default_address, read_environment

__all__ = ["DEFAULT_ADDRESS", "auth_metadata", "unavailable_hint"]

DEFAULT_ADDRESS = default_address()
"""Where the clients look for a server by default: the default bind address and port."""


def auth_metadata() -> tuple[tuple[str, str | bytes], ...]:
    """``authorization: Bearer <token>`` from the environment's token, or no metadata."""
    token = read_environment().auth_token
    return (("authorization", f"Bearer {token}"),) if token else ()


def unavailable_hint(code_name: str, target: str) -> str:
    """Extra advice for a status a user can fix from the command line."""
    if code_name == "UNAVAILABLE":
        return f" (is `planner-svc serve` running at {target}? pass --address HOST:PORT)"
    if code_name == "UNAUTHENTICATED":
        return f" (set {ENV_AUTH_TOKEN} to the server's token)"
    return ""
