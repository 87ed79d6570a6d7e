"""Plan hash v1: the committed test vectors, an independent encoder, and the byte layout.

The independent encoder below works from the JSON of a vector with ``struct`` and ``blake3``
only, so the vectors are checked against two separate implementations of docs/plan-hash.md.
"""

from __future__ import annotations

import importlib.util
import json
import struct
from pathlib import Path
from typing import Any

import blake3
import pytest

from planner_svc.core.model import NOWHERE, PLAN_MODEL, Location, PlannedSpan, SpanClass, SpanRef
from planner_svc.core.plan_hash import EMPTY_PLAN_HASH, encode_plan, plan_hash

VECTORS = Path(__file__).resolve().parents[1] / "vectors"
VECTOR_FILES = ("plan_hash_v1.jsonl", "plan_hash_v1_extra.jsonl")
CLASS_BYTE = {"SPAN_CLASS_TRUTH": 1, "SPAN_CLASS_CACHE": 2}


def load(name: str) -> list[dict[str, Any]]:
    with (VECTORS / name).open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


ALL_VECTORS = [(name, v) for name in VECTOR_FILES for v in load(name)]


def independent_encoding(v: dict[str, Any]) -> bytes:
    """Plan hash v1 bytes straight from a vector's JSON, without planner_svc."""

    def text(value: str) -> bytes:
        raw = value.encode("utf-8")
        return len(raw).to_bytes(4, "big") + raw

    def u64(value: int | str) -> bytes:
        return int(value).to_bytes(8, "big", signed=False)

    # proto3 JSON: an omitted field is its zero value; integers may be numbers or strings.
    spans = v.get("spans", [])
    out = bytearray(text(v.get("planModel", "")))
    out += u64(v.get("budget", 0)) + u64(v.get("used", 0)) + u64(len(spans))
    for s in spans:
        ref = s["span"]
        out += text(ref.get("sourceId", ""))
        out += int(ref.get("sourceVersionTx", 0)).to_bytes(8, "big", signed=True)
        out += u64(ref.get("start", 0)) + u64(ref.get("end", 0))
        out += text(s.get("kind", ""))
        out.append(CLASS_BYTE[s["class"]])
        # IEEE-754 bit pattern: pack little-endian, read it back as an integer, write big-endian.
        bits = int.from_bytes(struct.pack("<d", float(s.get("weight", 0.0))), "little")
        out += bits.to_bytes(8, "big")
        out += u64(s.get("tokens", 0))
    return bytes(out)


def independent_hash(v: dict[str, Any]) -> str:
    return "b3:" + blake3.blake3(independent_encoding(v)).hexdigest()


def core_spans(v: dict[str, Any]) -> list[PlannedSpan]:
    """The vector's spans read through the service's own converter (proto3 JSON mapping)."""
    from google.protobuf import json_format

    from planner_svc.api.planner.v1 import plan_pb2
    from planner_svc.server.convert import plan_from_proto

    fields = {k: v[k] for k in ("planModel", "budget", "used", "spans") if k in v}
    return list(plan_from_proto(json_format.ParseDict(fields, plan_pb2.EvidencePlan())).spans)


def test_vector_files_are_present_and_large_enough() -> None:
    assert len(load("plan_hash_v1.jsonl")) == 7
    extra = load("plan_hash_v1_extra.jsonl")
    assert len(extra) >= 6
    names = [v["name"] for _, v in ALL_VECTORS]
    assert len(set(names)) == len(names)


def test_published_vectors_are_an_unmodified_copy() -> None:
    # plan_hash_v1.jsonl is the project-wide set; local additions go to the _extra file.
    digest = blake3.blake3((VECTORS / "plan_hash_v1.jsonl").read_bytes()).hexdigest()
    assert digest == "e2e72c235f2634f578e694fa948901b6f17ccf3509877fc3caa9daf818fd6580"


@pytest.mark.parametrize(("file", "vector"), ALL_VECTORS, ids=[v["name"] for _, v in ALL_VECTORS])
def test_vector_reproduced_by_implementation(file: str, vector: dict[str, Any]) -> None:
    spans = core_spans(vector)
    assert [s.span.key for s in spans] == sorted(s.span.key for s in spans), "canonical order"
    got = plan_hash(vector["planModel"], int(vector.get("budget", 0)),
                    int(vector.get("used", 0)), spans)
    assert got == vector["planHash"]


@pytest.mark.parametrize(("file", "vector"), ALL_VECTORS, ids=[v["name"] for _, v in ALL_VECTORS])
def test_vector_reproduced_by_independent_encoder(file: str, vector: dict[str, Any]) -> None:
    assert independent_hash(vector) == vector["planHash"]
    spans = core_spans(vector)
    assert independent_encoding(vector) == encode_plan(
        vector["planModel"], int(vector.get("budget", 0)), int(vector.get("used", 0)), spans
    )


def test_extra_vectors_regenerate_identically() -> None:
    spec = importlib.util.spec_from_file_location("gen_extra", VECTORS / "gen_plan_hash_extra.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.vectors() == load("plan_hash_v1_extra.jsonl")


def test_extra_vectors_cover_the_edges() -> None:
    extra = load("plan_hash_v1_extra.jsonl")
    spans = [s for v in extra for s in v.get("spans", [])]
    assert max(len(v.get("spans", [])) for v in extra) >= 40
    assert any(int(s.get("tokens", 0)) == 2**64 - 1 for s in spans)
    assert any(int(s["span"]["sourceVersionTx"]) == -(2**63) for s in spans)
    assert any(len(s["kind"].encode()) > 255 for s in spans)
    assert any(s["class"] == "SPAN_CLASS_CACHE" for s in spans)
    assert any(s.get("weight") == 5e-324 for s in spans)


def test_source_ids_order_by_code_point_not_utf16_code_units() -> None:
    [vector] = [v for _, v in ALL_VECTORS if v["name"].startswith("source ids by code point")]
    ids = [s["span"]["sourceId"] for s in vector["spans"]]
    assert ids == ["\uff21", "\ufffd", "\U00010000", "\U0001f600"]
    assert ids == sorted(ids)  # Python compares str by code point
    assert ids == sorted(ids, key=lambda i: i.encode("utf-8"))  # the same as UTF-8 bytes
    # UTF-16 code units put the surrogate pairs (0xD800.., 0xD83D..) before 0xFF21: a client
    # that sorts or checks order that way disagrees with this vector.
    assert sorted(ids, key=lambda i: i.encode("utf-16-be")) == [
        "\U00010000", "\U0001f600", "\uff21", "\ufffd"]


def test_proto3_json_as_sent_omits_zeros_and_writes_64_bit_integers_as_strings() -> None:
    sent = {v["name"]: v for _, v in ALL_VECTORS if "as the service sends it" in v["name"]}
    empty = sent["empty plan as the service sends it"]
    assert set(empty) == {"name", "planModel", "planHash"}
    assert empty["planHash"] == EMPTY_PLAN_HASH
    [plan] = [v for name, v in sent.items() if name.startswith("as the service sends it")]
    assert (plan["budget"], plan["used"]) == ("1500", "9")
    first = plan["spans"][0]
    assert "start" not in first["span"] and "weight" not in first and "tokens" not in first
    assert first["span"]["sourceVersionTx"] == "1800000000000000"


def test_empty_plan_hash() -> None:
    assert EMPTY_PLAN_HASH == "b3:272a6a0e4d57118a898c1ade3401cddff16bf0e0e2e7cbe59483978e37c82068"
    assert encode_plan(PLAN_MODEL, 0, 0, ()) == (
        b"\x00\x00\x00\x02v1" + b"\x00" * 24  # model, budget, used, span count
    )


def test_byte_layout_of_one_span() -> None:
    span = PlannedSpan(
        span=SpanRef("ab", -2, 3, 9),
        kind="code",
        span_class=SpanClass.CACHE,
        weight=1.5,  # 0x3FF8000000000000
        tokens=7,
        text="ignored",
    )
    expected = bytes.fromhex(
        "00000002" "7631"  # "v1"
        "0000000000000064"  # budget 100
        "0000000000000007"  # used 7
        "0000000000000001"  # one span
        "00000002" "6162"  # "ab"
        "fffffffffffffffe"  # tx -2 (two's complement)
        "0000000000000003"  # start
        "0000000000000009"  # end
        "00000004" "636f6465"  # "code"
        "02"  # cache
        "3ff8000000000000"  # weight bits
        "0000000000000007"  # tokens
    )
    assert encode_plan("v1", 100, 7, [span]) == expected
    assert plan_hash("v1", 100, 7, [span]) == "b3:" + blake3.blake3(expected).hexdigest()


def test_rendering_is_b3_and_64_lowercase_hex() -> None:
    h = plan_hash("v1", 1, 0, ())
    assert h.startswith("b3:")
    assert len(h) == 67
    assert h[3:] == h[3:].lower()
    int(h[3:], 16)


def test_text_is_not_hashed() -> None:
    def span(text: str) -> PlannedSpan:
        return PlannedSpan(
            span=SpanRef("s", 1, 0, 4),
            kind="body",
            span_class=SpanClass.TRUTH,
            weight=0.5,
            tokens=2,
            text=text,
        )

    assert plan_hash("v1", 10, 2, [span("")]) == plan_hash("v1", 10, 2, [span("quite different")])


def test_location_is_not_hashed() -> None:
    """A span's location (page, heading path, notebook cell) is outside plan hash v1: the
    same spans found anywhere make the same plan."""

    def span(location: Location) -> PlannedSpan:
        return PlannedSpan(span=SpanRef("handbook.pdf", 7, 0, 40), kind="paragraph",
                           span_class=SpanClass.TRUTH, weight=0.75, tokens=9,
                           location=location)

    nowhere = plan_hash("v1", 100, 9, [span(NOWHERE)])
    for where in (Location(page=2), Location(heading_path=("Varroa", "Monitoring")),
                  Location(page=3, heading_path=("Harvest",), cell_index=4)):
        assert encode_plan("v1", 100, 9, [span(where)]) == encode_plan("v1", 100, 9,
                                                                      [span(NOWHERE)])
        assert plan_hash("v1", 100, 9, [span(where)]) == nowhere


def test_the_vector_with_locations_hashes_as_the_plan_without_them() -> None:
    """The extra vector whose spans carry locations (as the service sends them) has the hash
    of the same plan with the locations taken out, so a verifier that reads the locations
    (Go and TypeScript parse them into their generated types) must still ignore them."""
    vector = next(v for v in load("plan_hash_v1_extra.jsonl") if "location" in v["name"])
    assert all("location" in s for s in vector["spans"])
    bare = {**vector, "spans": [{k: x for k, x in s.items() if k != "location"}
                                for s in vector["spans"]]}
    assert independent_hash(bare) == vector["planHash"]
    spans = core_spans(vector)
    assert [s.location.render() for s in spans] == [
        "p. 2 · Swarm control", "cell 3 · Finding", "The varroa mite › Oxalic acid in winter"]
    assert plan_hash(vector["planModel"], int(vector["budget"]), int(vector["used"]),
                     spans) == vector["planHash"]


def test_values_outside_their_fields_are_refused() -> None:
    def span(**kw: int) -> PlannedSpan:
        ref = {"tx": 0, "start": 0, "end": 1, **kw}
        return PlannedSpan(
            span=SpanRef("s", ref["tx"], ref["start"], ref["end"]),
            kind="body",
            span_class=SpanClass.TRUTH,
            weight=0.5,
            tokens=kw.get("tokens", 1),
        )

    for bad in (
        span(start=-1),
        span(end=2**64),
        span(tx=2**63),
        span(tx=-(2**63) - 1),
        span(tokens=-1),
    ):
        with pytest.raises(struct.error):
            encode_plan("v1", 10, 1, [bad])
    with pytest.raises(struct.error):
        encode_plan("v1", -1, 0, [])
