"""Full-corpus ingest time: the demo corpus into a fresh data directory, embeddings included.

Fetches the corpus into the cache if needed (``planner-svc fetch-corpus``), then times
``ingest_documents`` over every article into a temporary directory, ``--runs`` times, and prints
one JSON object: median/min seconds, documents per second, spans/passages/edges written, the
git revision.

Usage: python -m bench.bench_ingest [--runs 3]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench._server import ROOT, git_revision


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--corpus", default=str(ROOT / ".cache" / "corpus" / "wiki_en.jsonl"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.exists():
        subprocess.run([sys.executable, "-m", "planner_svc.cli", "fetch-corpus"], check=True,
                       cwd=ROOT)

    from planner_svc.clock import wall_clock_us
    from planner_svc.embed import default_embedder
    from planner_svc.ingest import DocumentIn, ingest_documents
    from planner_svc.store import Store

    docs = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs.append(DocumentIn(
                source_id=d["sourceId"], title=d["title"], media_type=d["mediaType"],
                text=d["text"], valid_from_us=int(d["validFrom"]),
                version_tx_us=int(d["versionTx"]), properties=d.get("properties", {}),
            ))
    embedder = default_embedder()
    times: list[float] = []
    report = None
    for _ in range(args.runs):
        with tempfile.TemporaryDirectory() as tmp, Store.open(Path(tmp)) as store:
            t0 = time.perf_counter()
            report = ingest_documents(store, embedder, docs, now_us=wall_clock_us())
            times.append(time.perf_counter() - t0)
    assert report is not None
    median = statistics.median(times)
    print(json.dumps({
        "bench": "ingest",
        "git": git_revision(),
        "documents": len(docs),
        "runs": args.runs,
        "median_s": round(median, 2),
        "min_s": round(min(times), 2),
        "docs_per_s": round(len(docs) / median, 1),
        "spans": report.spans,
        "passages": report.vectors,
        "edges": report.edges,
    }))
    return 0


if __name__ == "__main__":
    sys.exit(main())
