"""Write parse_digests.jsonl: digests of what the Markdown/plain-text reader returns.

Usage: python tests/golden/gen_parse_digests.py   (rewrites the file beside this script)

Each line is ``{"case": NAME, "digest": HEX}``: a SHA-256 over the canonical text, the
``(start, end, kind)`` of every span, every passage (ordinal, kind, spans, text, level) and the
title that :func:`planner_svc.ingest.parse.parse_document` returns for one input at each pair of
passage limits in :data:`LIMITS`. Inputs: every document of ``tests/fixtures/wiki_fixture.jsonl``
as Markdown and as plain text, the inputs of ``tests/unit/test_ingest_parse.py`` (and a byte
order mark and a combining accent), and seeded random documents built from Markdown block lines
(headings, fences, tables, setext underlines, breaks, lists, long sentences, right-to-left
text), each as Markdown and as plain text.

Only regenerate when a change of the reader's output is intended, and say so in the commit:
tests/unit/test_parse_golden.py fails whenever the reader disagrees with these digests (so the
demo corpus keeps its spans, passages and therefore its plans).
"""

from __future__ import annotations

import hashlib
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path

from planner_svc.ingest.parse import parse_document

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = ROOT / "tests" / "fixtures" / "wiki_fixture.jsonl"
OUT = Path(__file__).resolve().parent / "parse_digests.jsonl"

LIMITS = ((300, 200), (300, 0), (120, 0), (1000, 500), (64, 100))
"""(max_passage_bytes, min_passage_bytes) pairs; the first is what ingestion uses."""

UNIT_INPUTS = (
    (
        "# Title here #\n\nIntro paragraph with \u00e9\nsecond line.\n\n## Section\n\n"
        '```python\nprint("x")\n```\n\n| a | b |\n|---|:-:|\n| 1 | \u00e9 2 |\n\n'
        "Setext\n======\n\n- item one\n- item two\n\n---\nplain\n"
    ),
    "# T\r\n\r\nbody \u4e16\u754c\r\n",
    "# not a heading\n\n  one  \ntwo\n\n\nthree",
    "#\n\n```\n\n```\n\n~~~\ncode line\nmore",
    ("The quick brown fox jumps over the lazy dog. " * 40).strip(),
    "\u4e16" * 300,
    "# A",
    "\ufeff# BOM heading\n\ntext\u0065\u0301 after a combining accent\n",
)

BLOCK_LINES = (
    "# Head",
    "## Sub \u00e9",
    "### Third level ###",
    "para \u4e16 text",
    "```",
    "~~~",
    "````",
    "| a | b |",
    "|---|---|",
    "| 1 \\| x | \u00e9 |",
    "===",
    "---",
    "***",
    "",
    "   ",
    "- item",
    "> quote",
    "text\twith tab",
    "\U0001f600 emoji",
    "Setext candidate",
    "A sentence that ends here. Another one follows it! And a question? Then more words",
    "word " * 40,
    "\u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd. \u0645\u0631\u062d\u0628\u0627.",
    "    indented code-like line",
)


def summary(text: str, media_type: str, max_bytes: int, min_bytes: int) -> bytes:
    """Canonical JSON (UTF-8) of everything ``parse_document`` returns, offsets and kinds."""
    doc = parse_document(
        text, media_type, max_passage_bytes=max_bytes, min_passage_bytes=min_bytes
    )
    payload = {
        "text": doc.text,
        "spans": [[s.start, s.end, s.kind] for s in doc.spans],
        "passages": [
            [p.ordinal, p.kind, [[s.start, s.end, s.kind] for s in p.spans], p.text, p.level]
            for p in doc.passages
        ],
        "title": doc.title,
    }
    return json.dumps(payload, ensure_ascii=False, separators=(",", ":")).encode("utf-8")


def inputs() -> Iterator[tuple[str, str, str]]:
    """(case prefix, text, media type) of every input, in a fixed order."""
    for line in FIXTURE.read_text(encoding="utf-8").splitlines():
        if line.strip():
            record = json.loads(line)
            yield f"wiki:{record['sourceId']}", record["text"], "text/markdown"
            yield f"wiki-plain:{record['sourceId']}", record["text"], "text/plain"
    for i, text in enumerate(UNIT_INPUTS):
        yield f"unit:{i}", text, "text/markdown"
        yield f"unit-plain:{i}", text, "text/plain"
    rnd = random.Random(20240611)
    for i in range(300):
        lines = [rnd.choice(BLOCK_LINES) for _ in range(rnd.randrange(1, 30))]
        text = "\n".join(lines)
        yield f"random:{i}", text, "text/markdown"
        yield f"random-plain:{i}", text, "text/plain"


def cases() -> Iterator[tuple[str, str]]:
    """(case name, digest) per input: SHA-256 (first 32 hex digits) over its results at every
    limit pair of :data:`LIMITS`, in order."""
    for name, text, media_type in inputs():
        digest = hashlib.sha256()
        for max_bytes, min_bytes in LIMITS:
            digest.update(summary(text, media_type, max_bytes, min_bytes))
        yield name, digest.hexdigest()[:32]


def main() -> int:
    with OUT.open("w", encoding="utf-8") as handle:
        for name, digest in cases():
            handle.write(json.dumps({"case": name, "digest": digest}, ensure_ascii=False) + "\n")
    print(f"wrote {OUT}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
