"""Everything that knows gRPC or protobuf on the serving side.

- :mod:`~planner_svc.server.app`: ``create_server`` (servicers, health, reflection, size
  limits, interceptors), ``serve`` and ``serve_workers``;
- :mod:`~planner_svc.server.services`: the composition root, :class:`Services`;
- :mod:`~planner_svc.server.servicers` (Plan, Memory) and :mod:`~planner_svc.server.research`
  (the research stream): thin servicers;
- :mod:`~planner_svc.server.convert`: the one proto <-> core converter;
- :mod:`~planner_svc.server.errors`: the one error -> status table;
- :mod:`~planner_svc.server.observe` (request ids, logs, metrics) and
  :mod:`~planner_svc.server.auth` (bearer token);
- :mod:`~planner_svc.server.cli`: ``planner-svc serve``.

Importing this package is cheap (``planner-svc`` loads its CLI module): names are imported from
their modules on first use.
"""

from __future__ import annotations

import importlib
import typing

if typing.TYPE_CHECKING:
    from planner_svc.server.app import RunningServer, create_server, serve, serve_workers
    from planner_svc.server.services import Services

_EXPORTS: dict[str, str] = {
    "RunningServer": "planner_svc.server.app",
    "Services": "planner_svc.server.services",
    "create_server": "planner_svc.server.app",
    "serve": "planner_svc.server.app",
    "serve_workers": "planner_svc.server.app",
}

__all__ = ["RunningServer", "Services", "create_server", "serve", "serve_workers"]


def __getattr__(name: str) -> typing.Any:
    """Import a public name from its module on first access."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
