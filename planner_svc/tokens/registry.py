"""The model registry: context windows and tokenizers per model name, loaded from JSON.

The file format is described in the package docstring (:mod:`planner_svc.tokens`). Parsing
validates every field and rejects anything out of range with :class:`ConfigError` naming the
field path (``models.<name>.<field>``); nothing is clamped or defaulted silently. Paths are
resolved and checked for existence here, so a registry that loads names only files that exist;
the tokenizers themselves are read later, on first use (:mod:`planner_svc.tokens.counter`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from planner_svc.core.errors import ConfigError

__all__ = [
    "TIKTOKEN_ENCODINGS",
    "HuggingFaceTokenizer",
    "ModelRegistry",
    "ModelSpec",
    "TiktokenTokenizer",
    "TokenizerSpec",
    "default_registry_path",
    "load_registry",
    "parse_registry",
    "repo_root",
]

#: OpenAI BPE encodings a registry may name (bundled with bpe-openai; see ``backends``).
TIKTOKEN_ENCODINGS = ("cl100k_base", "o200k_base")

_TOP_KEYS = frozenset({"models"})
_MODEL_KEYS = frozenset({"context_window", "tokenizer"})
_TOKENIZER_KEYS = {
    "huggingface": frozenset({"kind", "path"}),
    "tiktoken": frozenset({"kind", "encoding"}),
}
_MAX_NAME_CHARS = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class HuggingFaceTokenizer:
    """A ``tokenizers`` tokenizer.json file.

    Attributes:
        path: absolute path of the tokenizer.json (checked to exist at load).
    """

    path: Path

    @property
    def kind(self) -> str:
        """``"huggingface"``."""
        return "huggingface"


@dataclass(frozen=True, slots=True, kw_only=True)
class TiktokenTokenizer:
    """One of OpenAI's BPE encodings (tiktoken's), counted offline with bpe-openai.

    Attributes:
        encoding: one of :data:`TIKTOKEN_ENCODINGS`.
    """

    encoding: str

    @property
    def kind(self) -> str:
        """``"tiktoken"``."""
        return "tiktoken"


TokenizerSpec = HuggingFaceTokenizer | TiktokenTokenizer
"""A model's exact tokenizer: a ``tokenizers`` file or an OpenAI BPE encoding."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """One registered model.

    Attributes:
        name: the model name requests carry in ``model`` (matched exactly, case-sensitive).
        context_window: the model's context window in tokens, >= 1.
        tokenizer: how to count its tokens exactly; None means the estimator always applies.
    """

    name: str
    context_window: int
    tokenizer: TokenizerSpec | None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelRegistry:
    """All registered models, by name.

    Attributes:
        models: model name -> spec.
        source: the file the registry was read from (None when built from a mapping).
    """

    models: Mapping[str, ModelSpec]
    source: Path | None = None

    def get(self, model: str) -> ModelSpec | None:
        """The spec of ``model``, or None when it is not registered."""
        return self.models.get(model)


def repo_root() -> Path:
    """The directory holding the ``planner_svc`` package (a source checkout or editable
    install); the second place relative tokenizer paths are looked up."""
    return Path(__file__).resolve().parent.parent.parent


def default_registry_path() -> Path:
    """The registry shipped with the package: ``planner_svc/data/models.json``."""
    return Path(__file__).resolve().parent.parent / "data" / "models.json"


def load_registry(path: Path | None = None) -> ModelRegistry:
    """Read and validate a registry file (the packaged default when ``path`` is None).

    Relative tokenizer paths are resolved against the file's directory first, then against
    :func:`repo_root`.

    Raises:
        ConfigError: ``models_path`` when the file cannot be read or is not JSON; the field path
            inside the file (``models.<name>.context_window``) when a value is invalid. The
            reason ends with the file name.
    """
    file = default_registry_path() if path is None else path
    try:
        raw = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError("models_path", f"cannot read model registry {file}: {exc}") from None
    try:
        document = json.loads(raw, object_pairs_hook=_reject_duplicates)
    except _DuplicateKey as exc:
        raise ConfigError("models_path", f"duplicate key {exc.key!r} in {file}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            "models_path",
            f"{file} is not valid JSON: line {exc.lineno} column {exc.colno}: {exc.msg}",
        ) from None
    try:
        registry = parse_registry(document, base_dir=file.resolve().parent)
    except ConfigError as exc:
        raise ConfigError(exc.field, f"{exc.reason} (in {file})") from None
    return ModelRegistry(models=registry.models, source=file)


def parse_registry(
    document: object, *, base_dir: Path | None, root: Path | None = None
) -> ModelRegistry:
    """Validate a decoded registry document and build the registry.

    Args:
        document: the decoded JSON (``{"models": {name: entry}}``).
        base_dir: directory relative tokenizer paths are tried against first (None: skip).
        root: directory tried second; defaults to :func:`repo_root`.
    Raises:
        ConfigError: with the field path of the first invalid value.
    """
    search = [d for d in (base_dir, repo_root() if root is None else root) if d is not None]
    top = _object(document, "(registry)")
    _known_keys(top, _TOP_KEYS, "")
    if "models" not in top:
        raise ConfigError("models", "is required (an object of model name -> entry)")
    entries = _object(top["models"], "models")
    models: dict[str, ModelSpec] = {}
    for name, entry in entries.items():
        _check_name(name)
        models[name] = _model(name, entry, search)
    return ModelRegistry(models=dict(sorted(models.items())))


# ---------------------------------------------------------------------------- validation


class _DuplicateKey(ValueError):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _reject_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _DuplicateKey(key)
        out[key] = value
    return out


def _object(value: object, field: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ConfigError(field, f"must be a JSON object, got {_describe(value)}")
    return value


def _known_keys(obj: Mapping[str, Any], allowed: frozenset[str], prefix: str) -> None:
    for key in sorted(obj):
        if key not in allowed:
            raise ConfigError(
                f"{prefix}{key}", f"unknown key (allowed: {', '.join(sorted(allowed))})"
            )


def _check_name(name: str) -> None:
    if not name or name != name.strip() or len(name) > _MAX_NAME_CHARS:
        raise ConfigError(
            f"models.{name}",
            f"model name must be 1..{_MAX_NAME_CHARS} characters without surrounding "
            f"whitespace, got {name!r}",
        )


def _model(name: str, entry: object, search: list[Path]) -> ModelSpec:
    prefix = f"models.{name}"
    obj = _object(entry, prefix)
    _known_keys(obj, _MODEL_KEYS, f"{prefix}.")
    if "context_window" not in obj:
        raise ConfigError(f"{prefix}.context_window", "is required (a positive integer)")
    window = obj["context_window"]
    if isinstance(window, bool) or not isinstance(window, int) or window < 1:
        raise ConfigError(
            f"{prefix}.context_window",
            f"must be a positive integer (>= 1 tokens), got {_describe(window)}",
        )
    tokenizer = _tokenizer(obj["tokenizer"], f"{prefix}.tokenizer", search) if (
        "tokenizer" in obj
    ) else None
    return ModelSpec(name=name, context_window=window, tokenizer=tokenizer)


def _tokenizer(value: object, field: str, search: list[Path]) -> TokenizerSpec:
    obj = _object(value, field)
    kind = obj.get("kind")
    if kind not in _TOKENIZER_KEYS:
        raise ConfigError(
            f"{field}.kind",
            f"must be one of {', '.join(sorted(_TOKENIZER_KEYS))}, got {_describe(kind)}",
        )
    _known_keys(obj, _TOKENIZER_KEYS[kind], f"{field}.")
    if kind == "tiktoken":
        encoding = obj.get("encoding")
        if encoding not in TIKTOKEN_ENCODINGS:
            raise ConfigError(
                f"{field}.encoding",
                f"must be one of {', '.join(TIKTOKEN_ENCODINGS)}, got {_describe(encoding)}",
            )
        return TiktokenTokenizer(encoding=encoding)
    raw = obj.get("path")
    if not isinstance(raw, str) or not raw:
        raise ConfigError(f"{field}.path", f"must be a non-empty string, got {_describe(raw)}")
    return HuggingFaceTokenizer(path=_resolve(raw, f"{field}.path", search))


def _resolve(raw: str, field: str, search: list[Path]) -> Path:
    path = Path(raw)
    candidates = [path] if path.is_absolute() else [d / path for d in search]
    for candidate in candidates:
        if candidate.is_file():
            return candidate.resolve()
    looked = ", ".join(str(c) for c in candidates)
    raise ConfigError(field, f"tokenizer file {raw!r} not found (looked at: {looked})")


def _describe(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    if isinstance(value, (int, float, str)):
        return repr(value)
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__
