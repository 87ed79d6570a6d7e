"""Test-wide setup: server logs go to stderr, so commands under test own stdout."""

from __future__ import annotations

from planner_svc.server.observe import configure_logging

configure_logging(json_logs=False, level="info")
