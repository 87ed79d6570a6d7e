"""``planner-svc ingest``: write documents into a data directory's store.

``ingest PATH|-``: PATH is a Markdown or text file (one document; source id = its path relative
to the working directory, title = its first heading, else the file name), a directory (every
``.md``, ``.markdown`` and ``.txt`` file below it, source ids relative to it), or a ``.jsonl``
file of documents (format in :mod:`planner_svc.ingest.jsonl`); ``-`` reads JSON Lines from
stdin. Prints one summary line; exit status 0 unless every document failed (1), 2 on a usage or
configuration error.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

TEXT_SUFFIXES = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain"}
_FIRST_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_MAX_ERRORS_SHOWN = 20


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ingest`` subcommand."""
    from planner_svc.ingest.pipeline import DEFAULT_BATCH_SIZE
    from planner_svc.settings import DEFAULT_DATA_DIR

    ingest = subparsers.add_parser(
        "ingest",
        help="ingest documents into the store",
        description="Ingest Markdown/text files, a directory of them, or JSON Lines documents "
        "into the store: source versions, span ledger, nodes, edges and vectors.",
    )
    ingest.add_argument(
        "path", help="a .md/.markdown/.txt file, a directory, a .jsonl file, or - (stdin JSONL)"
    )
    ingest.add_argument(
        "--data", type=Path, default=DEFAULT_DATA_DIR,
        help=f"data directory (default {DEFAULT_DATA_DIR}); with --store unused: the replicas "
        "build their indexes from the shared store",
    )
    ingest.add_argument(
        "--store", default=None, metavar="URL",
        help="shared store, postgresql://user@host:port/database (password from PGPASSWORD or "
        "~/.pgpass); default: the SQLite store in --data",
    )
    ingest.add_argument(
        "--valid-from",
        type=int,
        metavar="US",
        default=None,
        help="valid-from of documents without one, microseconds since the epoch (default now)",
    )
    ingest.add_argument(
        "--version-tx",
        type=int,
        metavar="US",
        default=None,
        help="version tx of documents without one, microseconds since the epoch (default now)",
    )
    ingest.add_argument(
        "--batch-size", type=int, default=DEFAULT_BATCH_SIZE,
        help=f"documents embedded together (default {DEFAULT_BATCH_SIZE})",
    )
    ingest.add_argument(
        "--no-vectors", action="store_true", help="write no vectors (no semantic recall)"
    )
    ingest.add_argument(
        "--source-prefix",
        default="",
        help="prefix for the source ids of files (default: none, the id is the path relative "
        "to the ingested directory)",
    )
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(func=_ingest)


def _file_title(path: Path, data: bytes) -> str:
    if TEXT_SUFFIXES.get(path.suffix.lower()) == "text/markdown":
        found = _FIRST_HEADING.search(data.decode("utf-8", errors="replace"))
        if found:
            return found.group(1).strip()
    return path.name


def _file_document(path: Path, source_id: str, args: argparse.Namespace) -> object:
    from planner_svc.ingest.pipeline import DocumentIn

    data = path.read_bytes()
    return DocumentIn(
        source_id=source_id,
        title=_file_title(path, data),
        media_type=TEXT_SUFFIXES[path.suffix.lower()],
        text=data,
        valid_from_us=args.valid_from,
        version_tx_us=args.version_tx,
    )


def _relative_id(path: Path, base: Path) -> str:
    try:
        return path.resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return path.name


def _prefixed(args: argparse.Namespace, source_id: str) -> str:
    """A file's source id under ``--source-prefix`` (files in different folders that share a
    relative path would otherwise be versions of one source)."""
    prefix = (args.source_prefix or "").strip("/")
    return f"{prefix}/{source_id}" if prefix else source_id


def _sources(args: argparse.Namespace) -> tuple[Iterable[object], int | None, list[BinaryIO]]:
    """(documents or (label, reason) errors, total when known, files to close)."""
    from planner_svc.ingest.jsonl import read_jsonl

    if args.path == "-":
        stream = read_jsonl(
            sys.stdin.buffer, valid_from_us=args.valid_from, version_tx_us=args.version_tx
        )
        return stream, None, []
    path = Path(args.path)
    if path.is_dir():
        files = sorted(
            p for p in path.rglob("*") if p.is_file() and p.suffix.lower() in TEXT_SUFFIXES
        )
        if not files:
            print(f"planner-svc ingest: warning: no .md, .markdown or .txt file under {path}",
                  file=sys.stderr)
        docs = (_file_document(p, _prefixed(args, _relative_id(p, path)), args) for p in files)
        return docs, len(files), []
    if path.is_file() and path.suffix.lower() == ".jsonl":
        with path.open("rb") as counting:
            total = sum(1 for line in counting if line.strip())
        handle = path.open("rb")
        stream = read_jsonl(handle, valid_from_us=args.valid_from, version_tx_us=args.version_tx)
        return stream, total, [handle]
    if path.is_file() and path.suffix.lower() in TEXT_SUFFIXES:
        return [_file_document(path, _prefixed(args, _relative_id(path, Path.cwd())), args)], 1, []
    if not path.exists():
        raise FileNotFoundError(f"{args.path}: no such file or directory")
    raise FileNotFoundError(
        f"{args.path}: not a directory, .jsonl, .md, .markdown or .txt file, or -"
    )


def _ingest(args: argparse.Namespace) -> int:
    from planner_svc.clock import wall_clock_us
    from planner_svc.core.errors import ConfigError, StoreUnavailable
    from planner_svc.ingest.pipeline import DocumentIn, ingest_documents
    from planner_svc.settings import read_environment
    from planner_svc.store.open import open_store
    from planner_svc.store.store import Store

    try:
        items, total, handles = _sources(args)
    except (FileNotFoundError, OSError) as exc:
        print(f"planner-svc ingest: {exc}", file=sys.stderr)
        return 2
    embedder = None
    if not args.no_vectors:
        from planner_svc.embed import default_embedder

        try:
            embedder = default_embedder(read_environment().model_dir)
        except ConfigError as exc:
            print(f"planner-svc ingest: {exc}", file=sys.stderr)
            return 2
    bad: list[tuple[str, str]] = []
    def documents() -> Iterator[DocumentIn]:
        for item in items:
            if isinstance(item, DocumentIn):
                yield item
            else:
                assert isinstance(item, tuple)
                bad.append(item)

    started = time.perf_counter()
    try:
        with open_store(args.data, args.store) as store:
            report = ingest_documents(
                store,
                embedder,
                documents(),
                now_us=wall_clock_us(),
                progress=not args.quiet,
                total=total,
                batch_size=args.batch_size,
            )
            if isinstance(store, Store):
                size = sum(p.stat().st_size
                           for p in store.path.parent.glob(store.path.name + "*")) / 1e6
                where = f"store {args.data} {size:.1f} MB"
            else:
                where = f"store {store.url}"
    except (ConfigError, StoreUnavailable) as exc:
        print(f"planner-svc ingest: {exc}", file=sys.stderr)
        return 2
    finally:
        for handle in handles:
            handle.close()
    elapsed = time.perf_counter() - started
    report.received += len(bad)
    report.errors.extend(bad)
    for source_id, reason in report.errors[:_MAX_ERRORS_SHOWN]:
        print(f"error: {source_id}: {reason}", file=sys.stderr)
    if report.failed > _MAX_ERRORS_SHOWN:
        print(f"... and {report.failed - _MAX_ERRORS_SHOWN} more errors", file=sys.stderr)
    rate = report.received / elapsed if elapsed > 0 else 0.0
    if report.replaced:
        print(f"note: {report.replaced} document(s) replaced the text of a source already in "
              "the store "
              "(same source id; older versions stay readable as of earlier times)",
              file=sys.stderr)
    print(
        f"received {report.received}, ingested {report.ingested}, replaced {report.replaced}, "
        f"unchanged {report.unchanged}, "
        f"failed {report.failed}; {report.spans} spans, {report.nodes} nodes, "
        f"{report.edges} edges, {report.vectors} vectors in {elapsed:.1f} s "
        f"({rate:.0f} docs/s); {where}"
    )
    return 1 if report.received and report.failed == report.received else 0
