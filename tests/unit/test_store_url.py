"""Choosing the store: URLs, the settings flag, a replica's data directory."""

from __future__ import annotations

from pathlib import Path

import pytest

from planner_svc.core.errors import ConfigError
from planner_svc.index.replica import STORE_ID_FILE, claim_data_dir
from planner_svc.settings import ServerSettings
from planner_svc.store.open import open_store, shared_store_id
from planner_svc.store.store import Store
from planner_svc.store.url import check_store_url, redacted
from tests.pgserver import Backend


def test_store_urls() -> None:
    assert check_store_url(None) is None and check_store_url("") is None
    url = "postgresql://planner:secret@db:5432/planner"
    assert check_store_url(url) == url
    assert check_store_url("postgres://db/x") == "postgres://db/x"
    with pytest.raises(ConfigError) as err:
        check_store_url("mysql://planner:secret@db/x")
    assert err.value.field == "store" and "secret" not in err.value.reason
    assert redacted(url) == "postgresql://planner@db:5432/planner"
    assert redacted("postgresql://db/x") == "postgresql://db/x"
    assert ServerSettings(store="").store is None
    with pytest.raises(ConfigError):
        ServerSettings(store="sqlite:///tmp/x")


def test_replica_directory_follows_its_store(tmp_path: Path) -> None:
    index = tmp_path / "index"
    index.mkdir()
    (index / "manifest.json").write_text("{}")
    assert claim_data_dir(tmp_path, "store-a")  # an index of an unrecorded store goes
    assert not index.exists()
    assert (tmp_path / STORE_ID_FILE).read_text() == "store-a\n"
    index.mkdir()
    assert not claim_data_dir(tmp_path, "store-a")  # the same store keeps it
    assert index.exists()
    assert claim_data_dir(tmp_path, "store-b")  # another store's is rebuilt
    assert not index.exists()


def test_each_shared_store_has_its_own_id(backend: Backend) -> None:
    with backend.open() as store:
        found = shared_store_id(store)
        if isinstance(store, Store):
            assert found is None  # the embedded store lives in the directory itself
        else:
            assert found and len(found) == 36
            with open_store(backend.data_dir, backend.url) as again:
                assert shared_store_id(again) == found
