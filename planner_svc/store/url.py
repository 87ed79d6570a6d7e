"""Store URLs: which store a process opens (no driver is imported here)."""

from __future__ import annotations

from planner_svc.core.errors import ConfigError

__all__ = ["URL_SCHEMES", "check_store_url", "is_postgres_url", "redacted"]

URL_SCHEMES = ("postgresql://", "postgres://")
"""A store URL starting with one of these names a PostgreSQL store."""


def is_postgres_url(value: str) -> bool:
    """Whether ``value`` is a PostgreSQL connection URL (``postgresql://...``)."""
    return value.startswith(URL_SCHEMES)


def check_store_url(url: str | None) -> str | None:
    """``url`` when it names a supported store; None (or empty) = the embedded store.

    Raises:
        ConfigError: (``store``) not a ``postgresql://`` or ``postgres://`` URL.
    """
    if url is None or url == "":
        return None
    if not is_postgres_url(url):
        raise ConfigError("store", f"{redacted(url)!r} is not a supported store: give a "
                                   "postgresql://user@host:port/database URL, or none for the "
                                   "SQLite store in the data directory")
    return url


def redacted(url: str) -> str:
    """``url`` without its password (for messages and logs)."""
    head, at, tail = url.rpartition("@")
    if not at:
        return url
    scheme, sep, credentials = head.partition("://")
    user = credentials.split(":", 1)[0]
    return f"{scheme}{sep}{user}@{tail}" if sep else url
