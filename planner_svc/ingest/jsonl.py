"""The JSON Lines document format ``planner-svc ingest`` reads.

One object per line, the proto3 JSON mapping of ``SourceDocument`` (snake_case accepted):
``{"sourceId", "title", "text", "content", "mediaType", "validFrom", "versionTx",
"properties"}``; times are integer microseconds (a decimal string is accepted, as proto3 JSON
writes int64). A document is ``text`` (a string) or ``content``: the bytes of a file in any
supported format (HTML, PDF, DOCX, notebook, Markdown, text), base64 as proto3 JSON writes
bytes (standard or URL-safe alphabet, padding optional), read by ``mediaType`` or sniffed::

    {"sourceId": "handbook.pdf", "mediaType": "application/pdf", "content": "JVBERi0xLjMK..."}
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from planner_svc.core.errors import InvalidRequest
from planner_svc.ingest.pipeline import DocumentIn

__all__ = ["document_from_json", "read_jsonl"]


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


def _content(value: Any) -> bytes | None:
    """The bytes of a ``content`` field (base64, standard or URL-safe, padding optional)."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise InvalidRequest("content", f"expected a base64 string, got {type(value).__name__}")
    packed = "".join(value.split())
    packed += "=" * (-len(packed) % 4)
    try:
        return base64.b64decode(packed.replace("-", "+").replace("_", "/"), validate=True)
    except (binascii.Error, ValueError) as exc:
        raise InvalidRequest("content", f"not valid base64: {exc}") from exc


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
        raise InvalidRequest("sourceId", "expected a string, got "
                             + ("nothing" if source_id is None else type(source_id).__name__))
    content = _content(obj.get("content"))
    text = obj.get("text", "" if content is not None else None)
    if text is None:
        raise InvalidRequest("text", "a document needs text (a string) or content (base64)")
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
        content=content,
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
