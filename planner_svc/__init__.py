"""planner-svc: evidence plans over gRPC.

Given a question, the service recalls candidate spans through three recall legs (structured
full-text query, semantic search, hop expansion), then selects spans deterministically under a
hard token budget with a per-source diversity cap, and returns an ``EvidencePlan`` whose BLAKE3
plan hash any client can recompute.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
"""The package version (also in ``pyproject.toml``)."""
