"""Documents of every format over IngestSources (bytes with a media type, or sniffed), plans
whose spans name a PDF page and an HTML section, and concurrent streams that take turns inside
PDFium."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.protobuf import json_format

from planner_svc.api.planner.v1 import memory_pb2
from planner_svc.client.common import location_text, question_request, render_plan
from planner_svc.settings import ServerSettings, TransportSettings
from planner_svc.store import Store
from tests.docgen import Heading, Para, PdfWriter, html_document
from tests.integration.conftest import Live, start
from tests.mixed_corpus import mixed_files
from tests.pdfium_watch import watch_pdfium

pytestmark = pytest.mark.integration

TX = 1_790_000_000_000_000
QUESTION = ("How do I stop a colony from swarming, and when should varroa be treated with "
            "oxalic acid?")


@pytest.fixture
def empty(tmp_path: Path) -> Iterator[Live]:
    server = start(ServerSettings(data_dir=tmp_path / "data",
                                  transport=TransportSettings(port=0, max_workers=8)))
    yield server
    server.channel.close()
    server.running.stop(0)


def _content(source_id: str, data: bytes, media_type: str = "",
             tx: int = TX) -> memory_pb2.IngestSourcesRequest:
    return memory_pb2.IngestSourcesRequest(document=memory_pb2.SourceDocument(
        source_id=source_id, media_type=media_type, content=data, version_tx=tx))


def test_mixed_corpus_plan_cites_a_pdf_page_and_an_html_section(
    empty: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    files = mixed_files()
    watch = watch_pdfium(monkeypatch, window_s=0.0)
    write_lock = empty.running.services.ingest._write_lock
    watch.on_open = write_lock.locked
    summary = empty.memory.IngestSources(
        iter([_content(name, data) for name, data in sorted(files.items())]), timeout=120)
    assert (summary.received, summary.ingested, summary.failed) == (9, 6, 3)
    # the stream's PDFs were parsed before its batch took the write lock
    assert watch.seen == [False, False, False]
    assert {e.source_id: e.reason for e in summary.errors} == {
        "broken.pdf": summary.errors[0].reason,
        "hive.png": "media_type: unsupported media type image/png",
        "locked.pdf": "text: encrypted PDF: a password is required to open it",
    }
    assert summary.errors[0].reason.startswith("text: damaged PDF: ")
    formats = {f.format: (f.read, f.skipped, f.failed,
                          {r.reason: r.documents for r in f.reasons})
               for f in summary.formats}
    assert formats == {
        "DOCX": (1, 0, 0, {}), "HTML": (1, 0, 0, {}), "Markdown": (1, 0, 0, {}),
        "notebook": (1, 0, 0, {}), "text": (1, 0, 0, {}),
        "PDF": (1, 2, 0, {"text: damaged PDF": 1, "text: encrypted PDF": 1}),
        "image/png": (0, 1, 0, {"media_type: unsupported media type image/png": 1}),
    }
    assert [f.format for f in summary.formats] == sorted(formats)

    plan = empty.planner.Plan(question_request(QUESTION, budget_tokens=200),
                              timeout=30).plan
    cited = {(s.span.source_id, location_text(s)) for s in plan.spans}
    assert ("handbook.pdf", "p. 2 \u00b7 Swarm control") in cited
    assert ("varroa.html", "The varroa mite \u203a Oxalic acid in winter") in cited
    pdf = next(s for s in plan.spans if s.span.source_id == "handbook.pdf")
    assert "queen cells" in pdf.text
    assert json_format.MessageToDict(pdf)["location"] == {"page": 2,
                                                          "headingPath": ["Swarm control"]}
    table = render_plan(plan, width=160)
    assert "p. 2 \u00b7 Swarm control" in table
    assert "The varroa mite \u203a Oxalic acid in winter" in table
    # every span of a format with pages, headings or cells says where it is
    assert all(s.HasField("location") for s in plan.spans if s.span.source_id != "README.txt")


def test_concurrent_streams_take_turns_inside_pdfium(
    empty: Live, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three streams send PDFs at once; each stream's documents are parsed in its own thread,
    outside the write lock, and PDFium (not thread-safe) still sees one caller at a time.
    Every PDF gets its own pages."""
    streams = 3
    per_stream = 4
    watch = watch_pdfium(monkeypatch)
    requests: list[list[memory_pb2.IngestSourcesRequest]] = []
    for s in range(streams):
        batch = []
        for d in range(per_stream):
            writer = PdfWriter(width_pt=260, lines_per_page=4, fonts=("sans",))
            writer.heading(Heading(1, f"Stream {s} report {d}"))
            writer.break_page()
            writer.paragraph(Para((f"Result {s}-{d} sits on page two.",)))
            batch.append(_content(f"s{s}/r{d}.pdf", writer.output(), "application/pdf"))
        batch.append(_content(f"s{s}/page.html", html_document(
            [Heading(1, f"Stream {s}"), Para((f"Page of stream {s}.",))])))
        requests.append(batch)
    start_together = threading.Barrier(streams)
    summaries: dict[int, memory_pb2.IngestSourcesResponse] = {}

    def send(s: int) -> None:
        start_together.wait(timeout=10)
        summaries[s] = empty.memory.IngestSources(iter(requests[s]), timeout=120)

    threads = [threading.Thread(target=send, args=(s,)) for s in range(streams)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=180)
    assert sorted(summaries) == list(range(streams))
    for summary in summaries.values():
        assert (summary.received, summary.ingested, summary.failed) == (per_stream + 1,
                                                                       per_stream + 1, 0)
    assert (watch.opened, watch.most, watch.inside) == (streams * per_stream, 1, 0)
    with Store.open(empty.running.services.settings.data_dir) as store:
        for s in range(streams):
            for d in range(per_stream):
                rows = store.locations_of_version(f"s{s}/r{d}.pdf", TX)
                assert [(kind, where.page, where.heading_path) for _a, _b, kind, where in rows
                        ] == [("heading", 1, (f"Stream {s} report {d}",)),
                              ("paragraph", 2, (f"Stream {s} report {d}",))]
