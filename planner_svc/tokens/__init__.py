"""Exact token accounting: a model registry and the tokenizers behind it.

A request's ``model`` picks an entry of the registry. The entry gives the model's context
window, which caps the budget at ``min(requested, context_window // 2)``, and optionally a
tokenizer that counts each span's tokens exactly. Spans of a model without a usable tokenizer
are counted by the estimator of :mod:`planner_svc.core.tokens`, the plan records
``token_estimate = true`` and its budget takes the 0.9 factor (README.md, "Selection rules").

Registry file (JSON; the packaged default is ``planner_svc/data/models.json``, the server takes
another with ``planner-svc serve --models FILE``)::

    {
      "models": {
        "minilm-l6": {
          "context_window": 512,
          "tokenizer": {"kind": "huggingface",
                        "path": "models/minilm-l6-m2v-256/tokenizer.json"}
        },
        "gpt-4o": {
          "context_window": 128000,
          "tokenizer": {"kind": "tiktoken", "encoding": "o200k_base"}
        },
        "local-llm": {"context_window": 32768}
      }
    }

- ``models``: required object, model name (exact, case-sensitive, 1..200 characters) -> entry.
- ``context_window``: required integer >= 1, in tokens.
- ``tokenizer``: optional; absent means every span of the model is estimated.

  - ``{"kind": "huggingface", "path": P}``: a ``tokenizers`` tokenizer.json. A relative ``P``
    is looked up next to the registry file, then at the repository root. Counts exclude special
    tokens; truncation and padding stored in the file are ignored.
  - ``{"kind": "tiktoken", "encoding": E}``, ``E`` one of cl100k_base (GPT-3.5, GPT-4) and
    o200k_base (GPT-4o): OpenAI's BPE encodings (tiktoken's), counted exactly and offline
    with the ``bpe-openai`` package, which bundles their rank files. Nothing is downloaded.

Validation rejects, never clamps: an unknown key, a missing or out-of-range value, a duplicate
name or a tokenizer file that does not exist raises :class:`~planner_svc.core.errors.ConfigError`
whose field is the path inside the file, e.g. ``models.gpt-4o.context_window``.

Public surface: :func:`load_registry`, :func:`parse_registry`, :class:`ModelRegistry`,
:class:`ModelSpec`, :class:`HuggingFaceTokenizer`, :class:`TiktokenTokenizer`,
:class:`RegistryCounter`, :class:`TokenizerUnavailable`.
"""

from __future__ import annotations

from planner_svc.tokens.backends import TokenizerUnavailable
from planner_svc.tokens.counter import RegistryCounter
from planner_svc.tokens.registry import (
    TIKTOKEN_ENCODINGS,
    HuggingFaceTokenizer,
    ModelRegistry,
    ModelSpec,
    TiktokenTokenizer,
    TokenizerSpec,
    default_registry_path,
    load_registry,
    parse_registry,
)

__all__ = [
    "TIKTOKEN_ENCODINGS",
    "HuggingFaceTokenizer",
    "ModelRegistry",
    "ModelSpec",
    "RegistryCounter",
    "TiktokenTokenizer",
    "TokenizerSpec",
    "TokenizerUnavailable",
    "default_registry_path",
    "load_registry",
    "parse_registry",
]
