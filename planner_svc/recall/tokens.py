"""Token accounting for recall: exact counts per model when a tokenizer is known.

The default counter knows no model, so every span is estimated (``core.tokens``) and the
budget carries the estimate factor.
"""

from __future__ import annotations


class EstimatorOnly:
    """A counter that knows no tokenizer and no context window."""

    def count(self, model: str, text: str) -> int | None:
        """Always None: the caller estimates."""
        return None

    def context_window(self, model: str) -> int | None:
        """Always None: no ceiling."""
        return None


def default_counter() -> EstimatorOnly:
    """The counter the server uses when no model registry is configured."""
    return EstimatorOnly()
