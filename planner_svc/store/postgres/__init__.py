"""The shared store: the same store as :mod:`planner_svc.store` in a PostgreSQL database, so
that any number of planner replicas read and write one store (docs/scaling.md).

Public surface: :class:`PostgresStore` and :func:`is_postgres_url`. The derived indexes (the
recall catalog, the vector index) stay in each replica's memory and data directory and follow
the store by its change feed, as they follow the embedded store.
"""

from planner_svc.store.postgres.store import PostgresStore
from planner_svc.store.url import is_postgres_url

__all__ = ["PostgresStore", "is_postgres_url"]
