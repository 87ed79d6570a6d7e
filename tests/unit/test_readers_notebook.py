"""Notebook reader: markdown cells through the Markdown reader, code cells as code, outputs
never; exact spans with cell indexes and heading paths."""

from __future__ import annotations

import json

import pytest

from planner_svc.ingest.readers import ReaderError
from planner_svc.ingest.readers.notebook import read_notebook


def _notebook(cells: list[dict[str, object]], **extra: object) -> bytes:
    return json.dumps({"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": cells,
                       **extra}).encode()  # fmt: skip


CELLS: list[dict[str, object]] = [
    {"cell_type": "markdown", "metadata": {}, "source": ["# Analysis\n", "\n", "Intro text."]},
    {"cell_type": "code", "metadata": {}, "execution_count": 1, "source": "import math\nx = 1\n",
     "outputs": [{"output_type": "stream", "name": "stdout", "text": "printed output\n"},
                 {"output_type": "display_data", "metadata": {},
                  "data": {"text/html": "<b>html output</b>", "image/png": "iVBORw0KGgo="}}]},
    {"cell_type": "markdown", "metadata": {}, "source": ""},
    {"cell_type": "markdown", "metadata": {},
     "source": "## Results\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```\nfenced\n```"},
    {"cell_type": "raw", "metadata": {}, "source": "raw text"},
    {"cell_type": "code", "metadata": {}, "execution_count": None, "source": [],
     "outputs": []},
]  # fmt: skip


def test_cells_exact_text_spans_and_locations() -> None:
    doc = read_notebook(_notebook(CELLS))
    assert doc.text == (
        "# Analysis\n\nIntro text.\n\nimport math\nx = 1\n\n## Results\n\n| a | b |\n|---|---|\n"
        "| 1 | 2 |\n\n```\nfenced\n```\n\nraw text"
    )
    data = doc.text.encode()
    got = [
        (s.start, s.end, s.kind, data[s.start : s.end].decode(), s.location.render())
        for s in doc.spans
    ]
    assert got == [
        (2, 10, "heading", "Analysis", "cell 0 \u00b7 Analysis"),
        (12, 23, "paragraph", "Intro text.", "cell 0 \u00b7 Analysis"),
        (25, 42, "code", "import math\nx = 1", "cell 1 \u00b7 Analysis"),
        (47, 54, "heading", "Results", "cell 3 \u00b7 Analysis \u203a Results"),
        (58, 59, "cell", "a", "cell 3 \u00b7 Analysis \u203a Results"),
        (62, 63, "cell", "b", "cell 3 \u00b7 Analysis \u203a Results"),
        (78, 79, "cell", "1", "cell 3 \u00b7 Analysis \u203a Results"),
        (82, 83, "cell", "2", "cell 3 \u00b7 Analysis \u203a Results"),
        (91, 97, "code", "fenced", "cell 3 \u00b7 Analysis \u203a Results"),
        (103, 111, "paragraph", "raw text", "cell 4 \u00b7 Analysis \u203a Results"),
    ]
    assert [s.location.cell_index for s in doc.spans] == [0, 0, 1, 3, 3, 3, 3, 3, 3, 4]
    for output in ("printed output", "html output", "iVBOR"):
        assert output not in doc.text
    assert doc.title == "Analysis" and doc.media_type == "application/x-ipynb+json"


def test_heading_does_not_merge_across_cells() -> None:
    cells = [
        {"cell_type": "markdown", "metadata": {}, "source": "# Title"},
        {"cell_type": "markdown", "metadata": {}, "source": "Short text."},
        {"cell_type": "markdown", "metadata": {}, "source": "## Next\n\nMerged text."},
    ]
    doc = read_notebook(_notebook(cells), min_passage_bytes=200)
    assert [(p.text, p.location.cell_index) for p in doc.passages] == [
        ("Title", 0),
        ("Short text.", 1),
        ("Next\n\nMerged text.", 2),
    ]


def test_metadata_title_when_no_heading() -> None:
    doc = read_notebook(_notebook([{"cell_type": "code", "source": "x"}],
                                  metadata={"title": "Nb  title"}))  # fmt: skip
    assert doc.title == "Nb title"


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"{not json", "damaged notebook: not JSON"),
        (b"[1, 2]", "not a notebook"),
        (json.dumps({"nbformat": 3, "worksheets": [], "cells": []}).encode(),
         "unsupported notebook format 3 (nbformat 4 is read)"),
        (json.dumps({"nbformat": 4, "cells": {"a": 1}}).encode(),
         "damaged notebook: cells is not a list of objects"),
        (json.dumps({"nbformat": 4, "cells": [{"cell_type": "code", "source": 5}]}).encode(),
         "damaged notebook: cell 0: source is neither a string nor a list of strings"),
        (b'{"nbformat": 4, "cells": [], "x": "\xff"}', "not valid UTF-8 at byte 35"),
    ],
)  # fmt: skip
def test_unreadable_notebooks(data: bytes, reason: str) -> None:
    with pytest.raises(ReaderError) as err:
        read_notebook(data)
    assert err.value.reason.startswith(reason)
    assert err.value.field == "text"
