"""Span texts for plans: a bounded in-memory cache in front of the store's slices.

A plan carries the text of each span it selects (and, with explain, of every candidate). The
store slices those texts out of whole source versions (:meth:`RecallStore.canonical_slices`):
a read of every cited version's full text per plan. A span's coordinates ``(source_id,
source_version_tx, start, end)`` name an immutable slice (a committed source version never
changes, and none is ever deleted), so its text can be kept once read and served to every
later plan that cites the span, with no snapshot or freshness concern. :class:`SpanTexts`
keeps the most recently cited spans' texts, least recently used evicted first, within a memory
bound; a span not kept is read from the store as before. Unsliceable spans (absent from the
store's answer) are never kept, so they are asked again.

Texts only: plans and recall results are never cached.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from collections.abc import Iterable, Mapping
from typing import Protocol

from planner_svc.core.model import CoordKey

__all__ = ["DEFAULT_SPAN_TEXT_BYTES", "SliceSource", "SpanTexts"]

DEFAULT_SPAN_TEXT_BYTES = 64 * 1024 * 1024
"""Default memory bound of the span-text cache, bytes (about 100k passages of 600 bytes)."""

_ENTRY_BYTES = 200
"""Bytes an entry costs beside its text: the key tuple, its strings and the ordered-dict
node (measured on CPython 3.11, rounded up)."""


class SliceSource(Protocol):
    """Where span texts come from (the store)."""

    def canonical_slices(self, keys: Iterable[CoordKey]) -> Mapping[CoordKey, str]:
        """Texts of spans; unsliceable spans are absent."""
        ...


class SpanTexts:
    """Span texts through a least-recently-used cache of at most ``max_bytes``.

    Thread-safe. The bound counts each text's object size (``sys.getsizeof``) plus a fixed
    per-entry cost; a text larger than the whole bound is served but not kept.

    Args:
        source: reads the texts not kept (inside the caller's store snapshot).
        max_bytes: the memory bound, bytes; 0 keeps nothing (every read goes to the store).

    Raises:
        ValueError: ``max_bytes`` is negative.
    """

    def __init__(self, source: SliceSource, *, max_bytes: int = DEFAULT_SPAN_TEXT_BYTES
                 ) -> None:
        if max_bytes < 0:
            raise ValueError(f"max_bytes must be >= 0, got {max_bytes}")
        self._source = source
        self._max_bytes = max_bytes
        self._kept: OrderedDict[CoordKey, str] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @property
    def kept_bytes(self) -> int:
        """Bytes the kept texts count for now (<= ``max_bytes``)."""
        return self._bytes

    def __len__(self) -> int:
        """Number of span texts kept."""
        return len(self._kept)

    def slices(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        """key -> text for every key that can be sliced (the others are absent), as
        :meth:`SliceSource.canonical_slices` answers: kept texts first, the rest read from
        the source in one call and kept."""
        found: dict[CoordKey, str] = {}
        missing: dict[CoordKey, None] = {}  # in first-asked order, each once
        kept = self._kept
        with self._lock:
            for key in keys:
                if key in found or key in missing:
                    continue
                text = kept.get(key)
                if text is None:
                    missing[key] = None
                else:
                    kept.move_to_end(key)
                    found[key] = text
        if not missing:
            return found
        read = self._source.canonical_slices(list(missing))
        found.update(read)
        if self._max_bytes:
            self._keep(read)
        return found

    def _keep(self, texts: Mapping[CoordKey, str]) -> None:
        limit = self._max_bytes
        with self._lock:
            kept = self._kept
            for key, text in texts.items():
                size = sys.getsizeof(text) + _ENTRY_BYTES
                if size > limit or key in kept:
                    continue
                kept[key] = text
                self._bytes += size
            while self._bytes > limit:
                _key, dropped = kept.popitem(last=False)
                self._bytes -= sys.getsizeof(dropped) + _ENTRY_BYTES
