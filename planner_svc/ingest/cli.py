"""``planner-svc ingest``: write documents into a data directory's store.

``ingest PATH|-``: PATH is a file (one document; source id = its path relative to the working
directory), a directory (every file below it, hidden files and folders left out; source ids
relative to it), or a ``.jsonl`` file of documents (format in :mod:`planner_svc.ingest.jsonl`);
``-`` reads JSON Lines from stdin.

A file's format comes from its content, and its extension where the content cannot tell
(:func:`planner_svc.ingest.readers.sniff_media_type`): Markdown, plain text, HTML, PDF, DOCX and
Jupyter notebooks are read; a file of another type, or one that is encrypted or damaged, is
reported and skipped, and the run goes on. Markdown and text files are read as they always were
(title: a Markdown file's first heading, else the file name); other formats take their title
from the document (first heading, else the format's title metadata), else the source id.

Prints one summary line, then one line per format (documents read, skipped and failed, and
why); each refused document's reason goes to stderr. Exit status 0 unless every document
failed (1), 2 on a usage or configuration error.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

if TYPE_CHECKING:
    from planner_svc.ingest.model import DocumentIn, IngestReport

_FIRST_HEADING = re.compile(r"^ {0,3}#{1,6}[ \t]+(.+?)(?:[ \t]+#+)?[ \t]*$", re.MULTILINE)
_MAX_ERRORS_SHOWN = 20


@dataclass(frozen=True, slots=True)
class Refused:
    """An input that never became a document (a JSON Lines record that does not parse, a file
    that cannot be opened).

    Attributes:
        label: its source id when known, else ``line N`` or the path.
        reason: why, ``field: reason``.
        format: the format it is counted under.
        skipped: True when it could not be read at all, False when it was malformed.
    """

    label: str
    reason: str
    format: str
    skipped: bool
def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the ``ingest`` subcommand."""
    from planner_svc.ingest.pipeline import DEFAULT_BATCH_SIZE
    from planner_svc.settings import DEFAULT_DATA_DIR

    ingest = subparsers.add_parser(
        "ingest",
        help="ingest documents into the store",
        description="Ingest documents (Markdown, text, HTML, PDF, DOCX, Jupyter notebooks), a "
        "directory of them, or JSON Lines documents into the store: source versions, span "
        "ledger (with each span's page, heading path or notebook cell), nodes, edges and "
        "vectors. Files of other types, and encrypted or damaged ones, are reported and "
        "skipped.",
    )
    ingest.add_argument(
        "path", help="a document file, a directory, a .jsonl file, or - (stdin JSONL)"
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
        help="prefix for the source ids of files, joined with '/' (--source-prefix notes and "
        "notes/ both give notes/a.md; default: none, the id is the path relative to the "
        "ingested directory)",
    )
    ingest.add_argument("--quiet", action="store_true", help="no progress bar")
    ingest.set_defaults(func=_ingest)


def _file_title(path: Path, data: bytes) -> str:
    found = _FIRST_HEADING.search(data.decode("utf-8", errors="replace"))
    return found.group(1).strip() if found else path.name


def file_document(
    path: Path,
    source_id: str,
    *,
    valid_from_us: int | None = None,
    version_tx_us: int | None = None,
) -> DocumentIn | Refused:
    """The document of one file, or why there is none (the file cannot be opened).

    Markdown and plain text (by :func:`~planner_svc.ingest.readers.sniff_media_type`) become
    text documents exactly as before the other formats were read; every other file becomes a
    content document carrying the type found, which ingestion reads, or refuses (skipped)
    when no reader handles it.
    """
    from planner_svc.ingest.model import DocumentIn
    from planner_svc.ingest.readers import MARKDOWN, PLAIN, sniff_media_type

    try:
        data = path.read_bytes()
    except OSError as exc:
        return Refused(source_id, f"file: cannot be read: {exc.strerror or exc}", "unknown",
                       skipped=True)
    media_type = sniff_media_type(data, path.name)
    if media_type in (MARKDOWN, PLAIN):
        return DocumentIn(
            source_id=source_id,
            title=_file_title(path, data) if media_type == MARKDOWN else path.name,
            media_type=media_type,
            text=data,
            valid_from_us=valid_from_us,
            version_tx_us=version_tx_us,
        )
    return DocumentIn(
        source_id=source_id,
        media_type=media_type,
        content=data,
        valid_from_us=valid_from_us,
        version_tx_us=version_tx_us,
    )


def directory_files(directory: Path) -> list[Path]:
    """Every file below ``directory`` whose path (relative to it) has no hidden part (a name
    starting with ``.``), sorted by path."""
    return sorted(
        p for p in directory.rglob("*")
        if p.is_file() and not any(part.startswith(".")
                                   for part in p.relative_to(directory).parts)
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


def _sources(
    args: argparse.Namespace,
) -> tuple[Iterable[DocumentIn | Refused], int | None, list[BinaryIO]]:
    """(documents or refusals, total when known, files to close)."""
    from planner_svc.ingest.jsonl import read_jsonl

    times = {"valid_from_us": args.valid_from, "version_tx_us": args.version_tx}

    def lines(stream: Iterable[bytes]) -> Iterator[DocumentIn | Refused]:
        for item in read_jsonl(stream, **times):
            if isinstance(item, tuple):
                yield Refused(item[0], item[1], "JSON Lines", skipped=False)
            else:
                yield item

    if args.path == "-":
        return lines(sys.stdin.buffer), None, []
    path = Path(args.path)
    if path.is_dir():
        files = directory_files(path)
        if not files:
            print(f"planner-svc ingest: warning: no file under {path}", file=sys.stderr)
        docs = (file_document(p, _prefixed(args, _relative_id(p, path)), **times)
                for p in files)
        return docs, len(files), []
    if path.is_file() and path.suffix.lower() == ".jsonl":
        with path.open("rb") as counting:
            total = sum(1 for line in counting if line.strip())
        handle = path.open("rb")
        return lines(handle), total, [handle]
    if path.is_file():
        source_id = _prefixed(args, _relative_id(path, Path.cwd()))
        return [file_document(path, source_id, **times)], 1, []
    if not path.exists():
        raise FileNotFoundError(f"{args.path}: no such file or directory")
    raise FileNotFoundError(f"{args.path}: not a file, a directory or -")


def format_lines(report: IngestReport) -> list[str]:
    """One line per format, by format name: documents read, skipped and failed, and the
    reasons (most frequent first)."""
    if not report.formats:
        return []
    width = max(len(name) for name in report.formats)
    out = []
    for name, counts in sorted(report.formats.items()):
        why = "; ".join(f"{n} × {reason}" for reason, n in
                        sorted(counts.reasons.items(), key=lambda r: (-r[1], r[0])))
        out.append(f"  {name:<{width}}  read {counts.read}, skipped {counts.skipped}, "
                   f"failed {counts.failed}" + (f" ({why})" if why else ""))
    return out


def _size(doc: DocumentIn) -> int:
    """Bytes of a document's input (its content, or its text in UTF-8)."""
    if doc.content is not None:
        return len(doc.content)
    text = doc.text
    return len(text) if isinstance(text, bytes) else len(text.encode("utf-8", "surrogatepass"))


def _ingest(args: argparse.Namespace) -> int:
    from planner_svc.clock import wall_clock_us
    from planner_svc.core.errors import ConfigError, StoreUnavailable
    from planner_svc.ingest.pipeline import ingest_documents
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
    refused: list[Refused] = []
    input_bytes = 0

    def documents() -> Iterator[DocumentIn]:
        nonlocal input_bytes
        for item in items:
            if isinstance(item, Refused):
                refused.append(item)
            else:
                input_bytes += _size(item)
                yield item

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
    for item in refused:
        report.received += 1
        report.errors.append((item.label, item.reason))
        report.count_refused(item.format, item.reason, skipped=item.skipped)
    for source_id, reason in report.errors[:_MAX_ERRORS_SHOWN]:
        print(f"error: {source_id}: {reason}", file=sys.stderr)
    if report.failed > _MAX_ERRORS_SHOWN:
        print(f"... and {report.failed - _MAX_ERRORS_SHOWN} more errors", file=sys.stderr)
    rate = report.received / elapsed if elapsed > 0 else 0.0
    megabytes = input_bytes / elapsed / 1e6 if elapsed > 0 else 0.0
    if report.replaced:
        print(f"note: {report.replaced} document(s) replaced the text of a source already in "
              "the store "
              "(same source id; older versions stay readable as of earlier times)",
              file=sys.stderr)
    print(
        f"received {report.received}, ingested {report.ingested}, replaced {report.replaced}, "
        f"unchanged {report.unchanged}, skipped {report.skipped}, "
        f"failed {report.failed - report.skipped}; {report.spans} spans, {report.nodes} nodes, "
        f"{report.edges} edges, {report.vectors} vectors in {elapsed:.1f} s "
        f"({rate:.0f} docs/s, {megabytes:.2f} MB/s); {where}"
    )
    for line in format_lines(report):
        print(line)
    return 1 if report.received and report.failed == report.received else 0
