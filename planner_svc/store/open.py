"""Opening the store a process is configured with: the embedded SQLite store in its data
directory (the default), or a shared PostgreSQL store named by URL (``--store
postgresql://...``), with the data directory then holding only the replica's derived indexes.
"""

from __future__ import annotations

from pathlib import Path
from typing import TypeAlias

from planner_svc.store.postgres import PostgresStore
from planner_svc.store.store import Store
from planner_svc.store.url import check_store_url

__all__ = ["AnyStore", "open_store", "shared_store_id"]

AnyStore: TypeAlias = Store | PostgresStore
"""Either backend: both have the same methods with the same results."""


def open_store(data_dir: Path, url: str | None = None) -> AnyStore:
    """Open the store: the PostgreSQL store at ``url``, else the SQLite store in ``data_dir``.

    Raises:
        ConfigError: a bad URL, or a store with a newer schema.
        StoreUnavailable: the PostgreSQL server cannot be reached.
    """
    checked = check_store_url(url)
    if checked is None:
        return Store.open(data_dir)
    return PostgresStore.open(checked)


def shared_store_id(store: AnyStore) -> str | None:
    """The random id of a shared (PostgreSQL) store, made when it was created; None for the
    embedded store, which lives in the data directory itself."""
    if isinstance(store, PostgresStore):
        return store.get_meta("store_id") or ""
    return None
