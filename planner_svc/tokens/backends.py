"""Exact token-counting backends: a ``tokenizers`` tokenizer.json, or a tiktoken encoding.

Each loader turns a tokenizer spec into a :data:`TextCounter` or raises
:class:`TokenizerUnavailable`; the counter (:mod:`planner_svc.tokens.counter`) calls a loader
once per spec and falls back to the estimator when it raises.

Counts cover the span text alone, without special tokens (no ``[CLS]``/``[SEP]``, no
``<|endoftext|>``): a plan's budget is spent on evidence text, and whatever framing the caller
adds around it (special tokens, chat template, instructions) is what the context-window ceiling
``min(requested, ctx // 2)`` leaves room for. Text that looks like a special token
(``"<|endoftext|>"`` inside a document) is counted as ordinary text.

tiktoken is not a dependency: its encodings are rank files fetched over the network on first use,
which a server must not do while planning. The tiktoken backend is used only when the
``tiktoken`` package is importable and the encoding's rank file is already in tiktoken's cache
(``$TIKTOKEN_CACHE_DIR``, else ``$DATA_GYM_CACHE_DIR``, else ``<tmp>/data-gym-cache``; the file
is named by the SHA-1 of its source URL, tiktoken's own scheme) with the published SHA-256.
The check happens before tiktoken is asked for the encoding, so it never reaches the network.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from planner_svc.tokens.registry import HuggingFaceTokenizer, TiktokenTokenizer, TokenizerSpec

__all__ = [
    "TIKTOKEN_SOURCES",
    "EncodingSource",
    "TextCounter",
    "TokenizerUnavailable",
    "load_backend",
    "load_huggingface",
    "load_tiktoken",
    "tiktoken_cache_file",
]

#: Counts the tokens of one text; None when this text cannot be counted exactly.
TextCounter = Callable[[str], int | None]


class TokenizerUnavailable(Exception):
    """A tokenizer cannot be used in this process (missing library or offline data)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class EncodingSource:
    """Where tiktoken fetches an encoding's rank file from, and the file's SHA-256 (hex)."""

    url: str
    sha256: str


_BLOB = "https://openaipublic.blob.core.windows.net/encodings/"

#: The rank files of the encodings a registry may name (the URLs key tiktoken's cache).
TIKTOKEN_SOURCES: Mapping[str, EncodingSource] = {
    "cl100k_base": EncodingSource(
        url=_BLOB + "cl100k_base.tiktoken",
        sha256="223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    ),
    "o200k_base": EncodingSource(
        url=_BLOB + "o200k_base.tiktoken",
        sha256="446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
    ),
    "p50k_base": EncodingSource(
        url=_BLOB + "p50k_base.tiktoken",
        sha256="94b5ca7dff4d00767bc256fdd1b27e5b17361d7b8a5f968547f9f23eb70d2069",
    ),
    "r50k_base": EncodingSource(
        url=_BLOB + "r50k_base.tiktoken",
        sha256="306cd27f03c1a714eca7108e03d66b7dc042abe8c258b44c199a7ed9838dd930",
    ),
}


def load_huggingface(spec: HuggingFaceTokenizer) -> TextCounter:
    """Load a tokenizer.json with ``tokenizers``; the counter returns the number of token ids.

    Truncation and padding stored in the file are switched off (a tokenizer.json saved for a
    512-token encoder would otherwise cap every count at 512 and pad short ones). Special tokens
    are not added. Text the library rejects (a lone surrogate) gives None.

    Raises:
        TokenizerUnavailable: the file cannot be parsed as a tokenizer.
    """
    from tokenizers import Tokenizer

    try:
        tokenizer = Tokenizer.from_file(str(spec.path))
    except Exception as exc:  # the Rust side raises plain Exception
        raise TokenizerUnavailable(f"cannot load {spec.path}: {exc}") from exc
    tokenizer.no_truncation()
    tokenizer.no_padding()

    def count(text: str) -> int | None:
        try:
            return len(tokenizer.encode(text, add_special_tokens=False))
        except TypeError:
            return None

    return count


def tiktoken_cache_file(source: EncodingSource) -> Path | None:
    """The path tiktoken caches ``source`` under, or None when its cache is switched off
    (``TIKTOKEN_CACHE_DIR`` set to the empty string)."""
    if "TIKTOKEN_CACHE_DIR" in os.environ:
        cache_dir = os.environ["TIKTOKEN_CACHE_DIR"]
    elif "DATA_GYM_CACHE_DIR" in os.environ:
        cache_dir = os.environ["DATA_GYM_CACHE_DIR"]
    else:
        cache_dir = os.path.join(tempfile.gettempdir(), "data-gym-cache")
    if not cache_dir:
        return None
    return Path(cache_dir) / hashlib.sha1(source.url.encode()).hexdigest()


def load_tiktoken(
    spec: TiktokenTokenizer, *, sources: Mapping[str, EncodingSource] = TIKTOKEN_SOURCES
) -> TextCounter:
    """Load a tiktoken encoding from its offline cache; never touches the network.

    The counter returns ``len(encoding.encode_ordinary(text))``.

    Raises:
        TokenizerUnavailable: tiktoken is not installed, the encoding is unknown, its rank file
            is not in the cache, or the cached file's SHA-256 differs from the published one.
    """
    try:
        import tiktoken
    except ImportError as exc:
        raise TokenizerUnavailable("the tiktoken package is not installed") from exc
    source = sources.get(spec.encoding)
    if source is None:
        raise TokenizerUnavailable(f"no known source for tiktoken encoding {spec.encoding!r}")
    cached = tiktoken_cache_file(source)
    if cached is None:
        raise TokenizerUnavailable("the tiktoken cache is switched off (TIKTOKEN_CACHE_DIR='')")
    try:
        data = cached.read_bytes()
    except OSError as exc:
        raise TokenizerUnavailable(
            f"{spec.encoding} is not in the tiktoken cache (expected {cached})"
        ) from exc
    if hashlib.sha256(data).hexdigest() != source.sha256:
        raise TokenizerUnavailable(
            f"cached {spec.encoding} at {cached} does not match its published SHA-256"
        )
    try:
        encoding = tiktoken.get_encoding(spec.encoding)
    except Exception as exc:
        raise TokenizerUnavailable(f"tiktoken could not load {spec.encoding}: {exc}") from exc

    def count(text: str) -> int | None:
        return len(encoding.encode_ordinary(text))

    return count


def load_backend(spec: TokenizerSpec) -> TextCounter:
    """Dispatch on the spec's kind (the default loader of the counter).

    Raises:
        TokenizerUnavailable: from the backend's loader.
    """
    if isinstance(spec, HuggingFaceTokenizer):
        return load_huggingface(spec)
    return load_tiktoken(spec)
