"""Ingestion: document -> canonical text -> structural spans -> nodes and edges -> vectors.

- :func:`parse_document` reads Markdown or plain text into spans and passages; each span has a
  :class:`Location` (page, heading path, notebook cell).
- :func:`planner_svc.ingest.readers.read_document` reads any supported format (Markdown, text,
  HTML, PDF, DOCX, notebooks) from bytes into the same result.
- :func:`ingest_documents` writes documents into a store (the write ports are
  :mod:`planner_svc.ingest.ports`): text, or the bytes of a file in any supported format
  (:mod:`planner_svc.ingest.reading` picks the reader), each span's location kept in the span
  ledger; :class:`planner_svc.ingest.service.IngestService` ingests document streams in
  committed, indexed batches, parsing each batch before it takes the write lock.
- ``planner_svc.ingest.cli`` adds the ``ingest`` subcommand (``fetch-corpus`` is
  :mod:`planner_svc.demo`).
"""

from planner_svc.ingest.mentions import TitleMatcher, title_forms
from planner_svc.ingest.parse import parse_document
from planner_svc.ingest.parsed import Location, ParsedDocument, Passage, Span
from planner_svc.ingest.pipeline import (
    RELATION_WEIGHTS,
    DocumentIn,
    IngestReport,
    doc_node_id,
    ingest_documents,
    passage_node_id,
)

__all__ = [
    "RELATION_WEIGHTS",
    "DocumentIn",
    "IngestReport",
    "Location",
    "ParsedDocument",
    "Passage",
    "Span",
    "TitleMatcher",
    "doc_node_id",
    "ingest_documents",
    "parse_document",
    "passage_node_id",
    "title_forms",
]
