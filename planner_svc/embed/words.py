"""The tokens of a text's words, read from the text's own encoding, for texts made of its words.

A plan embeds its question, then texts made of some of the question's words (``\\w+`` runs)
joined by single spaces (a hop's residual). For a tokenizer whose steps are all local to a
character, tokenizing such a text gives the concatenation of the tokens each word gets when
tokenized alone, and each word gets those tokens inside the question too, when no piece of
the question's pre-tokenization reaches over the word's edge. So the joined texts' token ids
can be read from the question's encoding instead of tokenizing each text again.

The tokenizers this holds for (:func:`word_composing`): a ``BertNormalizer`` (clean text,
pad CJK characters with spaces, strip accents, lowercase: each a map of one character to
zero or more characters, except the canonical reordering of combining marks inside the
accent stripping's NFD), a ``BertPreTokenizer`` (splits at whitespace, isolates each
punctuation character: decided character by character), a ``WordPiece`` model (one piece at
a time), no post-processor, no padding (or padding to length 0), and added tokens that
cannot match inside words and spaces. A text's encoding gives its words' tokens
(:func:`word_tokens`) when, in addition:

- it was not truncated (all its words have their tokens);
- no character of it can take part in a reordering that survives the accent stripping: NFD
  reorders adjacent marks of non-zero combining class, and the stripping removes only the
  nonspacing ones (category Mn), so a character whose decomposition holds a spacing or
  enclosing mark of non-zero class (e.g. U+302E, U+1D165), or one unassigned in Python's
  Unicode tables (the tokenizer's tables may know it), makes the text unusable;
- a word takes part only if every piece overlapping it lies inside it (by the pieces' offsets
  in the text: a piece such as ``"a©b"`` spans two words, and ``"é\\u0316"`` reaches past a
  word's edge; those words are left out).
"""

from __future__ import annotations

import functools
import re
import string
import unicodedata
from collections.abc import Sequence
from typing import Any

__all__ = ["WORD", "ascii_word_tokens", "local_characters", "word_composing", "word_tokens"]

WORD = re.compile(r"\w+")
"""A word: a run of ``\\w`` characters (letters, digits, underscore), as the recall engine
splits its question."""

_PUNCTUATION = frozenset(string.punctuation) - {"_"}
_ASCII_WORD = frozenset(string.ascii_letters + string.digits + "_")
"""The ``\\w`` characters of ASCII."""


@functools.lru_cache(maxsize=4096)  # bounded: a question may bring any code point
def _local(char: str) -> bool:
    if unicodedata.category(char) == "Cn":
        return False
    return all(unicodedata.combining(part) == 0 or unicodedata.category(part) == "Mn"
               for part in unicodedata.normalize("NFD", char))


def local_characters(text: str) -> bool:
    """Whether no character of ``text`` can be reordered with a neighbour by NFD and survive
    the accent stripping (see the module docstring); ASCII text always can't."""
    if text.isascii():
        return True
    return all(map(_local, set(text)))


def word_composing(tokenizer: Any) -> int | None:
    """For a ``tokenizers.Tokenizer`` whose joined words tokenize as the concatenation of each
    word's tokens (the module docstring), the most tokens a text can have before it is
    truncated (a large number when it never is); None for any other tokenizer."""
    from tokenizers import models, normalizers, pre_tokenizers

    normalizer = tokenizer.normalizer
    if not isinstance(normalizer, normalizers.BertNormalizer):
        return None
    if not (normalizer.clean_text and normalizer.handle_chinese_chars and normalizer.lowercase
            and normalizer.strip_accents in (None, True)):
        return None
    if not isinstance(tokenizer.pre_tokenizer, pre_tokenizers.BertPreTokenizer):
        return None
    if not isinstance(tokenizer.model, models.WordPiece) or tokenizer.post_processor is not None:
        return None
    padding = tokenizer.padding
    if padding is not None and (padding.get("length") != 0
                                or padding.get("pad_to_multiple_of") not in (None, 0, 1)):
        return None
    for token in tokenizer.get_added_tokens_decoder().values():
        # matched in the original text only, and never inside words and spaces
        if token.normalized or not _PUNCTUATION.intersection(token.content):
            return None
    truncation = tokenizer.truncation
    if truncation is None:
        return 1 << 62
    return int(truncation["max_length"])


def word_tokens(text: str, ids: Sequence[int], offsets: Sequence[tuple[int, int]],
                word_ids: Sequence[int | None]) -> dict[str, list[int]] | None:
    """Each word of ``text`` whose tokens its encoding shows: word -> its token ids (as
    tokenizing the word alone gives them, unknown tokens included).

    Args:
        text: the encoded text (untruncated, of :func:`local_characters`, by a tokenizer of
            :func:`word_composing`).
        ids, offsets, word_ids: the encoding's token ids, character offsets into ``text`` and
            pre-tokenization piece of each token (``tokenizers.Encoding``).

    Returns:
        The words no piece reaches over (a word occurring several times once), or None when
        the pieces are not in text order, one is empty, or two occurrences of a word got
        different tokens.
    """
    spans = [match.span() for match in WORD.finditer(text)]
    count = len(spans)
    tokens: list[list[int]] = [[] for _ in spans]
    bad = [False] * count
    total = len(ids)
    at = word = last = 0
    while at < total:
        start = offsets[at][0]
        piece = word_ids[at]
        end = at + 1
        if piece is not None:
            while end < total and word_ids[end] == piece:
                end += 1
        stop = offsets[end - 1][1]
        if not start < stop or start < last:
            return None
        last = stop
        while word < count and spans[word][1] <= start:
            word += 1
        over = word
        while over < count and spans[over][0] < stop:
            over += 1
        if over == word + 1 and spans[word][0] <= start and stop <= spans[word][1]:
            tokens[word].extend(ids[at:end])
        else:  # outside every word (over == word), or over an edge
            for touched in range(word, over):
                bad[touched] = True
        at = end
    out: dict[str, list[int]] = {}
    for (start, stop), held, broken in zip(spans, tokens, bad, strict=True):
        if not broken and out.setdefault(text[start:stop], held) != held:
            return None
    return out


def ascii_word_tokens(text: str, ids: Sequence[int],
                      offsets: Sequence[tuple[int, int]]) -> dict[str, list[int]] | None:
    """:func:`word_tokens` of a printable ASCII text encoded without a normalizer and without
    an added token (the lowercased text, by a tokenizer of :func:`word_composing` without its
    ``BertNormalizer``), read from the offsets alone.

    On such a text every piece is a run of letters and digits or one punctuation character,
    so no piece reaches over a word's edge, and the WordPiece tokens of a piece tile it: a
    token starting at a word character belongs to the word holding that character, and two
    such tokens in a row belong to one word exactly when no character lies between them. A
    word's tokens are thus the runs of adjacent tokens that start at word characters.

    Args:
        text: the text (printable ASCII).
        ids, offsets: its encoding's token ids and character offsets.

    Returns:
        As :func:`word_tokens` (every word of the text); None when the tokens are not in text
        order, one is empty (an encoding without offsets) or ends past the text, or two
        occurrences of a word got different tokens.
    """
    size = len(text)
    out: dict[str, list[int]] = {}
    held: list[int] | None = None  # the tokens of the word being read
    begin = end = 0  # where that word starts; where the last token ends
    word = _ASCII_WORD
    for token, (start, stop) in zip(ids, offsets, strict=True):
        if not end <= start < stop <= size:
            return None
        if text[start] in word:
            if held is not None and start == end:
                held.append(token)
                end = stop
                continue
            if held is not None and out.setdefault(text[begin:end], held) != held:
                return None
            held, begin = [token], start
        elif held is not None:
            if out.setdefault(text[begin:end], held) != held:
                return None
            held = None
        end = stop
    if held is not None and out.setdefault(text[begin:end], held) != held:
        return None
    return out
