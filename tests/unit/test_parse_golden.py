"""The Markdown and plain-text reader returns exactly what it returned when the digests in
``tests/golden/parse_digests.jsonl`` were written (the demo corpus included), so its spans,
passages and therefore the demo's plans do not move.

A failure means the reader's output changed. If that is intended, regenerate with
``python tests/golden/gen_parse_digests.py`` and explain the change in the commit.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[2]
GOLDEN = ROOT / "tests" / "golden"


def _generator() -> ModuleType:
    path = GOLDEN / "gen_parse_digests.py"
    spec = importlib.util.spec_from_file_location("gen_parse_digests", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_reader_output_matches_committed_digests() -> None:
    expected = [
        json.loads(line)
        for line in (GOLDEN / "parse_digests.jsonl").read_text(encoding="utf-8").splitlines()
        if line.strip()
    ]
    got = [{"case": name, "digest": digest} for name, digest in _generator().cases()]
    assert [e["case"] for e in expected] == [g["case"] for g in got]
    assert sum(e["case"].startswith("wiki:") for e in expected) >= 300
    changed = [e["case"] for e, g in zip(expected, got, strict=True) if e != g]
    assert changed == [], f"{len(changed)} inputs parse differently, first: {changed[:5]}"
