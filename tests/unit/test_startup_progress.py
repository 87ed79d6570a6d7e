"""The recall catalog's start-up build reports its progress without flooding the log."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import pytest

from planner_svc.server import services


@dataclass
class _Position:
    edge_id: int = 0
    source_version_id: int = 0


@dataclass
class _Catalog:
    step_s: float
    clock: list[float]
    position: _Position = field(default_factory=_Position)

    def catch_up(self, progress: Callable[[str, int, int], None]) -> int:
        for rows in ("nodes", "edges"):
            for at in range(1, 101):  # a hundred batches of each kind
                self.clock[0] += self.step_s
                progress(rows, at * 10, 1000)
        return 1000


@dataclass
class _Planner:
    catalog: _Catalog


@dataclass
class _Log:
    """Records the events logged to it (the module's own logger may be cached by structlog
    once any earlier test configured logging, so structlog's capture cannot see it)."""

    events: list[dict[str, object]] = field(default_factory=list)

    def info(self, event: str, **fields: object) -> None:
        self.events.append({"event": event, **fields})


def _lines(monkeypatch: pytest.MonkeyPatch, step_s: float) -> list[tuple[str, int]]:
    clock = [0.0]
    monkeypatch.setattr(services.time, "perf_counter", lambda: clock[0])
    log = _Log()
    monkeypatch.setattr(services, "_log", log)
    services.build_catalog(_Planner(_Catalog(step_s, clock)))  # type: ignore[arg-type]
    return [(str(e["rows"]), int(str(e["at"]))) for e in log.events
            if e["event"] == "startup.catalog_progress"]


def test_a_quick_build_logs_each_kind_of_rows_once_when_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert _lines(monkeypatch, step_s=0.01) == [("nodes", 1000), ("edges", 1000)]


def test_a_long_build_logs_every_tenth(monkeypatch: pytest.MonkeyPatch) -> None:
    lines = _lines(monkeypatch, step_s=0.5)  # a tenth takes 5 s
    assert [at for rows, at in lines if rows == "nodes"] == list(range(100, 1001, 100))
    assert len(lines) == 20
