"""The demo, in two acts.

1. Fetch and ingest the Wikipedia vital-article summaries, serve them over gRPC on a loopback
   port, print a few evidence plans (one multi-hop), stop the server.
2. Write a small mixed corpus (a PDF handbook, a web page, a Word file, a notebook, Markdown,
   text, and three files no reader can read: ``tests/mixed_corpus.py``), ingest it into a
   second data directory (the ingest report counts each format's documents read, skipped and
   failed), serve it, and print a plan whose spans cite a PDF page and an HTML section.

Usage: python scripts/demo.py [--data DIR] [--mixed-data DIR] [--port PORT] [--budget N]

Every step is idempotent: the corpus download is cached, and re-ingesting unchanged documents
writes no new versions, so a second run prints the same plans and the same plan hashes. Both
acts stamp their documents with the corpus's fixed time, so the hashes are the same on every
machine too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import grpc

from planner_svc.api.planner.v1 import plan_pb2_grpc
from planner_svc.client.common import NotServing, question_request, render_plan, wait_serving
from planner_svc.demo.corpus import CORPUS_TIME_US

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = (
    ("single-hop", "Who painted the Mona Lisa?"),
    ("single-hop", "What is the chemical formula of water?"),
    ("multi-hop", "In what years did the artist who painted the Mona Lisa live?"),
)
MIXED_QUESTIONS = (
    ("PDF page and HTML section",
     "How do I stop a colony from swarming, and when should varroa be treated with oxalic "
     "acid?"),
)
MIXED_BUDGET = 200
"""Budget of the second act's plans, tokens (the mixed corpus is small)."""


def _port_free(port: int) -> bool:
    """True when nothing listens on 127.0.0.1:port (so the health check reaches our server)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        return probe.connect_ex(("127.0.0.1", port)) != 0


def _stale_store(data: Path) -> str | None:
    """The embedder that wrote the store's vectors when it is not today's, else None.

    The demo's data directory is derived from the corpus, so a store whose vectors another
    embedder (or another pooling) wrote is rebuilt rather than mixed with new vectors.
    """
    if not (data / "store.sqlite").exists():
        return None
    from planner_svc.embed import default_embedder
    from planner_svc.ingest.pipeline import EMBEDDER_META_KEY
    from planner_svc.store import Store

    with Store.open(data) as store:
        stored = store.get_meta(EMBEDDER_META_KEY)
    current = default_embedder().name
    return stored if stored is not None and stored != current else None


def _cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "planner_svc.cli", *args]


def _serve_and_plan(data: str, port: int, questions: tuple[tuple[str, str], ...],
                    budget: int, env: dict[str, str]) -> None:
    """Serve ``data`` on 127.0.0.1:``port``, print the plan of each question, stop."""
    address = f"127.0.0.1:{port}"
    print(f"== starting the server on {address}", flush=True)
    server = subprocess.Popen(
        _cli("serve", "--data", data, "--port", str(port), "--log-level", "warning"),
        cwd=ROOT, env=env,
    )
    try:
        try:
            wait_serving(address, server, timeout_s=120)
        except NotServing as exc:
            raise SystemExit(str(exc)) from None
        if server.poll() is not None:
            raise SystemExit(f"the demo server exited with code {server.returncode}")
        with grpc.insecure_channel(address) as channel:
            stub = plan_pb2_grpc.EvidencePlannerServiceStub(channel)
            for label, question in questions:
                print(f"\n== {label}: {question}\n", flush=True)
                request = question_request(question, budget_tokens=budget, expand_depth=1)
                started = time.perf_counter()
                plan = stub.Plan(request, timeout=30).plan
                elapsed_ms = (time.perf_counter() - started) * 1000
                print(render_plan(plan, width=140))
                print(f"(Plan RPC {elapsed_ms:.1f} ms)")
    finally:
        server.send_signal(signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
    print("\n== server stopped")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", default="data/demo", help="data directory")
    parser.add_argument("--mixed-data", default="data/demo-mixed",
                        help="data directory of the second act (the mixed corpus)")
    parser.add_argument("--port", type=int, default=50151, help="loopback port")
    parser.add_argument("--budget", type=int, default=400, help="budget per plan, tokens")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    if not _port_free(args.port):
        raise SystemExit(
            f"port {args.port} is already in use on 127.0.0.1: stop what listens there or "
            f"pick another port (make demo PORT=NNNNN)"
        )

    print("== act 1: Wikipedia summaries", flush=True)
    print("== fetching the corpus (cached after the first run)", flush=True)
    subprocess.run(_cli("fetch-corpus"), check=True, cwd=ROOT, env=env)
    data = Path(args.data) if Path(args.data).is_absolute() else ROOT / args.data
    stale = _stale_store(data)
    if stale is not None:
        print(f"== {args.data} holds vectors of {stale}: rebuilding it", flush=True)
        shutil.rmtree(data)
    print("== ingesting", flush=True)
    corpus = ROOT / ".cache" / "corpus" / "wiki_en.jsonl"
    subprocess.run(_cli("ingest", str(corpus), "--data", args.data), check=True, cwd=ROOT,
                   env=env)
    _serve_and_plan(args.data, args.port, QUESTIONS, args.budget, env)

    print("\n== act 2: a mixed corpus (PDF, HTML, DOCX, notebook, Markdown, text)", flush=True)
    mixed = ROOT / ".cache" / "mixed-corpus"
    subprocess.run([sys.executable, "-m", "tests.mixed_corpus", str(mixed)], check=True,
                   cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    mixed_data = Path(args.mixed_data)
    if _stale_store(mixed_data if mixed_data.is_absolute() else ROOT / mixed_data) is not None:
        shutil.rmtree(mixed_data if mixed_data.is_absolute() else ROOT / mixed_data)
    print(f"== ingesting {mixed.relative_to(ROOT)}/ (three files are meant to be refused)",
          flush=True)
    ingest = subprocess.run(
        _cli("ingest", str(mixed.relative_to(ROOT)), "--data", args.mixed_data, "--quiet",
             # the corpus's fixed time, as for act 1: the same plans and hashes on every machine
             "--version-tx", str(CORPUS_TIME_US), "--valid-from", str(CORPUS_TIME_US)),
        cwd=ROOT, env=env,
    )
    if ingest.returncode != 0:
        raise SystemExit(f"ingesting the mixed corpus failed (exit {ingest.returncode})")
    _serve_and_plan(args.mixed_data, args.port, MIXED_QUESTIONS, MIXED_BUDGET, env)
    return 0


if __name__ == "__main__":
    sys.exit(main())
