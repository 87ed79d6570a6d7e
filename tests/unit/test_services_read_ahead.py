"""Only a process that serves plans reads the vector index ahead: ``Services.open`` asks for it
when told to (``serve``'s process, each ``--workers`` worker), not by default (the
``--workers`` parent's catch-up, tools)."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from planner_svc.index import VectorIndex
from planner_svc.server.services import Services
from planner_svc.settings import ServerSettings


@pytest.mark.parametrize("read_ahead", [False, True])
def test_services_read_the_index_ahead_only_when_asked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, read_ahead: bool
) -> None:
    calls: list[VectorIndex] = []

    def recording(self: VectorIndex) -> threading.Thread | None:
        calls.append(self)
        return None

    monkeypatch.setattr(VectorIndex, "read_ahead", recording)
    services = Services.open(ServerSettings(data_dir=tmp_path / "data"), read_ahead=read_ahead)
    try:
        assert services.index is not None
        assert len(calls) == (1 if read_ahead else 0)
    finally:
        services.close()


@pytest.mark.parametrize("catalog", [False, True])
def test_the_workers_parent_opens_the_services_without_a_recall_catalog(
    tmp_path: Path, catalog: bool
) -> None:
    data = tmp_path / "data"
    first = Services.open(ServerSettings(data_dir=data))  # a store to open again
    assert first.planner.catalog.position.generation >= 0
    first.close()
    services = Services.open(ServerSettings(data_dir=data), catalog=catalog)
    try:
        built = services.planner.catalog.position.generation >= 0
        assert built is catalog
        assert services.index is not None  # the vector index is open and current either way
    finally:
        services.close()
