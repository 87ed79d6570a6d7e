"""Records the store reads and writes: node and edge writes, node versions and edges.

Times are integer microseconds since the Unix epoch. Intervals are half-open: a version with
``valid_from_us <= t < valid_to_us`` is valid at ``t``; ``None`` as an upper bound means open
(still valid, or still the current transaction state).
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from planner_svc.core.errors import ECHO_CHARS, InvalidRequest, clip, echo
from planner_svc.core.model import NOWHERE, SPAN_KINDS, Location, SpanRef
from planner_svc.store.text import check_id, check_time, check_unit_weight

__all__ = [
    "SPAN_KINDS",
    "Edge",
    "EdgeWrite",
    "LedgerRow",
    "LedgerSpan",
    "NodeVersion",
    "NodeWrite",
    "NodeWriteResult",
    "decode_location",
    "encode_location",
]


def _check_interval(start: int, end: int | None, *, field_from: str, field_to: str) -> None:
    check_time(start, field=field_from)
    if end is not None:
        check_time(end, field=field_to)
        if end <= start:
            raise InvalidRequest(field_to, f"{end} must be greater than {field_from} {start}")


def _check_labels(labels: Sequence[str]) -> tuple[str, ...]:
    if isinstance(labels, str):
        raise InvalidRequest("labels", "expected a list of strings, got one string")
    out: set[str] = set()
    for i, label in enumerate(labels):
        if not isinstance(label, str) or not label or label != label.strip():
            raise InvalidRequest(f"labels[{i}]", f"{echo(label)} is not a non-empty trimmed string")
        out.add(label)
    return tuple(sorted(out))


def check_properties(properties: object) -> dict[str, str]:
    """A copy of ``properties`` with sorted keys; every key a non-empty string, every value a
    string.

    Raises:
        InvalidRequest: ``properties`` (not a mapping, or a bad key) or ``properties.<key>``.
    """
    if not isinstance(properties, Mapping):
        raise InvalidRequest(
            "properties", f"expected a mapping, got {type(properties).__name__}"
        )
    out: dict[str, str] = {}
    for key in sorted(properties):
        value = properties[key]
        if not isinstance(key, str) or not key:
            raise InvalidRequest("properties", f"key {echo(key)} is not a non-empty string")
        if not isinstance(value, str):
            raise InvalidRequest(f"properties.{clip(key, ECHO_CHARS)}",
                                 f"expected a string, got {echo(value)}")
        out[key] = value
    return out


def _check_span(i: int, span: SpanRef) -> None:
    name = f"provenance[{i}]"
    if not isinstance(span, SpanRef):
        raise InvalidRequest(name, f"expected a SpanRef, got {type(span).__name__}")
    check_id(span.source_id, field=f"{name}.source_id")
    check_time(span.source_version_tx, field=f"{name}.source_version_tx")
    if not isinstance(span.start, int) or not isinstance(span.end, int) or span.start < 0:
        raise InvalidRequest(f"{name}.start", f"{echo(span.start)} is not a byte offset >= 0")
    if span.end <= span.start:
        raise InvalidRequest(f"{name}.end", f"{echo(span.end)} must be greater than start")


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeWrite:
    """One node version to write.

    Attributes:
        node_id: stable node id (1..1024 characters, no control characters).
        labels: label set; stored sorted and without duplicates.
        properties: string -> string; stored with sorted keys.
        text: text indexed for full-text (FTS5) and semantic recall; may be empty.
        confidence: in (0, 1].
        provenance: spans of source versions the node was derived from (may be empty: such a
            node is recalled but contributes no evidence); stored sorted, without duplicates.
        valid_from_us: start of the valid interval (inclusive), microseconds.
        valid_to_us: end of the valid interval (exclusive), microseconds; None = open.

    Raises:
        InvalidRequest: a field is malformed; ``field`` names it.
    """

    node_id: str
    labels: tuple[str, ...] = ()
    properties: Mapping[str, str] = field(default_factory=dict)
    text: str = ""
    confidence: float = 1.0
    provenance: tuple[SpanRef, ...] = ()
    valid_from_us: int
    valid_to_us: int | None = None

    def __post_init__(self) -> None:
        check_id(self.node_id, field="node_id")
        object.__setattr__(self, "labels", _check_labels(self.labels))
        object.__setattr__(self, "properties", check_properties(self.properties))
        if not isinstance(self.text, str):
            raise InvalidRequest("text", f"expected a string, got {type(self.text).__name__}")
        conf = self.confidence
        if (
            not isinstance(conf, (int, float))
            or isinstance(conf, bool)
            or not math.isfinite(conf)
            or not 0.0 < conf <= 1.0
        ):
            raise InvalidRequest("confidence", f"{echo(conf)} is outside the allowed range (0, 1]")
        object.__setattr__(self, "confidence", float(conf))
        spans = tuple(self.provenance)
        for i, span in enumerate(spans):
            _check_span(i, span)
        object.__setattr__(self, "provenance", tuple(sorted(set(spans))))
        _check_interval(
            self.valid_from_us, self.valid_to_us, field_from="valid_from", field_to="valid_to"
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeVersion:
    """One stored node version (a row of the node table).

    Attributes:
        version_id: stable integer id of this version (the SQLite rowid), increasing with
            every stored version; the vector index keys vectors by it.
        node_id, labels, properties, text, confidence, provenance: as written (normalised).
        valid_from_us, valid_to_us: valid interval [from, to), microseconds; to None = open.
        tx_from_us, tx_to_us: transaction interval [from, to), microseconds; to None = the
            current version.
    """

    version_id: int
    node_id: str
    labels: tuple[str, ...]
    properties: Mapping[str, str]
    text: str
    confidence: float
    provenance: tuple[SpanRef, ...]
    valid_from_us: int
    valid_to_us: int | None
    tx_from_us: int
    tx_to_us: int | None


@dataclass(frozen=True, slots=True, kw_only=True)
class NodeWriteResult:
    """Outcome of one node write.

    Attributes:
        node_id: the node.
        version_id: the version now current (new, or the existing identical one).
        tx_us: its ``tx_from_us``.
        created: False when the write was identical to the current version (a no-op).
    """

    node_id: str
    version_id: int
    tx_us: int
    created: bool


@dataclass(frozen=True, slots=True, kw_only=True)
class EdgeWrite:
    """One edge version to write; the edge key is ``(src, dst, relation)``.

    Attributes:
        src, dst: node ids (not required to exist).
        relation: edge type, a non-empty string (e.g. ``"mentions"``).
        weight: in [0, 1]; multiplied into hop-expansion scores.
        valid_from_us, valid_to_us: valid interval [from, to), microseconds; to None = open.

    Raises:
        InvalidRequest: a field is malformed; ``field`` names it.
    """

    src: str
    dst: str
    relation: str
    weight: float
    valid_from_us: int
    valid_to_us: int | None = None

    def __post_init__(self) -> None:
        check_id(self.src, field="src_node_id")
        check_id(self.dst, field="dst_node_id")
        if not isinstance(self.relation, str) or not self.relation.strip():
            raise InvalidRequest("relation", f"{echo(self.relation)} is not a non-empty string")
        object.__setattr__(self, "weight", check_unit_weight(self.weight, field="weight"))
        _check_interval(
            self.valid_from_us, self.valid_to_us, field_from="valid_from", field_to="valid_to"
        )

    @property
    def key(self) -> tuple[str, str, str]:
        """``(src, dst, relation)``."""
        return (self.src, self.dst, self.relation)


@dataclass(frozen=True, slots=True, kw_only=True)
class Edge:
    """One stored edge version.

    Attributes:
        src, dst, relation, weight: as written.
        valid_from_us, valid_to_us: valid interval [from, to), microseconds; to None = open.
        tx_from_us, tx_to_us: transaction interval [from, to), microseconds; to None = current.
    """

    src: str
    dst: str
    relation: str
    weight: float
    valid_from_us: int
    valid_to_us: int | None
    tx_from_us: int
    tx_to_us: int | None

    @property
    def key(self) -> tuple[str, str, str]:
        """``(src, dst, relation)``."""
        return (self.src, self.dst, self.relation)


LedgerSpan = tuple[int, int, str] | tuple[int, int, str, Location]
"""A span to record in the ledger: ``(start, end, kind)`` (no location) or ``(start, end, kind,
location)``; UTF-8 byte offsets."""


@dataclass(frozen=True, slots=True)
class LedgerRow:
    """What the span ledger records of one span: its structural kind and its location.

    Attributes:
        kind: ``paragraph``, ``heading``, ``cell``, ``code`` or ``body``.
        location: page, heading path and notebook cell in the original document;
            :data:`~planner_svc.core.model.NOWHERE` when the row records none.
    """

    kind: str
    location: Location = NOWHERE


def encode_location(location: Location) -> str | None:
    """The stored form of a location: a compact JSON object with the keys that are set,
    ``{"page": 3, "headingPath": ["Intro", "Setup"], "cellIndex": 4}`` (``page`` 1-based,
    ``cellIndex`` 0-based, ``headingPath`` outermost first, non-ASCII kept); None (SQL NULL) for
    :data:`~planner_svc.core.model.NOWHERE`. Every store backend keeps this value in the span
    ledger row (a text or JSON column)."""
    if location.empty:
        return None
    out: dict[str, object] = {}
    if location.page is not None:
        out["page"] = location.page
    if location.heading_path:
        out["headingPath"] = list(location.heading_path)
    if location.cell_index is not None:
        out["cellIndex"] = location.cell_index
    return json.dumps(out, ensure_ascii=False, separators=(",", ":"))


def decode_location(stored: str | None) -> Location:
    """The location of a stored value (:func:`encode_location`); None, or a value that is not
    such an object (never written by this package), is :data:`~planner_svc.core.model.NOWHERE`:
    a location only helps a citation, it never decides whether a span can be cited."""
    if not stored:
        return NOWHERE
    try:
        obj = json.loads(stored)
        if not isinstance(obj, dict):
            return NOWHERE
        page, path, cell = obj.get("page"), obj.get("headingPath", []), obj.get("cellIndex")
        if not isinstance(path, list) or not all(isinstance(h, str) for h in path):
            return NOWHERE
        if not all(v is None or (isinstance(v, int) and not isinstance(v, bool))
                   for v in (page, cell)):
            return NOWHERE
        return Location(page=page, heading_path=tuple(path), cell_index=cell)
    except ValueError:  # JSON syntax, or a page below 1 / a cell below 0
        return NOWHERE
