"""Domain errors of the planner.

Hierarchy::

    PlannerError
    ├── InvalidRequest        a request field is malformed (field path + reason)
    │   └── ConfigError       a configuration value is out of range (rejected, never clamped)
    ├── InsufficientEvidence  the store does not support an answer (abstention), or recall
    │                         produced no span, and the caller did not allow ungrounded
    ├── BackendUnavailable    a recall backend the request needs is not configured
    ├── ProviderError         a research planning model failed (endpoint down, or an answer
    │                         outside the schema, after retries)
    ├── CassetteMiss          a replayed research cassette has no recording for a request
    ├── Overloaded            the server runs as many sessions as it allows; retry later
    ├── StoreUnavailable      the shared store (PostgreSQL) cannot be reached; retry
    ├── ResponseTooLarge      the answer would exceed the server's message limit
    ├── ShuttingDown          the server is stopping; retry on another
    └── Cancelled             the caller cancelled, or its deadline passed; work stopped

Each class maps to one gRPC status in one place (:mod:`planner_svc.server.errors`). Foreign
exceptions (HTTP, SQLite, gRPC) are translated into these where they are caught, with
``raise ... from exc``.

Messages quote client values through :func:`echo` (a short prefix and the length), so an error
about a huge value stays small enough for a gRPC status (the metadata that carries it is
limited to a few KiB; the status table bounds every text again).
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "BackendUnavailable",
    "Cancelled",
    "CassetteMiss",
    "ConfigError",
    "InsufficientEvidence",
    "InvalidRequest",
    "Overloaded",
    "PlannerError",
    "ProviderError",
    "ResponseTooLarge",
    "ShuttingDown",
    "StoreUnavailable",
    "clip",
    "echo",
]

ECHO_CHARS = 40
"""Characters of a client value an error message quotes (:func:`echo`)."""


def clip(text: str, limit: int) -> str:
    """``text`` when it has at most ``limit`` characters, else its first ``limit - 1`` and an
    ellipsis (``limit`` >= 1)."""
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def echo(value: object, *, limit: int = ECHO_CHARS) -> str:
    """A client value as an error message quotes it: its ``repr`` when a string of at most
    ``limit`` characters (any other value: a repr of at most ``limit`` characters); else the
    repr of its first ``limit`` characters, an ellipsis and its length::

        echo("gpt")       -> 'gpt'
        echo("x" * 20000) -> 'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx'… (20000 characters)
    """
    if isinstance(value, str):
        if len(value) <= limit:
            return repr(value)
        return f"{value[:limit]!r}… ({len(value)} characters)"
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text)} characters)"


class PlannerError(Exception):
    """Base of every domain error the planner raises."""


class InvalidRequest(PlannerError):
    """A request field is invalid.

    Attributes:
        field: dotted path of the offending field in the proto3 JSON spelling of the request
            (``pool[3].weight``, ``semantic.alpha``).
        reason: what is wrong and what is allowed.
    """

    def __init__(self, field: str, reason: str) -> None:
        super().__init__(f"{field}: {reason}")
        self.field = field
        self.reason = reason


class ConfigError(InvalidRequest):
    """A configuration value is out of its allowed range."""


class InsufficientEvidence(PlannerError):
    """Recall declined the question (too little absolute evidence) or found no candidate span.

    Attributes:
        metadata: the decision's inputs as strings (``coverage``, ``similarity``,
            ``min_coverage``, ``min_similarity``, ``best_source``, ``live_documents``), carried
            to the client in ``google.rpc.ErrorInfo.metadata``; only ``live_documents`` when
            recall found no span.
    """

    def __init__(self, message: str, *, metadata: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.metadata: dict[str, str] = dict(metadata or {})


class BackendUnavailable(PlannerError):
    """A recall backend the request needs (e.g. the vector index) is not available."""


class ProviderError(PlannerError):
    """The research planning model failed after retries, or answered outside the schema."""


class CassetteMiss(PlannerError):
    """A replaying cassette holds no recording for a request (its key is in the message)."""


class Overloaded(PlannerError):
    """The server already runs as much of this work as it allows at once; retry later."""


class StoreUnavailable(PlannerError):
    """The shared store's server cannot be reached, or the connection to it broke mid-request;
    nothing of the failed call was committed, and a retry (on this or another replica) may
    succeed."""


class ResponseTooLarge(PlannerError):
    """The response (or one message of a stream) would exceed the server's message limit;
    the message names the size, the limit and what to lower."""


class ShuttingDown(PlannerError):
    """The server is shutting down and takes no new work; retry (on another server)."""


class Cancelled(PlannerError):
    """The caller cancelled the request or session, or its deadline passed; work stopped."""
