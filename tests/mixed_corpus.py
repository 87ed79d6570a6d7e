"""A small mixed corpus: one subject (keeping honey bees) in every format the readers take.

Written on demand (nothing here is committed data): the tests ingest it, ``make demo`` plans
over it in its second act, and the README shows one of those plans. The text was written for
this project and is under the project's licence.

Files (:func:`write_mixed_corpus`):

- ``handbook.pdf``: three pages, one section a page (hive basics, swarm control, the honey
  harvest), a running footer on every page;
- ``varroa.html``: a web page with navigation, banner, cookie notice, sidebar and footer
  around three sections on the varroa mite;
- ``inspections.docx``: an inspection record with a page header and footer, headings and a
  table;
- ``mite-counts.ipynb``: a notebook with markdown and code cells and outputs;
- ``meeting-notes.md`` and ``README.txt``: Markdown and plain text;
- ``broken.pdf`` (a PDF cut short), ``locked.pdf`` (needs a password) and ``hive.png`` (an
  image): files no reader can read, which ingestion reports and skips.
"""

from __future__ import annotations

import base64
from pathlib import Path

from tests.docgen import (
    Block,
    Code,
    Heading,
    Para,
    PdfWriter,
    Table,
    docx_document,
    html_document,
    markdown_document,
    notebook_document,
)

HANDBOOK: tuple[tuple[Heading, tuple[Para, ...]], ...] = (
    (
        Heading(1, "Hive basics"),
        (
            Para((
                "A Langstroth hive stacks boxes of removable frames above a floor and below a "
                "crown board and roof.",
                "The brood box holds the queen's eggs and larvae; the supers above it hold "
                "the honey the colony stores.",
            )),
            Para((
                "Bees leave a gap of about eight millimetres between combs, the bee space, "
                "and fill a smaller gap with propolis.",
            )),
        ),
    ),
    (
        Heading(1, "Swarm control"),
        (
            Para((
                "A colony prepares to swarm in late spring by raising queen cells along the "
                "bottom edges of the brood frames.",
                "Inspect every seven to nine days from April to July so that no queen cell "
                "hatches unseen.",
            )),
            Para((
                "When sealed queen cells are found, make an artificial swarm: move the old "
                "queen with one frame of brood to a new box on the old site, and leave the "
                "flying bees to return to her.",
                "The parent colony raises one new queen from the best remaining cell.",
            )),
        ),
    ),
    (
        Heading(1, "Honey harvest"),
        (
            Para((
                "Take only capped frames, whose honey holds less than eighteen per cent "
                "water; uncapped honey can ferment in the jar.",
                "Leave the colony at least fifteen kilograms of stores for the winter.",
            )),
        ),
    ),
)
"""The handbook's sections, one page each."""

VARROA: list[Block] = [
    Heading(1, "The varroa mite"),
    Para((
        "Varroa destructor feeds on developing bees inside sealed brood cells and spreads "
        "deformed wing virus through the colony.",
    )),
    Heading(2, "Monitoring"),
    Para((
        "Count mites with a sugar roll: shake about three hundred bees from a brood frame "
        "into a jar with icing sugar and count the mites that fall through the mesh lid.",
        "More than three mites per hundred bees in summer calls for treatment.",
    )),
    Heading(2, "Oxalic acid in winter"),
    Para((
        "Oxalic acid kills only the mites riding on adult bees, so it works best when the "
        "colony has no sealed brood, in the broodless weeks of midwinter.",
        "Trickle the solution between the frames once; repeated doses harm the bees.",
    )),
    Heading(2, "Formic acid in summer"),
    Para((
        "Formic acid vapour reaches mites inside sealed brood cells, so it can be used while "
        "the colony is rearing brood.",
        "Apply it only when day temperatures stay between ten and twenty-nine degrees "
        "Celsius.",
    )),
]
"""The web page's content (inside ``<main>``)."""

INSPECTIONS: list[Block] = [
    Heading(1, "Inspection record"),
    Para(("Apiary at the allotment gardens, inspected by the club's training group.",)),
    Heading(2, "May inspections"),
    Table((
        ("Hive", "Date", "Queen seen", "Frames of brood"),
        ("Hive 1", "3 May", "yes", "6"),
        ("Hive 2", "3 May", "no, eggs present", "4"),
        ("Hive 3", "10 May", "yes, queen cells found", "7"),
    )),
    Heading(2, "Actions"),
    Para(("Hive 3 was split into an artificial swarm on 10 May after sealed queen cells "
          "were found.",)),
]
"""The inspection record."""

MITE_COUNTS: list[Block] = [
    Heading(1, "Mite count analysis"),
    Para(("Sugar roll counts from the three hives, converted to mites per hundred bees.",)),
    Code("counts = {'Hive 1': 4, 'Hive 2': 11, 'Hive 3': 6}\n"
         "per_hundred = {h: n / 3 for h, n in counts.items()}\nprint(per_hundred)"),
    Heading(2, "Finding"),
    Para(("Hive 2 is above the treatment threshold of three mites per hundred bees.",)),
]
"""The notebook's cells."""

MEETING_NOTES: list[Block] = [
    Heading(1, "Club meeting notes"),
    Para(("The club agreed to buy a second honey extractor for members to borrow.",)),
    Heading(2, "Next meeting"),
    Para(("The next meeting covers preparing colonies for winter.",)),
]
"""The Markdown file."""

README = "Beekeeping club shared folder.\n\nEvery file here is a club document.\n"
"""The plain text file."""

PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
"""A one-pixel PNG image."""


def handbook_pdf() -> bytes:
    """The handbook: one section a page, a running footer on each."""
    writer = PdfWriter(width_pt=360, lines_per_page=16, footer=True, fonts=("sans",))
    for page, (heading, paragraphs) in enumerate(HANDBOOK):
        if page:
            writer.break_page()
        writer.heading(heading)
        for paragraph in paragraphs:
            writer.paragraph(paragraph)
    return writer.output()


def locked_pdf() -> bytes:
    """A PDF that needs a user password to open."""
    from fpdf import FPDF

    pdf = FPDF()
    pdf.add_page()
    pdf.set_font("helvetica", size=12)
    pdf.cell(text="Club bank account details.")
    pdf.set_encryption(owner_password="owner", user_password="user")
    return bytes(pdf.output())


def mixed_files() -> dict[str, bytes]:
    """File name -> bytes of every file of the corpus (module docstring)."""
    handbook = handbook_pdf()
    return {
        "handbook.pdf": handbook,
        "varroa.html": html_document(VARROA, title="Varroa mite | Beekeeping club"),
        "inspections.docx": docx_document(INSPECTIONS),
        "mite-counts.ipynb": notebook_document(MITE_COUNTS),
        "meeting-notes.md": markdown_document(MEETING_NOTES),
        "README.txt": README.encode("utf-8"),
        "broken.pdf": handbook[: len(handbook) // 3],
        "locked.pdf": locked_pdf(),
        "hive.png": PNG,
    }


def write_mixed_corpus(directory: Path) -> list[Path]:
    """Write the corpus into ``directory`` (created when missing); returns the paths written,
    sorted."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, data in mixed_files().items():
        path = directory / name
        path.write_bytes(data)
        paths.append(path)
    return sorted(paths)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.mixed_corpus DIR``: write the corpus into DIR."""
    import argparse

    parser = argparse.ArgumentParser(description="Write the mixed-format test corpus.")
    parser.add_argument("directory", type=Path)
    args = parser.parse_args(argv)
    for path in write_mixed_corpus(args.directory):
        print(path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
