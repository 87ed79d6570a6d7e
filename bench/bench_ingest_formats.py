"""Ingest throughput per format through the real ingest path: ``planner-svc ingest DIR``.

Usage: python -m bench.bench_ingest_formats [--docs 300] [--runs 3] [--seed 0]
       [--formats markdown,html,pdf,docx,notebook,text] [--no-vectors]

For each format, writes ``--docs`` generated documents (the seeded corpus of
:mod:`bench.bench_readers`: 2-6 sections of pseudo-word sentences, tables and code, the
format's furniture around them; plain text is the same sections as paragraphs) as files into a
temporary folder, then times ``planner-svc ingest FOLDER --data NEW_DIR`` run in process
(``planner_svc.cli.main``): files read from disk, media type sniffed, read by the format's
reader, canonical text, span ledger rows with locations, nodes, edges, title mentions and, unless
``--no-vectors``, embeddings (the default model, loaded before timing). Each run ingests into a
fresh data directory; the formats take turns within each of ``--runs`` rounds, so load from
other processes falls on all of them alike; figures are medians.

Prints one JSON object: git revision, parameters and per format the documents, their total size
(bytes of the files), the median wall time with documents/s and MB/s (10^6 bytes of input per
second), the same per CPU second of the process (steadier on a shared machine), and the spans
and passages (nodes) written per document.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import platform
import random
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.bench_readers import WRITERS, corpus, document, git_revision
from tests.docgen import Block, Para

FORMATS = ("markdown", "text", "html", "pdf", "docx", "notebook")
_SUMMARY = re.compile(r"received (\d+), ingested (\d+).*?; (\d+) spans, (\d+) nodes")


def _text_document(blocks: list[Block]) -> bytes:
    """The blocks' paragraphs as plain text (blank line between paragraphs)."""
    paragraphs = [" ".join(b.sentences) for b in blocks if isinstance(b, Para)]
    return ("\n\n".join(paragraphs) + "\n").encode("utf-8")


def write_corpus(fmt: str, count: int, seed: int, folder: Path) -> int:
    """Write ``count`` seeded documents of ``fmt`` into ``folder``; returns their bytes."""
    folder.mkdir(parents=True)
    if fmt == "text":
        rnd = random.Random(f"{seed}:text")
        docs = [_text_document(document(rnd)) for _ in range(count)]
        suffix = ".txt"
    else:
        docs = corpus(fmt, count, seed)
        suffix = Path(WRITERS[fmt][1]).suffix
    for i, data in enumerate(docs):
        (folder / f"doc-{i:04d}{suffix}").write_bytes(data)
    return sum(len(d) for d in docs)


def ingest_once(folder: Path, data: Path, *, vectors: bool) -> tuple[float, float, str]:
    """Wall and CPU seconds of one ``planner-svc ingest`` of ``folder`` into ``data``, and its
    summary line."""
    from planner_svc.cli import main

    args = ["ingest", str(folder), "--data", str(data), "--quiet"]
    if not vectors:
        args.append("--no-vectors")
    out = io.StringIO()
    started, cpu = time.perf_counter(), time.process_time()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(args)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    if code != 0:
        raise RuntimeError(f"ingest exited {code}: {out.getvalue()}")
    return elapsed, cpu, out.getvalue().splitlines()[0]


def summarise(count: int, size: int, walls: list[float], cpus: list[float], summary: str
              ) -> dict[str, Any]:
    """The JSON entry of one format: medians, rates, rows written per document."""
    found = _SUMMARY.search(summary)
    if found is None or int(found.group(2)) != count:
        raise RuntimeError(f"not every document was ingested: {summary}")
    spans, nodes = int(found.group(3)), int(found.group(4))
    wall, cpu = statistics.median(walls), statistics.median(cpus)
    return {
        "documents": count,
        "bytes": size,
        "median_s": round(wall, 3),
        "docs_per_s": round(count / wall, 1),
        "mb_per_s": round(size / wall / 1e6, 3),
        "median_cpu_s": round(cpu, 3),
        "docs_per_cpu_s": round(count / cpu, 1),
        "mb_per_cpu_s": round(size / cpu / 1e6, 3),
        "spans_per_doc": round(spans / count, 1),
        "nodes_per_doc": round(nodes / count, 1),
        "runs": len(walls),
        "times_s": [round(t, 3) for t in walls],
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Write the corpora, time the ingests and print the JSON report; returns the exit code."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--docs", type=int, default=300, help="documents per format")
    parser.add_argument("--runs", type=int, default=3, help="timed runs per format")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--formats", default=",".join(FORMATS), help="comma-separated formats")
    parser.add_argument("--no-vectors", action="store_true", help="ingest without embeddings")
    args = parser.parse_args(argv)
    formats = [f for f in args.formats.split(",") if f]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown or args.docs < 1 or args.runs < 1:
        parser.error(f"formats must be among {FORMATS}, --docs and --runs >= 1")
    vectors = not args.no_vectors
    results: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        warm = work / "warm-up"
        write_corpus("markdown", 3, args.seed + 1, warm)
        ingest_once(warm, work / "data-warm-up", vectors=vectors)  # imports, model, readers
        sizes = {fmt: write_corpus(fmt, args.docs, args.seed, work / f"corpus-{fmt}")
                 for fmt in formats}
        walls: dict[str, list[float]] = {fmt: [] for fmt in formats}
        cpus: dict[str, list[float]] = {fmt: [] for fmt in formats}
        summaries: dict[str, str] = {}
        for run in range(args.runs):  # formats interleaved: load on a shared machine spreads
            for fmt in formats:
                wall, cpu, summaries[fmt] = ingest_once(
                    work / f"corpus-{fmt}", work / f"data-{fmt}-{run}", vectors=vectors)
                walls[fmt].append(wall)
                cpus[fmt].append(cpu)
        for fmt in formats:
            results[fmt] = summarise(args.docs, sizes[fmt], walls[fmt], cpus[fmt],
                                     summaries[fmt])
    print(json.dumps({
        "bench": "ingest_formats",
        "git": git_revision(),
        "python": platform.python_version(),
        "machine": platform.machine(),
        "params": {"docs": args.docs, "runs": args.runs, "seed": args.seed,
                   "vectors": vectors},
        "results": results,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
