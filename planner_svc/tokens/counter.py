"""The registry-backed token counter: :class:`planner_svc.core.tokens.TokenAccounting` over a
:class:`ModelRegistry`.

Source: memory-planner seed, "TokenAccounting: the adapter seam". A model the
registry does not know has neither an exact count nor a context window; a registered model
without a usable tokenizer still has its context window (the ceiling applies) while its spans
are estimated.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

import structlog

from planner_svc.tokens.backends import TextCounter, TokenizerUnavailable, load_backend
from planner_svc.tokens.registry import ModelRegistry, TiktokenTokenizer, TokenizerSpec

__all__ = ["Loader", "RegistryCounter"]

#: Turns a tokenizer spec into a text counter, or raises TokenizerUnavailable.
Loader = Callable[[TokenizerSpec], TextCounter]

_log = structlog.get_logger("planner_svc.tokens")


class _Slot:
    """One tokenizer, loaded at most once; ``done`` is set after ``counter``."""

    __slots__ = ("counter", "done", "lock")

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.done = False
        self.counter: TextCounter | None = None


class RegistryCounter:
    """Exact token counts and context windows for the models of a registry.

    Tokenizers load lazily, on the first ``count`` for a model that uses them, once per
    distinct tokenizer (two models naming the same file share it). A tokenizer that cannot load
    is logged once (``tokenizer_unavailable``) and its models are estimated from then on.
    Thread-safe: any number of threads may call ``count`` concurrently; each tokenizer is loaded
    by exactly one of them while the others wait for it.

    Args:
        registry: the models.
        loader: builds a counter from a spec (default: :func:`load_backend`).
    """

    def __init__(self, registry: ModelRegistry, *, loader: Loader = load_backend) -> None:
        self.registry = registry
        self._loader = loader
        self._slots: Mapping[TokenizerSpec, _Slot] = {
            spec.tokenizer: _Slot()
            for spec in registry.models.values()
            if spec.tokenizer is not None
        }

    def count(self, model: str, text: str) -> int | None:
        """Exact token count of ``text`` (tokens, special tokens excluded) under ``model``'s
        tokenizer; None when the model is unknown, has no tokenizer, its tokenizer is
        unavailable, or the tokenizer rejects the text. The caller then estimates."""
        spec = self.registry.get(model)
        if spec is None or spec.tokenizer is None:
            return None
        counter = self._counter(spec.tokenizer, model)
        return None if counter is None else counter(text)

    def context_window(self, model: str) -> int | None:
        """The model's context window in tokens; None when the model is not registered."""
        spec = self.registry.get(model)
        return None if spec is None else spec.context_window

    def tokenizer_of(self, model: str) -> str | None:
        """A stable name of ``model``'s tokenizer (``tiktoken:o200k_base``,
        ``huggingface:/abs/path/tokenizer.json``), equal for models that share one; None when
        the model is unknown or registered without a tokenizer."""
        spec = self.registry.get(model)
        if spec is None or spec.tokenizer is None:
            return None
        tokenizer = spec.tokenizer
        if isinstance(tokenizer, TiktokenTokenizer):
            return f"tiktoken:{tokenizer.encoding}"
        return f"huggingface:{tokenizer.path}"

    def is_exact(self, model: str) -> bool:
        """Whether ``model`` is counted exactly (loads its tokenizer if not loaded yet)."""
        spec = self.registry.get(model)
        if spec is None or spec.tokenizer is None:
            return False
        return self._counter(spec.tokenizer, model) is not None

    def _counter(self, tokenizer: TokenizerSpec, model: str) -> TextCounter | None:
        slot = self._slots[tokenizer]
        if slot.done:
            return slot.counter
        with slot.lock:
            if not slot.done:
                try:
                    slot.counter = self._loader(tokenizer)
                except TokenizerUnavailable as exc:
                    _log.warning("tokenizer_unavailable", model=model, kind=tokenizer.kind,
                                 reason=str(exc))
                slot.done = True
        return slot.counter
