"""Jupyter notebook reader (nbformat 4 JSON): markdown and code cells, never outputs.

- a markdown cell is read by the Markdown reader (:func:`planner_svc.ingest.parse.read_markdown`:
  headings, paragraphs, code fences, tables), its markup kept in the canonical text;
- a code cell's source -> one ``code`` block (split like any long code block);
- a raw cell is read as plain text (paragraphs);
- outputs (stream text, images, HTML, errors) and attachments are not text of the document.

Cells are separated by a blank line in the canonical text. Every span's location names its
0-based cell (``cell_index``, counting every cell, empty ones included) and the heading path,
which runs on across cells as the notebook's outline. The title is the first heading, else
``metadata.title``.
"""

from __future__ import annotations

import json
from typing import Any

from planner_svc.ingest.document import DocumentBuilder, ParsedDocument
from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES, read_markdown, read_plain
from planner_svc.ingest.readers.base import NOTEBOOK, ReaderError, damaged
from planner_svc.ingest.readers.text import decode_utf8

SUPPORTED_MAJOR = 4


def _source(cell: dict[str, Any], index: int) -> str:
    source = cell.get("source", "")
    if isinstance(source, list) and all(isinstance(s, str) for s in source):
        return "".join(source)
    if isinstance(source, str):
        return source
    raise damaged(NOTEBOOK, f"cell {index}: source is neither a string nor a list of strings")


def _cells(data: bytes) -> tuple[list[dict[str, Any]], str]:
    """The cells and the metadata title of a notebook (checked), or :class:`ReaderError`."""
    text = decode_utf8(data, NOTEBOOK)
    try:
        notebook = json.loads(text)
    except json.JSONDecodeError as exc:
        raise damaged(NOTEBOOK, f"not JSON ({exc.msg} at line {exc.lineno})") from exc
    if not isinstance(notebook, dict) or "cells" not in notebook:
        raise ReaderError(
            "text", "not a notebook: a JSON object with nbformat and cells", media_type=NOTEBOOK
        )
    major = notebook.get("nbformat")
    if major != SUPPORTED_MAJOR:
        raise ReaderError(
            "text",
            f"unsupported notebook format {major!r} (nbformat {SUPPORTED_MAJOR} is read)",
            media_type=NOTEBOOK,
        )
    cells = notebook["cells"]
    if not isinstance(cells, list) or not all(isinstance(c, dict) for c in cells):
        raise damaged(NOTEBOOK, "cells is not a list of objects")
    metadata = notebook.get("metadata")
    title = metadata.get("title") if isinstance(metadata, dict) else None
    return cells, " ".join(title.split()) if isinstance(title, str) else ""


def read_notebook(
    data: bytes,
    *,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = 0,
) -> ParsedDocument:
    """Read a Jupyter notebook's markdown, code and raw cells (module docstring).

    Args:
        data: the ``.ipynb`` file's bytes (UTF-8 JSON).
        max_passage_bytes, min_passage_bytes: passage limits, UTF-8 bytes
            (:class:`planner_svc.ingest.document.DocumentBuilder`).

    Returns:
        Canonical text, spans (UTF-8 byte offsets; locations carry cell indexes and heading
        paths) and passages.

    Raises:
        ReaderError: (``text``) not UTF-8, not JSON, not a notebook, not nbformat 4, or a cell
            whose source is malformed.
        InvalidRequest: (``max_passage_bytes``) below 64.
    """
    cells, title = _cells(data)
    builder = DocumentBuilder(
        max_passage_bytes=max_passage_bytes, min_passage_bytes=min_passage_bytes
    )
    for index, cell in enumerate(cells):
        source = _source(cell, index)
        if not source.strip():
            continue
        builder.cell_index = index
        cell_type = cell.get("cell_type")
        if cell_type == "code":
            builder.add_block("code", source)
        elif cell_type in ("markdown", "raw"):
            builder.separate()
            if cell_type == "markdown":
                read_markdown(builder, source)
            else:
                read_plain(builder, source)
    return builder.finish(NOTEBOOK, fallback_title=title or None)
