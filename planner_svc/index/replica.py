"""A replica's data directory: the derived indexes of one shared store.

With a shared store (PostgreSQL) the data directory holds only derived data (the vector index
under ``index/``), and ``store-id`` names the store it was derived from. Indexes built from
another store, or from an unrecorded one, are removed before use, so they are rebuilt from the
store the replica now serves instead of being extended with another store's rows.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import structlog

from planner_svc.index.vector_index import INDEX_DIRNAME

__all__ = ["STORE_ID_FILE", "claim_data_dir"]

STORE_ID_FILE = "store-id"
"""File in a replica's data directory naming the shared store its indexes derive from."""

_log = structlog.get_logger("planner_svc.index")


def claim_data_dir(data_dir: Path, store_id: str) -> bool:
    """Make ``data_dir`` the replica directory of the shared store ``store_id``.

    Returns:
        True when derived indexes of another (or an unrecorded) store were removed.
    """
    data_dir.mkdir(parents=True, exist_ok=True)
    marker = data_dir / STORE_ID_FILE
    recorded = marker.read_text(encoding="utf-8").strip() if marker.exists() else None
    if recorded == store_id:
        return False
    index = data_dir / INDEX_DIRNAME
    removed = index.exists()
    if removed:
        _log.info("replica.index_discarded", data_dir=str(data_dir),
                  built_from=recorded or "an unrecorded store", store_id=store_id)
        shutil.rmtree(index)
    marker.write_text(store_id + "\n", encoding="utf-8")
    return removed
