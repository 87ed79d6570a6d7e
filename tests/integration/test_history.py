"""Transaction time never moves backwards, citations resolve, summaries count what was written.

Every test talks to a real server over gRPC, on an empty data directory of its own.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import error_details_pb2
from grpc_status import rpc_status

from planner_svc.api.planner.v1 import memory_pb2
from planner_svc.client.common import question_request
from planner_svc.clock import wall_clock_us
from planner_svc.settings import ServerSettings, TransportSettings
from planner_svc.store import Store
from tests.integration.conftest import Live, start

pytestmark = pytest.mark.integration

T0 = 1_780_000_000_000_000  # 2026-05-28, microseconds
T1 = 1_785_542_400_000_000  # 2026-08-01
INT64_MIN = -(2**63)
HOUR_US = 3_600_000_000


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Live]:
    server = start(ServerSettings(data_dir=tmp_path / "data",
                                  transport=TransportSettings(port=0, max_workers=4)))
    yield server
    server.channel.close()
    server.running.stop(0)


def _doc(source_id: str, text: str, **kw: object) -> memory_pb2.IngestSourcesRequest:
    return memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id=source_id, title=str(kw.pop("title", source_id)), media_type="text/markdown",
        text=text, **kw,  # type: ignore[arg-type]
    ))


def _ingest(
    live: Live, *docs: memory_pb2.IngestSourcesRequest
) -> memory_pb2.IngestSourcesResponse:
    return live.memory.IngestSources(iter(docs), timeout=60)


def test_a_proposed_version_tx_is_never_earlier_than_the_latest_recorded(empty: Live) -> None:
    first = _ingest(empty, _doc("notes/a", "# Alpha\n\nAlpha text.", version_tx=T1))
    assert [(s.source_id, s.version_tx, s.outcome) for s in first.sources] == [
        ("notes/a", T1, memory_pb2.INGEST_OUTCOME_CREATED)
    ]
    before = wall_clock_us()
    second = _ingest(
        empty,
        _doc("notes/b", "# Beta\n\nBackdated.", version_tx=T0),
        _doc("notes/c", "# Gamma\n\nSame time as the latest.", version_tx=T1),
        _doc("notes/d", "# Delta\n\nNo time proposed."),
        _doc("notes/e", "# Epsilon\n\nNo time proposed either."),
        _doc("notes/f", "# Zeta\n\nAt the very beginning of time.", version_tx=INT64_MIN),
        _doc("notes/g", "# Eta\n\nFrom the future.", version_tx=wall_clock_us() + HOUR_US),
    )
    assert (second.received, second.ingested, second.failed) == (6, 3, 3)
    reasons = {e.source_id: e.reason for e in second.errors}
    assert reasons["notes/b"] == (
        f"version_tx: {T0} is earlier than the latest transaction time {T1} the store has "
        "recorded; transaction time never moves backwards (a time known about the content "
        "belongs on the valid axis)"
    )
    assert reasons["notes/f"].startswith(f"version_tx: {INT64_MIN} is earlier than the latest")
    assert reasons["notes/g"].startswith("version_tx: ")
    assert "is in the future" in reasons["notes/g"]
    stamped = {s.source_id: s.version_tx for s in second.sources}
    assert stamped["notes/c"] == T1  # equal to the latest is allowed (one bulk load, one time)
    assert before <= stamped["notes/d"] < stamped["notes/e"]  # the clock: strictly increasing


def test_an_as_of_plan_never_changes_after_later_writes(empty: Live) -> None:
    _ingest(
        empty,
        _doc("notes/otter", "# Otters\n\nSea otters use stones to open shellfish.",
             version_tx=T1, valid_from=T0),
        _doc("notes/heron", "# Herons\n\nGrey herons hunt fish in shallow water.",
             version_tx=T1, valid_from=T0),
    )
    request = question_request("How do sea otters open shellfish?", budget_tokens=300,
                               at_valid_us=T1, at_tx_us=T1)
    before = empty.planner.Plan(request, timeout=30).plan
    assert any("stones" in s.text for s in before.spans)
    later = _ingest(
        empty,
        _doc("notes/otter", "# Otters\n\nSea otters crack shellfish on their chests.",
             valid_from=T0),  # replaced, at the clock
        _doc("notes/kelp", "# Kelp\n\nSea otters rest in kelp forests.", valid_from=T0),
        _doc("notes/backdated", "# Otters again\n\nSea otters, backdated.", version_tx=T1 - 1,
             valid_from=T0),
    )
    assert (later.ingested, later.replaced, later.failed) == (2, 1, 1)
    after = empty.planner.Plan(request, timeout=30).plan
    assert after.plan_hash == before.plan_hash
    assert [s.text for s in after.spans] == [s.text for s in before.spans]
    now = empty.planner.Plan(question_request("How do sea otters open shellfish?",
                                              budget_tokens=300), timeout=30).plan
    assert any("chests" in s.text for s in now.spans)


def test_a_refused_document_fails_no_other_document_or_stream(empty: Live) -> None:
    zebra = _ingest(empty, _doc("notes/zebra", "# Zebra\n\nZebras have stripes."))
    assert zebra.failed == 0
    mixed = _ingest(
        empty,
        _doc("notes/old", "# Old\n\nA Zebra seen long ago.", version_tx=T0),
        _doc("notes/new", "# New\n\nA Zebra seen today."),
    )
    assert (mixed.ingested, mixed.failed) == (1, 1)
    assert [e.source_id for e in mixed.errors] == ["notes/old"]
    for i in range(3):  # unrelated streams mentioning the same title go on working
        summary = _ingest(empty, _doc(f"notes/more-{i}", f"# More {i}\n\nAnother Zebra, {i}."))
        assert (summary.ingested, summary.failed) == (1, 0), summary.errors


def _edges_into(data: Path, dst: str) -> dict[str, int]:
    with Store.open(data) as store:
        return {
            e.src: e.tx_from_us
            for e in store.edges_as_of([dst], T1, 2**62, direction="in")
            if e.relation == "mentions"
        }


def test_edges_derived_at_ingest_take_the_time_of_the_write_that_derives_them(
    tmp_path: Path,
) -> None:
    data = tmp_path / "data"
    live = start(ServerSettings(data_dir=data, transport=TransportSettings(port=0, max_workers=4)))
    try:
        # A bulk load at one fixed time: the mention is found late (the title arrives after
        # the passage naming it) and still carries the load's time.
        _ingest(live, _doc("notes/visit", "# Visit\n\nWe met a Quokka on the island.",
                           version_tx=T1, valid_from=T1))
        _ingest(live, _doc("notes/quokka", "# Quokka\n\nA small marsupial.", title="Quokka",
                           version_tx=T1, valid_from=T1))
        later = _ingest(live, _doc("notes/photo", "# Photo\n\nA Quokka smiling.", valid_from=T1))
        photo_tx = later.sources[0].version_tx
    finally:
        live.channel.close()
        live.running.stop(0)
    assert _edges_into(data, "doc:notes/quokka") == {
        "psg:notes/visit:0": T1,
        "psg:notes/photo:0": photo_tx,
    }
    assert photo_tx > T1


def _violation(err: grpc.RpcError) -> tuple[str, str]:
    status = rpc_status.from_call(err)  # type: ignore[arg-type]
    assert status is not None
    for detail in status.details:
        if detail.Is(error_details_pb2.BadRequest.DESCRIPTOR):
            bad = error_details_pb2.BadRequest()
            detail.Unpack(bad)
            return bad.field_violations[0].field, bad.field_violations[0].description
    raise AssertionError("no BadRequest detail")


def test_put_node_refuses_provenance_a_plan_could_not_cite(empty: Live) -> None:
    text = "# Café\n\nThe café opens at nine."
    summary = _ingest(empty, _doc("notes/cafe", text, version_tx=T1))
    assert summary.ingested == 1
    size = len(text.encode())  # the canonical text is the document's text; "é" is bytes 5-6

    def put(source_version_tx: int, start: int, end: int) -> memory_pb2.PutNodeResponse:
        span = memory_pb2.SpanRefWrite(source_id="notes/cafe",
                                       source_version_tx=source_version_tx, start=start, end=end)
        node = memory_pb2.NodeWrite(node_id="api:hours", text="opening hours",
                                    provenance=[span])
        return empty.memory.PutNode(memory_pb2.PutNodeRequest(node=node), timeout=10)

    cases = [
        ((T1 + 5, 0, 4), "node.provenance[0].source_version_tx",
         f"source 'notes/cafe' has no version {T1 + 5}"),
        ((T1, 0, size + 1), "node.provenance[0].end",
         f"{size + 1} is past the end of the version's text ({size} bytes)"),
        ((T1, 6, 9), "node.provenance[0].start", "6 falls inside a multi-byte character"),
        ((T1, 2, 6), "node.provenance[0].end", "6 falls inside a multi-byte character"),
    ]
    for args, field, description in cases:
        with pytest.raises(grpc.RpcError) as info:
            put(*args)
        assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT  # type: ignore[attr-defined]
        assert _violation(info.value) == (field, description)
    written = put(T1, 2, 7)  # "Café"
    assert written.tx > T1


def test_the_summary_counts_every_replaced_version(empty: Live) -> None:
    ids = [f"notes/n{i}" for i in range(7)]
    first = _ingest(empty, *(_doc(i, f"# {i}\n\nFirst text of {i}.") for i in ids))
    assert (first.ingested, first.replaced) == (7, 0)
    second = _ingest(empty, *(_doc(i, f"# {i}\n\nSecond text of {i}.") for i in ids))
    assert (second.ingested, second.replaced, second.unchanged) == (7, 7, 0)
    assert {s.outcome for s in second.sources} == {memory_pb2.INGEST_OUTCOME_REPLACED}
    twice = _ingest(
        empty,
        _doc("notes/twice", "# Twice\n\nFirst version."),
        _doc("notes/twice", "# Twice\n\nSecond version."),
        _doc("notes/n0", "# notes/n0\n\nSecond text of notes/n0."),
    )
    assert (twice.ingested, twice.replaced, twice.unchanged) == (2, 1, 1)
    outcomes = [(s.source_id, s.outcome) for s in twice.sources]
    assert outcomes == [
        ("notes/twice", memory_pb2.INGEST_OUTCOME_CREATED),
        ("notes/twice", memory_pb2.INGEST_OUTCOME_REPLACED),
        ("notes/n0", memory_pb2.INGEST_OUTCOME_UNCHANGED),
    ]
    assert twice.sources[0].version_tx < twice.sources[1].version_tx
