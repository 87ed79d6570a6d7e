"""Text rules of the store: canonical text, identifier validation and safe FTS5 phrase queries.

Canonical text (docs/architecture.md, "Store") is what every span offset points into:

- line breaks ``\\r\\n`` and lone ``\\r`` become ``\\n``;
- the text is put in Unicode normalisation form NFC;
- one leading byte order mark (U+FEFF) is dropped;
- nothing else changes: no trimming, no whitespace folding, no markup removal.

It is stored as UTF-8 and offsets are UTF-8 byte offsets. :func:`canonicalize` is idempotent, so
a caller may canonicalise first (to compute offsets) and the store canonicalises again unchanged.
"""

from __future__ import annotations

import math
import re
import unicodedata

from planner_svc.core.errors import InvalidRequest, echo
from planner_svc.core.limits import INT64

MAX_ID_CHARS = 1024
"""Longest accepted source or node id, in characters."""

_STOPWORD_TEXT = """
    a about above after again against all am an and any are as at be because been before being
    below between both but by can could did do does doing down during each few for from further
    had has have having he her here hers herself him himself his how i if in into is it its itself
    just me more most my myself no nor not now of off on once only or other our ours ourselves out
    over own same she should so some such than that the their theirs them themselves then there
    these they this those through to too under until up very was we were what when where which
    while who whom why will with would you your yours yourself yourselves near
    """
STOPWORDS = frozenset(_STOPWORD_TEXT.split())
"""English function words dropped from full-text queries (they carry no topical signal)."""

_WORD = re.compile(r"\w+")
_BAD_ID_CHAR = re.compile("[\x00-\x1f\x7f-\x9f\ud800-\udfff]")
"""Unicode categories Cc (control) and Cs (surrogate)."""


def canonicalize(text: str) -> str:
    """Return the canonical form of ``text`` (see the module docstring). Idempotent."""
    if text.startswith("\ufeff"):
        text = text[1:]
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    return unicodedata.normalize("NFC", text)


def encode_text(text: str, *, field: str = "text") -> bytes:
    """UTF-8 bytes of ``text``.

    Raises:
        InvalidRequest: (``field``) the text holds a lone surrogate, so it is not valid UTF-8.
    """
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidRequest(
            field, f"not valid UTF-8: lone surrogate at character {exc.start}"
        ) from exc


def check_id(value: object, *, field: str) -> str:
    """Validate a source or node id and return it.

    An id is a string of 1..:data:`MAX_ID_CHARS` characters without control characters and
    without leading or trailing whitespace.

    Raises:
        InvalidRequest: (``field``) the id breaks one of those rules.
    """
    if not isinstance(value, str):
        raise InvalidRequest(field, f"expected a string, got {type(value).__name__}")
    if not value:
        raise InvalidRequest(field, "must not be empty")
    if len(value) > MAX_ID_CHARS:
        raise InvalidRequest(
            field, f"{len(value)} characters is longer than the maximum {MAX_ID_CHARS}"
        )
    if value != value.strip():
        raise InvalidRequest(field, f"{echo(value)} has leading or trailing whitespace")
    bad = _BAD_ID_CHAR.search(value)
    if bad is not None:
        raise InvalidRequest(
            field, f"{echo(value)} contains control character {ord(bad.group()):#x}"
        )
    return value


def check_time(value: object, *, field: str) -> int:
    """Validate a time in microseconds since the Unix epoch (a signed 64-bit integer).

    Raises:
        InvalidRequest: (``field``) not an int (bools are refused) or outside int64.
    """
    if not isinstance(value, int) or isinstance(value, bool):
        raise InvalidRequest(field, f"expected integer microseconds, got {echo(value)}")
    if value not in INT64:
        raise InvalidRequest(field, f"{value} is outside the signed 64-bit range")
    return value


def check_unit_weight(value: object, *, field: str) -> float:
    """Validate a finite float in [0, 1].

    Raises:
        InvalidRequest: (``field``) not a number, not finite, or outside [0, 1].
    """
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        raise InvalidRequest(field, f"expected a number, got {echo(value)}")
    number = float(value)
    if not math.isfinite(number) or not 0.0 <= number <= 1.0:
        raise InvalidRequest(field, f"{echo(value)} is outside the allowed range [0, 1]")
    return number


def fts_phrase_query(phrase: str) -> str | None:
    """An FTS5 phrase query matching the words of ``phrase`` in sequence (case-insensitively).

    Returns:
        The query string, or None when ``phrase`` holds no word.
    """
    words = _WORD.findall(unicodedata.normalize("NFC", phrase).lower())
    if not words:
        return None
    return '"' + " ".join(words) + '"'


def on_boundary(data: bytes, offset: int) -> bool:
    """Whether UTF-8 byte ``offset`` of ``data`` starts a code point (or is the end)."""
    return offset == len(data) or (0 <= offset < len(data) and not 0x80 <= data[offset] <= 0xBF)


def slice_utf8(data: bytes, start: int, end: int) -> str | None:
    """Bytes ``[start, end)`` of UTF-8 ``data`` decoded; None when the range is outside
    ``0 <= start <= end <= len(data)`` or an offset falls inside a multi-byte character."""
    if not 0 <= start <= end <= len(data):
        return None
    if not (on_boundary(data, start) and on_boundary(data, end)):
        return None
    return data[start:end].decode("utf-8")
