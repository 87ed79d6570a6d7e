"""The command-line gRPC clients of the service, and what they share.

- :mod:`~planner_svc.client.plan`: ``planner-svc plan`` (one evidence plan);
- :mod:`~planner_svc.client.research`: ``planner-svc research`` (plays orchestrator on a
  research stream);
- :mod:`~planner_svc.client.eval`: ``planner-svc eval`` (the server's side of an evaluation);
- :mod:`~planner_svc.client.health`: ``planner-svc health`` (a server's health status, as a
  probe);
- :mod:`~planner_svc.client.select`: ``planner-svc select`` (Phase B over proto3 JSON pools, the
  conformance entry point);
- :mod:`~planner_svc.client.common`: the default request for a question, plan rendering,
  waiting for a server; :mod:`~planner_svc.client.connection`: the default address and the
  bearer token.

Importing this package is cheap: the subcommand modules import gRPC only when they run.
"""

from planner_svc.client.connection import DEFAULT_ADDRESS, auth_metadata, unavailable_hint

__all__ = ["DEFAULT_ADDRESS", "auth_metadata", "unavailable_hint"]
