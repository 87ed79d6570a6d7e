"""What the round trips to the shared PostgreSQL store cost an ingest: the first documents of
the demo corpus ingested in process into a fresh store on a server started for the run
(Debian's ``postgresql`` package, durable defaults), once over a direct loopback connection
and once through a TCP proxy that delays every packet by ``--delay-ms`` in each direction (a
database on another host).

For each path: the SQL statements the store sent (every ``execute`` of its connections, the
transaction control included) and the round trips they cost (a pipelined group is one), per
document; the ingest's wall time and the time inside the
outermost write transactions (holding the clock row); the round-trip time measured on that
path (median of 200 ``SELECT 1``). Prints one JSON object with the git revision.

Usage: python -m bench.bench_pg_ingest [--documents 1000] [--delay-ms 0.25]
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import threading
import time
from collections import deque
from contextlib import suppress
from pathlib import Path
from typing import Any

import psycopg

from bench._server import ROOT, git_revision
from bench.bench_replica import _documents, _TimedTransactions
from tests.pgserver import PostgresServer, StatementCounter


class LatencyProxy:
    """A TCP proxy on 127.0.0.1 to ``target_port`` delaying each chunk of bytes by
    ``delay_s`` in each direction (order kept; a chunk is sent when its delay has passed)."""

    def __init__(self, target_port: int, delay_s: float) -> None:
        self._target = target_port
        self._delay = delay_s
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = int(self._listener.getsockname()[1])
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            server = socket.create_connection(("127.0.0.1", self._target))
            for sock in (client, server):
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            self._pump(client, server)
            self._pump(server, client)

    def _pump(self, src: socket.socket, dst: socket.socket) -> None:
        queue: deque[tuple[float, bytes]] = deque()
        ready = threading.Condition()

        def receive() -> None:
            while True:
                try:
                    data = src.recv(1 << 16)
                except OSError:
                    data = b""
                with ready:
                    queue.append((time.perf_counter() + self._delay, data))
                    ready.notify()
                if not data:
                    return

        def send() -> None:
            while True:
                with ready:
                    while not queue:
                        ready.wait()
                    due, data = queue.popleft()
                while (left := due - time.perf_counter()) > 0:
                    time.sleep(left)
                if not data:
                    with suppress(OSError):
                        dst.shutdown(socket.SHUT_WR)
                    return
                try:
                    dst.sendall(data)
                except OSError:
                    return

        threading.Thread(target=receive, daemon=True).start()
        threading.Thread(target=send, daemon=True).start()

    def close(self) -> None:
        self._listener.close()


def _rtt_ms(url: str) -> float:
    with psycopg.connect(url, autocommit=True) as conn:
        samples = []
        for _ in range(200):
            t0 = time.perf_counter()
            conn.execute("SELECT 1").fetchall()
            samples.append(time.perf_counter() - t0)
    return round(statistics.median(samples) * 1000, 3)


def _ingest(url: str, docs: list[Any]) -> dict[str, object]:
    from planner_svc.clock import wall_clock_us
    from planner_svc.embed import default_embedder
    from planner_svc.ingest import ingest_documents
    from planner_svc.store.postgres import PostgresStore

    embedder = default_embedder()
    with PostgresStore.open(url) as store:
        timed = _TimedTransactions(store)
        with StatementCounter() as counter:
            t0 = time.perf_counter()
            report = ingest_documents(timed, embedder, docs, now_us=wall_clock_us())  # type: ignore[arg-type]
            seconds = time.perf_counter() - t0
    assert report.ingested == len(docs), report.errors[:3]
    return {
        "statements": counter.statements,
        "statements_per_document": round(counter.statements / len(docs), 2),
        "round_trips": counter.round_trips,
        "round_trips_per_document": round(counter.round_trips / len(docs), 2),
        "ingest_s": round(seconds, 2),
        "write_transactions_s": round(timed.seconds, 2),
        "write_ms_per_document": round(timed.seconds / len(docs) * 1000, 2),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--documents", type=int, default=1000)
    parser.add_argument("--delay-ms", type=float, default=0.25,
                        help="added delay per direction through the proxy, milliseconds")
    parser.add_argument("--corpus", default=str(ROOT / ".cache" / "corpus" / "wiki_en.jsonl"))
    args = parser.parse_args()
    docs = _documents(Path(args.corpus))[: args.documents]
    out: dict[str, object] = {"revision": git_revision(), "documents": len(docs),
                              "delay_ms_per_direction": args.delay_ms}
    with PostgresServer() as pg:
        direct = pg.create_database("direct")
        delayed = pg.create_database("delayed")
        proxy = LatencyProxy(pg.port, args.delay_ms / 1000)
        try:
            via_proxy = delayed.replace(f":{pg.port}/", f":{proxy.port}/")
            out["direct"] = {"rtt_ms": _rtt_ms(direct), **_ingest(direct, docs)}
            out["delayed"] = {"rtt_ms": _rtt_ms(via_proxy), **_ingest(via_proxy, docs)}
        finally:
            proxy.close()
    print(json.dumps(out, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
