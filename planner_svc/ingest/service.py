"""The ingest service: a stream of documents written in batches, each committed and indexed.

The Memory service's ``IngestSources`` delegates here with documents already converted from
the wire; the service knows nothing of gRPC. Writes from every API path of one process are
serialised by one write lock (the store's own lock orders them against other processes).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from itertools import islice

from planner_svc.clock import Clock, wall_clock_us
from planner_svc.core.errors import Cancelled
from planner_svc.embed.base import Embedder
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES, DEFAULT_MIN_PASSAGE_BYTES
from planner_svc.ingest.pipeline import (
    DocumentIn,
    IngestReport,
    RejectedDocument,
    ingest_documents,
)
from planner_svc.ingest.ports import IndexCatchUp, IngestStore
from planner_svc.ingest.reading import read_ahead

__all__ = ["STREAM_BATCH", "IngestService"]

STREAM_BATCH = 256
"""Documents of an ingest stream committed (and indexed) together."""


class IngestService:
    """Ingests document streams into one store (and catches its vector index up).

    Args:
        store: the store written.
        embedder: embeds passages; None writes no vectors.
        index: the vector index caught up after each batch; None when there is none.
        write_lock: serialises this process's writers (shared with the memory service).
        clock: now, microseconds (default valid-from, the floor of the store's clock).
    """

    def __init__(
        self,
        store: IngestStore,
        *,
        embedder: Embedder | None,
        index: IndexCatchUp | None,
        write_lock: threading.Lock,
        clock: Clock = wall_clock_us,
    ) -> None:
        self._store = store
        self._embedder = embedder
        self._index = index
        self._write_lock = write_lock
        self._clock = clock

    def ingest(
        self,
        documents: Iterator[DocumentIn | RejectedDocument],
        *,
        cancelled: Callable[[], bool] = lambda: False,
    ) -> IngestReport:
        """Ingest ``documents`` in batches of :data:`STREAM_BATCH`.

        Each batch is received from the iterator and its documents read (parsed: PDF, DOCX,
        HTML, notebooks, Markdown, text) first, then written under the write lock with one
        fresh transaction time and indexed, so neither a slow client nor slow parsing holds
        the lock, and a stream cut short keeps (and has indexed) every batch it completed.
        Concurrent streams parse at once; PDFium, which is not thread-safe, runs under the PDF
        reader's own lock (:mod:`planner_svc.ingest.readers.pdf`). The batch being read when
        the caller cancels is dropped when the cancellation is seen first; a transport may
        deliver the end of the stream before it, and then that batch commits whole (re-sending
        it is harmless: unchanged documents write nothing). A malformed document, or a
        :class:`~planner_svc.ingest.model.RejectedDocument` item, is reported in the report's
        ``errors`` and skipped; the stream goes on.

        Args:
            documents: the documents; the iterator raises Cancelled when the caller cancels.
            cancelled: polled after each batch is read.

        Returns:
            The counts of every batch, merged, in stream order.

        Raises:
            Cancelled: the caller cancelled (or its deadline passed); earlier batches stay.
        """
        report = IngestReport()
        while batch := list(islice(documents, STREAM_BATCH)):
            if cancelled():  # a cancelled stream may also just end: keep its last batch out
                raise Cancelled("the client cancelled the ingest stream")
            read = [doc if isinstance(doc, RejectedDocument)
                    else read_ahead(doc, max_passage_bytes=DEFAULT_MAX_PASSAGE_BYTES,
                                    min_passage_bytes=DEFAULT_MIN_PASSAGE_BYTES)
                    for doc in batch]
            with self._write_lock:
                written = ingest_documents(self._store, self._embedder, read,
                                           now_us=self._clock())
                if self._index is not None:
                    self._index.sync()
            report.merge(written)
        if cancelled():
            raise Cancelled("the client cancelled the ingest stream")
        return report
