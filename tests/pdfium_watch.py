"""A watch on the PDF reader's use of PDFium, which is not thread-safe: how many callers are
inside it at once (from opening a document to closing it).

:func:`watch_pdfium` replaces the reader's ``_open`` with one that counts callers in, and
closes the count when the document closes. The first caller in waits (up to ``window_s``) for
a second one to arrive, so two threads that start together overlap inside PDFium unless
something serialises them: with the reader's lock the second waits outside, and the watch
records at most one caller inside.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from planner_svc.ingest.readers import pdf


class PdfiumWatch:
    """Callers inside PDFium now (``inside``), at most (``most``), and documents opened;
    ``on_open``, when set, is called as each caller comes in and its results kept in
    ``seen``."""

    def __init__(self, real_open: Any, window_s: float) -> None:
        self._real_open = real_open
        self._window_s = window_s
        self._guard = threading.Lock()
        self._first = threading.Event()
        self._second = threading.Event()
        self.inside = 0
        self.most = 0
        self.opened = 0
        self.on_open: Callable[[], object] | None = None
        self.seen: list[object] = []

    def _leave(self) -> None:
        with self._guard:
            self.inside -= 1

    def open(self, data: bytes) -> Any:
        with self._guard:
            self.inside += 1
            self.opened += 1
            self.most = max(self.most, self.inside)
            if self.inside > 1:
                self._second.set()
            first = not self._first.is_set()
            self._first.set()
            if self.on_open is not None:
                self.seen.append(self.on_open())
        if first:
            self._second.wait(self._window_s)
        try:
            document = self._real_open(data)
        except BaseException:
            self._leave()
            raise
        return _Watched(document, self)


class _Watched:
    """A PDFium document whose ``close`` tells the watch the caller left."""

    def __init__(self, document: Any, watch: PdfiumWatch) -> None:
        self._document = document
        self._watch = watch

    def __len__(self) -> int:
        return len(self._document)

    def __getitem__(self, index: int) -> Any:
        return self._document[index]

    def __getattr__(self, name: str) -> Any:
        return getattr(self._document, name)

    def close(self) -> None:
        try:
            self._document.close()
        finally:
            self._watch._leave()


def watch_pdfium(monkeypatch: pytest.MonkeyPatch, *, window_s: float = 0.5) -> PdfiumWatch:
    """Install a :class:`PdfiumWatch` on the PDF reader for the test."""
    watch = PdfiumWatch(pdf._open, window_s)
    monkeypatch.setattr(pdf, "_open", watch.open)
    return watch
