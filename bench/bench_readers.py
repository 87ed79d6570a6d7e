"""Throughput of the document readers (``planner_svc.ingest.readers.read_document``).

Usage: python -m bench.bench_readers [--docs 300] [--runs 3] [--seed 0] [--formats html,pdf]

Prints one JSON object: git revision, Python version and, per format, the number of documents
and their total size, then the median over ``--runs`` runs of the wall time to read all of them
from bytes in memory (``time.perf_counter``; media type sniffed from the content and the name,
passages at the ingestion limits), as documents/s and MB/s (10^6 bytes of input per second),
with the mean number of spans and passages per document.

Documents are generated, seeded (the same corpus every run and on every machine), by the test
writers in ``tests/docgen.py``: 2-6 sections, each a heading and 1-4 paragraphs of 2-6
sentences drawn from a pseudo-word vocabulary (Latin script with some accents, a Hebrew
phrase in one sentence in twenty), a table in one document in three and a code block in one
in four. PDFs are 300 pt wide with 24 lines a page (so most run to several pages), set in
DejaVu Sans; HTML pages carry navigation, banner, sidebar and footer around the content;
notebooks have outputs on their code cells; DOCX files have page headers and footers.
Writing the corpus is not timed.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from planner_svc.ingest.parse import DEFAULT_MAX_PASSAGE_BYTES, DEFAULT_MIN_PASSAGE_BYTES
from planner_svc.ingest.readers import read_document
from tests.docgen import (
    Block,
    Code,
    Heading,
    Para,
    PdfWriter,
    Table,
    docx_document,
    html_document,
    markdown_document,
    notebook_document,
)

ROOT = Path(__file__).resolve().parent.parent
FORMATS = ("markdown", "html", "pdf", "docx", "notebook")
SYLLABLES = (
    "ka", "lo", "mer", "tan", "vi", "sul", "pre", "dor", "e", "in", "ax", "cé", "ün", "ro",
    "ba", "ti", "mon", "gra", "fe", "lu", "ser", "qui", "sto", "ne", "va", "ir", "om", "pel",
)  # fmt: skip
HEBREW = "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd"


def _word(rnd: random.Random) -> str:
    return "".join(rnd.choice(SYLLABLES) for _ in range(rnd.randint(1, 4)))


def _sentence(rnd: random.Random) -> str:
    words = [_word(rnd) for _ in range(rnd.randint(6, 18))]
    if rnd.random() < 0.05:
        words.insert(rnd.randint(1, len(words) - 1), HEBREW)
    return " ".join(words).capitalize() + "."


def document(rnd: random.Random) -> list[Block]:
    """One seeded document (module docstring)."""
    blocks: list[Block] = []
    for section in range(rnd.randint(2, 6)):
        level = 1 if section == 0 else rnd.choice([1, 2, 2])
        blocks.append(Heading(level, " ".join(_word(rnd) for _ in range(rnd.randint(1, 4)))))
        for _ in range(rnd.randint(1, 4)):
            blocks.append(Para(tuple(_sentence(rnd) for _ in range(rnd.randint(2, 6)))))
    if rnd.random() < 1 / 3:
        blocks.append(Table(tuple(tuple(_word(rnd) for _ in range(3)) for _ in range(4))))
    if rnd.random() < 1 / 4:
        blocks.append(Code("\n".join(f"{_word(rnd)} = {i}" for i in range(rnd.randint(2, 8)))))
    return blocks


def pdf_document(blocks: list[Block]) -> bytes:
    """The blocks as a PDF (headings and paragraphs; tables and code are not drawn)."""
    writer = PdfWriter(width_pt=300, lines_per_page=24, fonts=("sans",))
    for block in blocks:
        if isinstance(block, Heading):
            writer.heading(block)
        elif isinstance(block, Para):
            writer.paragraph(block)
    return writer.output()


WRITERS: dict[str, tuple[Callable[[list[Block]], bytes], str]] = {
    "markdown": (markdown_document, "doc.md"),
    "html": (html_document, "page.html"),
    "pdf": (pdf_document, "doc.pdf"),
    "docx": (docx_document, "doc.docx"),
    "notebook": (notebook_document, "doc.ipynb"),
}


def corpus(fmt: str, count: int, seed: int) -> list[bytes]:
    """``count`` seeded documents of one format."""
    rnd = random.Random(f"{seed}:{fmt}")
    write = WRITERS[fmt][0]
    return [write(document(rnd)) for _ in range(count)]


def time_format(fmt: str, docs: Sequence[bytes], runs: int) -> dict[str, Any]:
    """Median wall time to read ``docs`` over ``runs`` runs, and what the readers returned."""
    name = WRITERS[fmt][1]
    limits = {
        "max_passage_bytes": DEFAULT_MAX_PASSAGE_BYTES,
        "min_passage_bytes": DEFAULT_MIN_PASSAGE_BYTES,
    }
    times: list[float] = []
    spans = passages = 0
    for _ in range(runs):
        spans = passages = 0
        started = time.perf_counter()
        for data in docs:
            parsed = read_document(data, name=name, **limits)
            spans += len(parsed.spans)
            passages += len(parsed.passages)
        times.append(time.perf_counter() - started)
    median = statistics.median(times)
    size = sum(len(d) for d in docs)
    return {
        "documents": len(docs),
        "bytes": size,
        "median_s": round(median, 4),
        "docs_per_s": round(len(docs) / median, 1),
        "mb_per_s": round(size / median / 1e6, 2),
        "spans_per_doc": round(spans / len(docs), 1),
        "passages_per_doc": round(passages / len(docs), 1),
        "runs": runs,
    }


def git_revision() -> str:
    """Short revision of the working tree, with ``-dirty`` when it has changes."""
    try:
        rev = subprocess.run(
            ["git", "describe", "--always", "--dirty", "--abbrev=12"],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
            timeout=10,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return rev or "unknown"


def main(argv: Sequence[str] | None = None) -> int:
    """Write the corpora, time the readers and print the JSON report; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=300, help="documents per format")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per format")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats")
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown or args.docs < 1 or args.runs < 1:
        parser.error(f"formats must be among {FORMATS}, --docs and --runs >= 1")
    results: dict[str, dict[str, Any]] = {}
    for fmt in formats:
        docs = corpus(fmt, args.docs, args.seed)
        read_document(docs[0], name=WRITERS[fmt][1])  # warm-up: imports, library set-up
        results[fmt] = time_format(fmt, docs, args.runs)
    report = {
        "bench": "readers",
        "git": git_revision(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "machine": platform.machine(),
        "params": {"docs": args.docs, "runs": args.runs, "seed": args.seed},
        "results": results,
    }
    print(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
