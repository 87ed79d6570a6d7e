"""The store's rules, apart from any SQL: what a write may do and what a read returns.

Both backends (the embedded SQLite store and :mod:`planner_svc.store.postgres`) read rows with
their own SQL and decide with these functions, so they refuse the same writes with the same
field and message and derive the same rows from the same inputs:

- the transaction clock: :func:`check_not_before`, :func:`stamp_time`;
- source versions: :func:`source_version_bytes`;
- the span ledger: :func:`checked_spans`;
- nodes: :func:`same_node`, :func:`provenance_json`;
- edges: :func:`edge_changes`;
- slices and provenance over version texts: :func:`slices_of`, :func:`check_cited`.

Units: times are integer microseconds since the Unix epoch, offsets UTF-8 byte offsets.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from planner_svc.core.errors import InvalidRequest, echo
from planner_svc.core.model import NOWHERE, SPAN_KINDS, CoordKey, Location, SpanRef
from planner_svc.store.records import (
    Edge,
    EdgeWrite,
    LedgerSpan,
    NodeVersion,
    NodeWrite,
    encode_location,
)
from planner_svc.store.text import (
    canonicalize,
    check_id,
    check_time,
    encode_text,
    on_boundary,
    slice_utf8,
)

__all__ = [
    "check_cited",
    "check_not_before",
    "checked_spans",
    "edge_changes",
    "provenance_json",
    "same_node",
    "slices_of",
    "source_version_bytes",
    "stamp_time",
    "to_json",
]


def to_json(value: object) -> str:
    """Compact JSON, non-ASCII kept: the form labels, properties and provenance are stored in
    (control characters are escaped, so the text never holds a NUL)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


# --------------------------------------------------------------------------- the clock


def check_not_before(last_tx: int | None, tx_us: int, *, field: str) -> None:
    """Refuse a transaction time before the latest one the store recorded.

    Raises:
        InvalidRequest: (``field``) ``tx_us < last_tx``.
    """
    if last_tx is not None and tx_us < last_tx:
        raise InvalidRequest(
            field,
            f"{tx_us} is earlier than the latest transaction time {last_tx} the store has "
            "recorded; transaction time never moves backwards (a time known about the "
            "content belongs on the valid axis)",
        )


def stamp_time(
    last_tx: int | None, proposed_us: int | None, *, now_us: int, field: str, or_clock: bool
) -> int:
    """The transaction time a stamped write block writes at (see
    :meth:`planner_svc.ingest.ports.WriteTransactions.stamped`): the proposal when it lies in
    ``[last_tx, now_us]``, else (no proposal, or ``or_clock`` with one outside that range) the
    clock ``max(now_us, last_tx + 1)``.

    Raises:
        InvalidRequest: (``now_us``) not an int64; (``field``) the proposal is in the future or
            before ``last_tx`` (unless ``or_clock``).
    """
    check_time(now_us, field="now_us")
    if or_clock and proposed_us is not None and not (
        (last_tx is None or last_tx <= proposed_us) and proposed_us <= now_us
    ):
        proposed_us = None
    if proposed_us is None:
        return now_us if last_tx is None else max(now_us, last_tx + 1)
    tx = check_time(proposed_us, field=field)
    if tx > now_us:
        raise InvalidRequest(field, f"{tx} is in the future (now {now_us}); it must be <= now")
    check_not_before(last_tx, tx, field=field)
    return tx


# --------------------------------------------------------------------------- sources


def source_version_bytes(
    source_id: str, text: str, *, title: object, media_type: object, tx_us: int
) -> bytes:
    """Validate a new source version and return its canonical text as UTF-8.

    Raises:
        InvalidRequest: (``source_id``) malformed; (``version_tx``) not an int64; (``title``)
            title or media type not a string; (``text``) blank or not valid UTF-8.
    """
    check_id(source_id, field="source_id")
    check_time(tx_us, field="version_tx")
    if not isinstance(title, str) or not isinstance(media_type, str):
        raise InvalidRequest("title", "title and media_type must be strings")
    canonical = canonicalize(text)
    data = encode_text(canonical, field="text")
    if not canonical.strip():
        raise InvalidRequest("text", "is empty (no non-whitespace character)")
    return data


def check_later_version(source_id: str, tx_us: int, latest_tx: int) -> None:
    """Refuse a new version of a source that is not later than its latest one.

    Raises:
        InvalidRequest: (``version_tx``) ``tx_us <= latest_tx``.
    """
    if tx_us <= latest_tx:
        raise InvalidRequest(
            "version_tx",
            f"{tx_us} is not later than the latest version {latest_tx} "
            f"of source {echo(source_id)}",
        )


# --------------------------------------------------------------------------- span ledger


def checked_spans(
    source_id: str, tx_us: int, data: bytes | None, spans: Iterable[LedgerSpan]
) -> list[tuple[str, int, int, int, str, str | None]]:
    """The ledger rows ``(source_id, tx, start, end, kind, location)`` of spans of one version
    whose canonical text is ``data`` (None: no such version); ``spans`` are ``(start, end,
    kind)`` or ``(start, end, kind, location)``, the location stored as
    :func:`~planner_svc.store.records.encode_location` writes it (None: no location).

    Raises:
        InvalidRequest: (``source_version_tx``) unknown version; (``spans[i].location``) not a
            Location; (``spans[i].kind``) unknown kind; (``spans[i]``) outside ``[0, len)``,
            empty, or off a code point boundary.
    """
    if data is None:
        raise InvalidRequest(
            "source_version_tx", f"source {echo(source_id)} has no version {tx_us}"
        )
    rows: list[tuple[str, int, int, int, str, str | None]] = []
    for i, span in enumerate(spans):
        start, end, kind = span[0], span[1], span[2]
        location = span[3] if len(span) > 3 else NOWHERE  # type: ignore[misc]
        if not isinstance(location, Location):
            raise InvalidRequest(
                f"spans[{i}].location", f"expected a Location, got {type(location).__name__}"
            )
        if kind not in SPAN_KINDS:
            raise InvalidRequest(
                f"spans[{i}].kind", f"{echo(kind)} is not one of {', '.join(SPAN_KINDS)}"
            )
        if not (0 <= start < end <= len(data)):
            raise InvalidRequest(
                f"spans[{i}]", f"[{start}, {end}) is outside [0, {len(data)}) or empty"
            )
        if not (on_boundary(data, start) and on_boundary(data, end)):
            raise InvalidRequest(f"spans[{i}]", f"[{start}, {end}) is not on code point boundaries")
        rows.append((source_id, tx_us, start, end, kind, encode_location(location)))
    return rows


# --------------------------------------------------------------------------- nodes


def same_node(write: NodeWrite, current: NodeVersion) -> bool:
    """Whether ``write`` would store exactly ``current`` again (then it writes nothing)."""
    return (
        write.labels == current.labels
        and dict(write.properties) == dict(current.properties)
        and write.text == current.text
        and write.confidence == current.confidence
        and write.provenance == current.provenance
        and write.valid_from_us == current.valid_from_us
        and write.valid_to_us == current.valid_to_us
    )


def provenance_json(spans: Sequence[SpanRef]) -> str:
    """The stored form of a provenance list: ``[[source_id, tx, start, end], ...]``."""
    return to_json([[s.source_id, s.source_version_tx, s.start, s.end] for s in spans])


# --------------------------------------------------------------------------- edges


def edge_changes(
    writes: Iterable[EdgeWrite],
    current: Mapping[tuple[str, str, str], tuple[int, Edge]],
    replace_out_of: Iterable[str],
) -> tuple[list[EdgeWrite], list[int]]:
    """What an edge write changes, given the current versions of the keys it may touch.

    Args:
        writes: the edges written (the last write of a key wins).
        current: ``(src, dst, relation)`` -> (edge id, current version) for every current edge
            leaving a written source or a node of ``replace_out_of``.
        replace_out_of: nodes whose current outgoing edges not written are closed.

    Returns:
        ``(new versions, edge ids to close)``: new versions in key order (identical writes
        left out), closings of replaced keys first (key order), then of superseded keys.
    """
    by_key: dict[tuple[str, str, str], EdgeWrite] = {}
    for w in writes:
        by_key[w.key] = w
    replace = set(replace_out_of)
    changes: list[EdgeWrite] = []
    for key in sorted(by_key):
        w = by_key[key]
        found = current.get(key)
        if found is not None:
            e = found[1]
            if (e.weight, e.valid_from_us, e.valid_to_us) == (
                w.weight, w.valid_from_us, w.valid_to_us,
            ):
                continue
        changes.append(w)
    closing = [
        edge_id
        for key, (edge_id, _e) in sorted(current.items())
        if key[0] in replace and key not in by_key
    ]
    closing.extend(current[w.key][0] for w in changes if w.key in current)
    return changes, closing


def edge_sources(writes: Iterable[EdgeWrite], replace_out_of: Iterable[str]
                 ) -> tuple[list[EdgeWrite], set[str], list[str]]:
    """The writes and the replaced nodes as collections (each iterable read once), and the
    sorted source nodes whose current edges the write reads."""
    listed = list(writes)
    replace = set(replace_out_of)
    return listed, replace, sorted({w.src for w in listed} | replace)


# --------------------------------------------------------------------------- texts


def slices_of(
    keys: Iterable[CoordKey], texts: Mapping[tuple[str, int], bytes]
) -> dict[CoordKey, str]:
    """Each coordinate's text from its version's canonical UTF-8 ``texts`` (by ``(source_id,
    tx)``); a key whose version is missing or whose range cannot be sliced is absent."""
    out: dict[CoordKey, str] = {}
    for key in sorted(set(keys)):
        data = texts.get((key[0], key[1]))
        if data is None:
            continue
        piece = slice_utf8(data, key[2], key[3])
        if piece is not None:
            out[key] = piece
    return out


def check_cited(
    spans: Sequence[SpanRef], texts: Mapping[tuple[str, int], bytes], *, field: str
) -> None:
    """Refuse provenance a plan could not cite, given the texts of the versions it names.

    Raises:
        InvalidRequest: (``{field}[i].source_version_tx``) no such version;
            (``{field}[i].end`` / ``.start``) out of range or inside a character.
    """
    for i, span in enumerate(spans):
        where = f"{field}[{i}]"
        data = texts.get((span.source_id, span.source_version_tx))
        if data is None:
            raise InvalidRequest(
                f"{where}.source_version_tx",
                f"source {echo(span.source_id)} has no version {span.source_version_tx}",
            )
        if span.end > len(data):
            raise InvalidRequest(
                f"{where}.end",
                f"{span.end} is past the end of the version's text ({len(data)} bytes)",
            )
        for name, offset in (("start", span.start), ("end", span.end)):
            if not on_boundary(data, offset):
                raise InvalidRequest(
                    f"{where}.{name}", f"{offset} falls inside a multi-byte character"
                )
