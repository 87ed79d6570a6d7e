"""What a planner replica over the shared PostgreSQL store costs: its write path and its memory.

One run, a PostgreSQL server started for it (Debian's ``postgresql`` package, durable
defaults):

- **write path**: the demo corpus ingested in process, timing the embedding (done outside any
  transaction) and the write transactions (which hold the store's clock row, so writers of
  all replicas take turns); then the corpus split in two halves ingested by two concurrent
  ``planner-svc ingest`` processes into a fresh store, against one process ingesting it all.
- **memory**: the resident set (``VmRSS``, with its anonymous and file-backed parts) of a
  ``planner-svc serve`` replica after start-up (vector index and recall catalog built) over
  an empty store and over the corpus; the difference is what the corpus costs a replica.

Prints one JSON object with the git revision; docs/scaling.md extrapolates from it.

Usage: python -m bench.bench_replica
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from bench._server import ROOT, git_revision, running_server
from tests.pgserver import PostgresServer, free_port


class _TimedTransactions:
    """The store, with the time spent inside its outermost write transactions counted."""

    def __init__(self, store: Any) -> None:
        self._store = store
        self.seconds = 0.0
        self._depth = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)

    @contextmanager
    def transaction(self) -> Iterator[None]:
        self._depth += 1
        t0 = time.perf_counter()
        try:
            with self._store.transaction():
                yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self.seconds += time.perf_counter() - t0


def _documents(corpus: Path) -> list[Any]:
    from planner_svc.ingest import DocumentIn

    docs = []
    with corpus.open(encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            docs.append(DocumentIn(
                source_id=d["sourceId"], title=d["title"], media_type=d["mediaType"],
                text=d["text"], valid_from_us=int(d["validFrom"]),
                version_tx_us=int(d["versionTx"]), properties=d.get("properties", {}),
            ))
    return docs


def _write_path(pg: PostgresServer, corpus: Path, tmp: Path) -> dict[str, object]:
    from planner_svc.clock import wall_clock_us
    from planner_svc.embed import default_embedder
    from planner_svc.ingest import ingest_documents
    from planner_svc.store.postgres import PostgresStore

    docs = _documents(corpus)
    embedder = default_embedder()
    embedding = 0.0
    original = embedder.embed

    def timed_embed(texts: Any) -> Any:
        nonlocal embedding
        t0 = time.perf_counter()
        try:
            return original(texts)
        finally:
            embedding += time.perf_counter() - t0

    embedder.embed = timed_embed  # type: ignore[method-assign]
    with PostgresStore.open(pg.create_database("inprocess")) as store:
        timed = _TimedTransactions(store)
        t0 = time.perf_counter()
        report = ingest_documents(timed, embedder, docs, now_us=wall_clock_us())  # type: ignore[arg-type]
        total = time.perf_counter() - t0
    halves = [tmp / "half0.jsonl", tmp / "half1.jsonl"]
    lines = corpus.read_text(encoding="utf-8").splitlines(keepends=True)
    halves[0].write_text("".join(lines[0::2]), encoding="utf-8")
    halves[1].write_text("".join(lines[1::2]), encoding="utf-8")
    cli = [sys.executable, "-m", "planner_svc.cli", "ingest", "--quiet"]
    one_url = pg.create_database("one")
    t0 = time.perf_counter()
    subprocess.run([*cli, str(corpus), "--store", one_url], check=True, cwd=ROOT,
                   stdout=subprocess.DEVNULL)
    one = time.perf_counter() - t0
    two_url = pg.create_database("two")
    t0 = time.perf_counter()
    procs = [subprocess.Popen([*cli, str(h), "--store", two_url], cwd=ROOT,
                              stdout=subprocess.DEVNULL) for h in halves]
    assert all(p.wait() == 0 for p in procs)
    two = time.perf_counter() - t0
    return {
        "documents": len(docs),
        "passages": report.vectors,
        "edges": report.edges,
        "in_process_s": round(total, 1),
        "embedding_s": round(embedding, 1),
        "write_transactions_s": round(timed.seconds, 1),
        "write_ms_per_document": round(timed.seconds / len(docs) * 1000, 2),
        "one_writer_s": round(one, 1),
        "two_concurrent_writers_s": round(two, 1),
    }


def _rss(pid: int) -> dict[str, int]:
    fields = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "RssAnon", "RssFile"):
            fields[key] = int(value.split()[0]) * 1024
    return fields


def _serving_pid(port: int) -> int:
    out = subprocess.run(["pgrep", "-f", f"planner_svc.cli serve .*--port {port}"],
                         capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def _memory(pg: PostgresServer, tmp: Path) -> dict[str, object]:
    empty_url = pg.create_database("empty")
    measured: dict[str, object] = {}
    for name, url in (("empty", empty_url), ("corpus", pg.url("one"))):
        port = free_port()
        with running_server(str(tmp / f"replica-{name}"), port, store=url):
            measured[name] = _rss(_serving_pid(port))
    return measured


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", default=str(ROOT / ".cache" / "corpus" / "wiki_en.jsonl"))
    args = parser.parse_args()
    corpus = Path(args.corpus)
    if not corpus.exists():
        subprocess.run([sys.executable, "-m", "planner_svc.cli", "fetch-corpus"], check=True,
                       cwd=ROOT)
    with tempfile.TemporaryDirectory() as tmp, PostgresServer() as pg:
        write = _write_path(pg, corpus, Path(tmp))
        memory = _memory(pg, Path(tmp))
    print(json.dumps({"bench": "replica", "git": git_revision(), "write_path": write,
                      "memory_bytes": memory}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
