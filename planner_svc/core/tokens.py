"""Token estimation and the budget rule.

Source: memory-planner seed, "Budget derivation and the token-estimate fallback" and
"TokenAccounting: the adapter seam"; README.md, "Selection rules".
"""

from __future__ import annotations

from typing import Protocol


class TokenAccounting(Protocol):
    """Exact token counts and context windows for named models.

    ``count`` returns None when no exact tokenizer is known for ``model`` (the caller then uses
    :func:`estimate_tokens` and the plan is in estimate mode); ``context_window`` returns None
    when the model's window is unknown (no ceiling applies); ``tokenizer_of`` names the
    tokenizer that counts ``model`` (models sharing a tokenizer share the name, so a span's
    count is computed once per tokenizer), or None when ``model`` has none.
    """

    def count(self, model: str, text: str) -> int | None: ...

    def context_window(self, model: str) -> int | None: ...

    def tokenizer_of(self, model: str) -> str | None: ...


def estimate_tokens(text: str) -> int:
    """Script-aware token estimate: ceil(ASCII bytes / 3.6) + one token per non-ASCII char.

    Counting each non-ASCII code point as a whole token over-estimates accented Latin text (the
    safe direction) and keeps CJK text, about one token per character, from being
    under-counted threefold as a flat bytes / 3.6 would. Integer arithmetic:
    ceil(a / 3.6) == ceil(10a / 36), so no float rounding enters the count.
    """
    # Each ASCII character is one UTF-8 byte; encoding with errors="ignore" drops the rest,
    # counting ASCII characters at C speed.
    ascii_bytes = len(text) if text.isascii() else len(text.encode("ascii", "ignore"))
    non_ascii = len(text) - ascii_bytes
    return (ascii_bytes * 10 + 35) // 36 + non_ascii


def effective_budget(requested: int, context_window: int | None, estimate_mode: bool) -> int:
    """The effective budget B in tokens.

    ``B = min(requested, floor(context_window / 2))`` when the context window is known, else
    ``requested``; then ``floor(B * 0.9)`` when any span's tokens were estimated. The 0.9 factor
    is applied in exact integer arithmetic (``B * 9 // 10``).

    Raises:
        ValueError: when ``requested`` or ``context_window`` is negative.
    """
    if requested < 0:
        raise ValueError(f"requested budget must be >= 0, got {requested}")
    budget = requested
    if context_window is not None:
        if context_window < 0:
            raise ValueError(f"context window must be >= 0, got {context_window}")
        budget = min(budget, context_window // 2)
    if estimate_mode:
        budget = budget * 9 // 10
    return budget
