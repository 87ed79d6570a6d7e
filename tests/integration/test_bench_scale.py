"""Smoke run of the scale benchmark on a few hundred generated documents: the whole path
(ingest streams into a fresh server, restart, catalog, plans, index recall) and the shape of
its report. The million-passage run is not part of the suite (see README.md, "Scale")."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from pathlib import Path

from bench.synthetic import document, question

ROOT = Path(__file__).resolve().parents[2]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_generated_documents_are_seeded_and_mention_each_other() -> None:
    docs = [document(3, n, 200) for n in range(200)]
    assert [d.text for d in docs[:5]] == [document(3, n, 200).text for n in range(5)]
    assert len({d.title for d in docs}) == 200
    titles = {d.title for d in docs}
    mentioning = sum(1 for d in docs if any(t in d.text.split("\n", 1)[1] for t in titles))
    assert mentioning > 50
    assert question(3, 7) != question(3, 8)


def test_scale_bench_smoke_run(tmp_path: Path) -> None:
    out = subprocess.run(
        [sys.executable, "-m", "bench.bench_scale", "--passages", "400", "--streams", "2",
         "--questions", "5", "--recall-queries", "5", "--k", "10", "--data",
         str(tmp_path / "data"), "--port", str(_free_port())],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=True,
    )
    report = json.loads(out.stdout)
    ingest = report["ingest"]
    assert ingest["documents"] == 132 and ingest["passages"] > 300
    assert ingest["first_tenth_docs_per_s"] > 0 and ingest["last_tenth_docs_per_cpu_s"] > 0
    assert report["disk_mb"]["store"] > 0 and report["disk_mb"]["index"] > 0
    assert report["plan"]["n"] == 5 and report["plan"]["p99_ms"] >= report["plan"]["p50_ms"]
    assert report["rss_mb"]["after_plans"]["VmRSS"] > 0
    index = report["vector_index"]
    assert index["vectors"] == ingest["passages"]
    assert index["layout"]["exact"] is True  # a few hundred vectors: exact segments only
    assert index["recall_at_k_mean"] == 1.0
