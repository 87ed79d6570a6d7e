"""Ingestion: documents -> source versions, ledger rows, nodes, edges and vectors.

For each document with new text:

1. a new source version, stamped by the store
   (:meth:`~planner_svc.ingest.ports.WriteTransactions.stamped`): at ``version_tx_us`` when the
   document proposes one (no earlier than the latest transaction time the store has
   recorded, never in the future), else at the store's clock; a document whose canonical text
   equals the latest version is counted ``unchanged`` and nothing else is written;
2. one ledger row per structural span, with its kind and its location (page, heading path,
   notebook cell): the document is read by :func:`planner_svc.ingest.reading.read_source`
   (Markdown and text as always, HTML, PDF, DOCX and notebooks by their readers);
3. a document node ``doc:<source_id>`` (labels ``document``; properties = the document's plus
   ``title`` and ``source_id``; text = title and first non-heading passage; provenance = the
   spans of the first passage, the document's lead: reaching a document by its title or by a
   title mention yields its lead, not every passage at once, which would spend a small budget on
   one source's least relevant paragraphs; other passages are reached by their own recall or over
   ``contains`` edges) and one node per passage ``psg:<source_id>:<ordinal>`` (labels
   ``passage`` and its kind; the same properties; text = the passage; provenance = its spans).
   Passages of the previous version beyond the new count are retired;
4. edges, with the weights of :data:`RELATION_WEIGHTS`: document -> passage ``contains``,
   passage -> document ``part_of``, heading -> each passage of its section ``heads``, passage ->
   next passage ``next``, passage -> ``doc:<other source>`` ``mentions`` when the passage names
   that document's title (:mod:`planner_svc.ingest.mentions`). Edges of the previous version
   that no longer hold are closed;
5. one vector per passage node (the embedder's row for the title and the passage text; an
   unchanged passage of a re-versioned source reuses its previous vector).

Steps 1-5 of one document run in one savepoint and a chunk of documents commits in one
transaction, so a crash never leaves half a document and a bad document never blocks the
others. The latest versions of a group of inputs' sources are read in one query before the
documents are prepared, and a chunk announces what it will write
(:meth:`~planner_svc.ingest.ports.IngestStore.expect_writes`), so a store across a network
pays a few round trips a chunk rather than several a document.
Mentions of a title that arrives after the mentioning passage are resolved at the end of the
call (:mod:`planner_svc.ingest.late_mentions`): by FTS5 phrase lookup of the new titles when
there are few, else by one scan of all current passages. (A crash between the documents'
commits and that pass loses only those late mention edges.)

Times: every row a document's write derives (its version, ledger rows, nodes, structural and
mention edges, the closing of what it replaces) carries that write's transaction time, so
history is never rewritten; the late-mention pass writes at the latest time the call wrote
(else at the clock). The same corpus loaded with fixed version times into an empty store
therefore yields the same graph everywhere. Valid intervals start at ``valid_from_us`` (else
``now_us``) and are open.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import ConfigError, InvalidRequest, echo
from planner_svc.core.model import SpanRef
from planner_svc.embed.base import Embedder
from planner_svc.ingest.late_mentions import resolve_late_mentions
from planner_svc.ingest.mentions import KnownTitles, TitleMatcher
from planner_svc.ingest.model import (
    DEFAULT_BATCH_SIZE,
    DOCUMENT_LABEL,
    EMBEDDER_META_KEY,
    PASSAGE_LABEL,
    RELATION_WEIGHTS,
    DocumentIn,
    IngestReport,
    RejectedDocument,
    SourceOutcome,
    doc_node_id,
    passage_node_id,
)
from planner_svc.ingest.parse import (
    DEFAULT_MAX_PASSAGE_BYTES,
    DEFAULT_MIN_PASSAGE_BYTES,
    ParsedDocument,
)
from planner_svc.ingest.ports import IngestStore
from planner_svc.ingest.readers import FORMAT_NAMES, ReaderError
from planner_svc.ingest.reading import ReadAhead, format_label, read_ahead, rejected_format
from planner_svc.store.records import EdgeWrite, NodeVersion, NodeWrite, check_properties
from planner_svc.store.text import canonicalize, check_id, check_time

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "EMBEDDER_META_KEY",
    "RELATION_WEIGHTS",
    "DocumentIn",
    "IngestReport",
    "RejectedDocument",
    "SourceOutcome",
    "doc_node_id",
    "ingest_documents",
    "passage_node_id",
]

_Item = DocumentIn | ReadAhead | RejectedDocument
"""One input of :func:`ingest_documents`."""

GROUP_MAX_INPUT_BYTES = 64 * 1024 * 1024
"""Input bytes (:func:`_input_bytes`) of a group of inputs whose sources are looked up at once
(:func:`_groups`) at most, 64 MiB, unless one input alone holds more (a group of one): a group
is held in memory until its last input is prepared, so without this cap ``batch_size`` large
files (``planner-svc ingest`` reads each file whole) would be held at once. Groups of typical
documents (a few KiB to a few MiB) are still ``batch_size`` long, one lookup each."""


@dataclass(frozen=True, slots=True, kw_only=True)
class _Prepared:
    source_id: str
    position: int
    title: str
    media_type: str
    parsed: ParsedDocument
    proposed_tx_us: int | None
    valid_from_us: int
    properties: dict[str, str]
    embed_texts: tuple[str, ...]
    previous: Mapping[str, NodeVersion]
    previous_vectors: Mapping[int, npt.NDArray[np.float32]]


def _embed_text(title: str, text: str) -> str:
    return text if text == title else f"{title}\n{text}"


def _prepare(
    store: IngestStore,
    doc: DocumentIn,
    ahead: ReadAhead | None,
    position: int,
    now_us: int,
    max_passage_bytes: int,
    min_passage_bytes: int,
    reuse_vectors: bool,
    looked_up: Mapping[str, tuple[int, str] | None],
) -> _Prepared | tuple[SourceOutcome, str]:
    """Validate and read one document (unless read ahead with the same limits); its
    unchanged outcome (and format) when its text is the latest. ``looked_up`` holds the latest
    version and text of sources read beforehand (None: no version); others are read here."""
    if ahead is None or ahead.limits != (max_passage_bytes, min_passage_bytes):
        ahead = read_ahead(doc, max_passage_bytes=max_passage_bytes,
                           min_passage_bytes=min_passage_bytes)
    if ahead.error is not None:
        raise ahead.error
    assert ahead.read is not None
    source_id = check_id(doc.source_id, field="source_id")
    parsed, media_type = ahead.read.parsed, ahead.read.media_type
    if not parsed.text.strip():
        raise InvalidRequest("text", "is empty (no non-whitespace character)")
    proposed = None
    if doc.version_tx_us is not None:
        proposed = check_time(doc.version_tx_us, field="version_tx")
        if proposed > now_us:
            # A version in the future would be invisible to plans "as of now" and would refuse
            # every later version of the source until then.
            raise InvalidRequest(
                "version_tx", f"{proposed} is in the future (now {now_us}); it must be <= now"
            )
    valid_from = check_time(
        doc.valid_from_us if doc.valid_from_us is not None else now_us, field="valid_from"
    )
    properties = check_properties(doc.properties)
    if not isinstance(doc.title, str):
        raise InvalidRequest("title", f"expected a string, got {echo(doc.title)}")
    title = canonicalize(" ".join(doc.title.split())) or parsed.title or source_id
    if source_id in looked_up:
        found = looked_up[source_id]
        latest, latest_text = (None, None) if found is None else found
    else:
        latest = store.latest_version(source_id)
        latest_text = None if latest is None else store.source_text(source_id, latest)
    previous: Mapping[str, NodeVersion] = {}
    previous_vectors: Mapping[int, npt.NDArray[np.float32]] = {}
    if latest is not None:
        if latest_text == parsed.text:
            return SourceOutcome(source_id, latest, "unchanged"), _name(parsed.media_type)
        if proposed is not None and proposed <= latest:
            raise InvalidRequest(
                "version_tx",
                f"{proposed} is not later than the latest version {latest} of {echo(source_id)}",
            )
        if reuse_vectors:
            ids = [passage_node_id(source_id, p.ordinal) for p in parsed.passages]
            previous = store.current_nodes(ids)
            previous_vectors = store.get_vectors(v.version_id for v in previous.values())
    properties.update({"title": title, "source_id": source_id})
    embed_texts = tuple(_embed_text(title, p.text) for p in parsed.passages)
    return _Prepared(
        source_id=source_id,
        position=position,
        title=title,
        media_type=media_type,
        parsed=parsed,
        proposed_tx_us=proposed,
        valid_from_us=valid_from,
        properties=properties,
        embed_texts=embed_texts,
        previous=previous,
        previous_vectors=previous_vectors,
    )


def _passage_prefix(source_id: str) -> str:
    """What every passage node id of the source starts with (then its ordinal)."""
    return passage_node_id(source_id, 0)[:-1]


def _look_up(store: IngestStore, items: Sequence[_Item]) -> dict[str, tuple[int, str] | None]:
    """The latest version and text of the sources of ``items`` (None: no version), in one
    query for the group rather than one or two per document (a round trip each to a shared
    store). Malformed ids are left out: :func:`_prepare` refuses them."""
    ids: set[str] = set()
    for item in items:
        doc = item.doc if isinstance(item, ReadAhead) else item
        if isinstance(doc, RejectedDocument):
            continue
        try:
            ids.add(check_id(doc.source_id, field="source_id"))
        except InvalidRequest:
            continue
    found = store.latest_texts(ids)
    return {sid: found.get(sid) for sid in ids}


def _input_bytes(item: _Item) -> int:
    """What an input holds: the length of its ``content`` plus that of its ``text`` (bytes,
    or characters of a string: at least one byte each), 0 for a rejected document."""
    doc = item.doc if isinstance(item, ReadAhead) else item
    if isinstance(doc, RejectedDocument):
        return 0
    text = doc.text if isinstance(doc.text, (str, bytes)) else ""
    content = doc.content if isinstance(doc.content, bytes) else b""
    return len(text) + len(content)


def _groups(items: Iterable[_Item], size: int, max_bytes: int) -> Iterator[list[_Item]]:
    """``items`` in lists of up to ``size`` inputs holding up to ``max_bytes`` input bytes
    (:func:`_input_bytes`; an input holding more alone is a list of one), in order, read
    lazily: a list is yielded as soon as it is full or the next input would not fit in it."""
    group: list[_Item] = []
    held = 0
    for item in items:
        weight = _input_bytes(item)
        if group and held + weight > max_bytes:
            yield group
            group, held = [], 0
        group.append(item)
        held += weight
        if len(group) >= size:
            yield group
            group, held = [], 0
    if group:
        yield group


def _name(media_type: str) -> str:
    return FORMAT_NAMES.get(media_type, media_type)


def _format(p: _Prepared) -> str:
    return _name(p.parsed.media_type)


class _Run:
    """State of one ingest call."""

    def __init__(
        self, store: IngestStore, embedder: Embedder | None, report: IngestReport, now_us: int,
        titles: KnownTitles | None,
    ) -> None:
        self.store = store
        self.embedder = embedder
        self.report = report
        self.now_us = now_us
        if titles is not None:
            self.matcher = titles.checkout(store)
        else:
            self.matcher = TitleMatcher()
            for source_id, title, _latest in store.iter_sources():
                self.matcher.add(source_id, title)
        self.new_titles: dict[str, str] = {}
        # the latest version and text of sources read ahead for a group of inputs; a source
        # leaves it when a chunk writes it
        self.looked_up: dict[str, tuple[int, str] | None] = {}
        self.uncommitted_titles = False  # a refused document's title is in the matcher
        self.written_tx: int | None = None  # latest transaction time this call wrote at
        # (input position, ...): sorted into the report at the end, so it keeps input order
        self.outcomes: list[tuple[int, SourceOutcome]] = []
        self.errors: list[tuple[int, tuple[str, str]]] = []

    def look_up(self, group: list[_Item]) -> list[_Item]:
        """Read the latest versions of a group of inputs' sources at once; the group."""
        self.looked_up = _look_up(self.store, group)
        return group

    # ---------------------------------------------------------------- one chunk

    def flush(self, chunk: list[_Prepared]) -> None:
        if not chunk:
            return
        for p in chunk:
            self.looked_up.pop(p.source_id, None)
        fresh: dict[str, bool] = {}
        for p in chunk:
            fresh[p.source_id] = self.matcher.add(p.source_id, p.title)
        vectors = self._embed(chunk)
        written: list[_Prepared] = []
        counts = IngestReport()
        with self.store.transaction():  # one commit per chunk; a savepoint per document
            self.store.expect_writes(
                source_ids=[p.source_id for p in chunk],
                node_ids=[doc_node_id(p.source_id) for p in chunk],
                node_prefixes=[_passage_prefix(p.source_id) for p in chunk],
            )
            for p, vecs in zip(chunk, vectors, strict=True):
                try:
                    self._write(p, vecs, counts)
                except InvalidRequest as exc:
                    reason = f"{exc.field}: {exc.reason}"
                    self.errors.append((p.position, (p.source_id, reason)))
                    self.report.count_refused(_format(p), reason, skipped=False)
                    self.uncommitted_titles = True
                    continue
                self.report.count_read(_format(p))
                written.append(p)
        self.report.merge(counts)
        for p in written:
            if fresh[p.source_id]:
                self.new_titles[p.source_id] = p.title

    def _embed(self, chunk: list[_Prepared]) -> list[list[npt.NDArray[np.float32] | None]]:
        out: list[list[npt.NDArray[np.float32] | None]] = []
        texts: list[str] = []
        slots: list[tuple[int, int]] = []
        for i, p in enumerate(chunk):
            row: list[npt.NDArray[np.float32] | None] = [None] * len(p.embed_texts)
            if self.embedder is not None:
                for j, text in enumerate(p.embed_texts):
                    old = p.previous.get(passage_node_id(p.source_id, j))
                    reused = None
                    if old is not None and old.text == p.parsed.passages[j].text:
                        reused = p.previous_vectors.get(old.version_id)
                    if reused is not None:
                        row[j] = reused
                    else:
                        texts.append(text)
                        slots.append((i, j))
            out.append(row)
        if texts and self.embedder is not None:
            matrix = self.embedder.embed(texts)
            if matrix.shape != (len(texts), self.embedder.dim):
                raise ConfigError(
                    "embedder",
                    f"returned shape {matrix.shape}, expected {(len(texts), self.embedder.dim)}",
                )
            for (i, j), vec in zip(slots, matrix, strict=True):
                out[i][j] = np.ascontiguousarray(vec, dtype=np.float32)
        return out

    def _write(
        self,
        p: _Prepared,
        vectors: Sequence[npt.NDArray[np.float32] | None],
        counts: IngestReport,
    ) -> None:
        store = self.store
        sid = p.source_id
        with store.stamped(p.proposed_tx_us, now_us=self.now_us) as tx:
            previous = store.latest_version(sid)
            version_tx, created = store.put_source_version(
                sid, p.parsed.text, title=p.title, media_type=p.media_type, tx_us=tx
            )
            if not created:  # written by someone else since _prepare
                counts.unchanged += 1
                self.outcomes.append((p.position, SourceOutcome(sid, version_tx, "unchanged")))
                return
            spans = store.add_spans(
                sid, tx, [(s.start, s.end, s.kind, s.location) for s in p.parsed.spans]
            )
            node_writes, psg_ids = self._node_writes(p, tx)
            results = store.write_nodes(node_writes, tx_us=tx)
            new_ids = set(psg_ids)
            prefix = _passage_prefix(sid)
            stale_psg = [
                nid
                for nid in store.current_node_ids(prefix)
                if nid[len(prefix) :].isdigit() and nid not in new_ids
            ]
            store.retire_nodes(stale_psg, tx_us=tx)
            stored_vectors = store.put_vectors(
                (res.version_id, vec)
                for res, vec in zip(results[1:], vectors, strict=True)
                if vec is not None and res.created
            )
            edges = self._edge_writes(p, psg_ids)
            srcs = [doc_node_id(sid), *psg_ids, *stale_psg]
            wanted = {w.key for w in edges}
            stale = [e.key for e in store.current_out_edges(srcs) if e.key not in wanted]
            store.retire_edges(stale, tx_us=tx)
            created_edges = store.put_edges(edges, tx_us=tx)
        self.written_tx = tx if self.written_tx is None else max(self.written_tx, tx)
        counts.ingested += 1
        outcome = "created" if previous is None else "replaced"
        if previous is not None:
            counts.replaced += 1
        self.outcomes.append((p.position, SourceOutcome(sid, tx, outcome)))
        counts.spans += spans
        counts.nodes += sum(1 for r in results if r.created)
        counts.edges += created_edges
        counts.vectors += stored_vectors

    def _node_writes(self, p: _Prepared, tx: int) -> tuple[list[NodeWrite], list[str]]:
        sid = p.source_id
        refs = [
            tuple(SpanRef(sid, tx, s.start, s.end) for s in psg.spans) for psg in p.parsed.passages
        ]
        lead = next((psg.text for psg in p.parsed.passages if psg.kind != "heading"), "")
        doc_text = f"{p.title}\n{lead}" if lead else p.title
        writes = [
            NodeWrite(
                node_id=doc_node_id(sid),
                labels=(DOCUMENT_LABEL,),
                properties=p.properties,
                text=doc_text,
                provenance=refs[0] if refs else (),
                valid_from_us=p.valid_from_us,
            )
        ]
        psg_ids: list[str] = []
        for psg, group in zip(p.parsed.passages, refs, strict=True):
            node_id = passage_node_id(sid, psg.ordinal)
            psg_ids.append(node_id)
            writes.append(
                NodeWrite(
                    node_id=node_id,
                    labels=(PASSAGE_LABEL, psg.kind),
                    properties=p.properties,
                    text=psg.text,
                    provenance=group,
                    valid_from_us=p.valid_from_us,
                )
            )
        return writes, psg_ids

    def _edge_writes(self, p: _Prepared, psg_ids: list[str]) -> list[EdgeWrite]:
        sid = p.source_id
        doc_id = doc_node_id(sid)
        valid = p.valid_from_us
        out: list[EdgeWrite] = []

        def edge(src: str, dst: str, relation: str) -> None:
            out.append(
                EdgeWrite(
                    src=src,
                    dst=dst,
                    relation=relation,
                    weight=RELATION_WEIGHTS[relation],
                    valid_from_us=valid,
                )
            )

        passages = p.parsed.passages
        for i, (psg, node_id) in enumerate(zip(passages, psg_ids, strict=True)):
            edge(doc_id, node_id, "contains")
            edge(node_id, doc_id, "part_of")
            if i + 1 < len(psg_ids):
                edge(node_id, psg_ids[i + 1], "next")
            if psg.level > 0:  # the passage opens a section: it heads the section's rest
                for later, later_id in zip(passages[i + 1 :], psg_ids[i + 1 :], strict=True):
                    if 0 < later.level <= psg.level:
                        break
                    edge(node_id, later_id, "heads")
            for target in sorted(self.matcher.find(psg.text)):
                if target != sid:
                    edge(node_id, doc_node_id(target), "mentions")
        return out

def ingest_documents(
    store: IngestStore,
    embedder: Embedder | None,
    docs: Iterable[DocumentIn | ReadAhead | RejectedDocument],
    *,
    now_us: int,
    progress: bool = False,
    total: int | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    max_passage_bytes: int = DEFAULT_MAX_PASSAGE_BYTES,
    min_passage_bytes: int = DEFAULT_MIN_PASSAGE_BYTES,
    titles: KnownTitles | None = None,
) -> IngestReport:
    """Ingest ``docs`` into ``store`` (see the module docstring for what is written).

    A bad document (invalid source id, empty text, invalid UTF-8, unsupported media type, an
    encrypted or damaged file, malformed properties, a proposed version tx in the future, not
    later than the source's latest version or earlier than the latest transaction time the
    store has recorded) is recorded in ``report.errors`` as ``(source_id, "field: reason")``
    and skipped; the others go on. A :class:`RejectedDocument` item is recorded the same way
    at its place. ``report.formats`` counts, per format, the documents read,
    skipped (no reader could read them) and failed, and why.

    Args:
        store: the store.
        embedder: embeds passages (batched per chunk); None writes no vectors.
        docs: the documents, consumed lazily; a document may come already read
            (:func:`planner_svc.ingest.reading.read_ahead`, with the same passage limits),
            so the caller can parse outside its write lock.
        now_us: the current time, microseconds: the default valid-from, the clock's floor and
            the latest version tx a document may propose.
        progress: show a tqdm progress bar on stderr when stderr is a terminal (a log file
            or pipe gets no bar: redrawn with carriage returns, it is one long line there).
        total: number of documents, for the progress bar (optional).
        batch_size: documents parsed and embedded together (>= 1).
        max_passage_bytes: passage split threshold (see :mod:`planner_svc.ingest.parse`).
        min_passage_bytes: a heading's passage takes in following paragraphs while shorter
            than this, bytes; 0 keeps one passage per structural block.
        titles: the known titles kept across calls (a long-lived writer passes one, so a call
            does not re-read every source's title); None reads them from the store.

    Returns:
        The counts.

    Raises:
        ConfigError: (``embedder``) the store's vectors were made by another embedder;
            (``batch_size``) below 1.
    """
    if batch_size < 1:
        raise ConfigError("batch_size", f"{batch_size} is below the minimum 1")
    check_time(now_us, field="now_us")
    if embedder is not None:
        stored = store.get_meta(EMBEDDER_META_KEY)
        if stored is None:
            store.set_meta(EMBEDDER_META_KEY, embedder.name)
        elif stored != embedder.name:
            raise ConfigError(
                "embedder",
                f"the store's vectors come from {stored!r}, not {embedder.name!r}",
            )
    report = IngestReport()
    run = _Run(store, embedder, report, now_us, titles)
    from tqdm import tqdm

    bar = tqdm(total=total, disable=None if progress else True,  # None: only on a terminal
               unit="doc", file=sys.stderr, smoothing=0.1)
    chunk: list[_Prepared] = []
    pending: set[str] = set()
    try:
        for item in (i for group in _groups(docs, batch_size, GROUP_MAX_INPUT_BYTES)
                     for i in run.look_up(group)):
            doc, ahead = (item.doc, item) if isinstance(item, ReadAhead) else (item, None)
            report.received += 1
            bar.update(1)
            if isinstance(doc, RejectedDocument):
                reason = f"{doc.field}: {doc.reason}"
                run.errors.append((report.received, (doc.source_id, reason)))
                report.count_refused(rejected_format(doc), reason, skipped=False)
                continue
            source_id = doc.source_id if isinstance(doc.source_id, str) else repr(doc.source_id)
            if source_id in pending:
                run.flush(chunk)
                chunk, pending = [], set()
            try:
                prepared = _prepare(
                    store, doc, ahead, report.received, now_us, max_passage_bytes,
                    min_passage_bytes, embedder is not None, run.looked_up,
                )
            except InvalidRequest as exc:
                reason = f"{exc.field}: {exc.reason}"
                run.errors.append((report.received, (source_id, reason)))
                report.count_refused(format_label(doc, exc), reason,
                                     skipped=isinstance(exc, ReaderError))
                continue
            if isinstance(prepared, tuple):
                outcome, fmt = prepared
                report.unchanged += 1
                report.count_read(fmt)
                run.outcomes.append((report.received, outcome))
                continue
            chunk.append(prepared)
            pending.add(prepared.source_id)
            if len(chunk) >= batch_size:
                run.flush(chunk)
                chunk, pending = [], set()
        run.flush(chunk)
        bar.set_postfix_str("resolving mentions")
        resolve_late_mentions(store, run.matcher, run.new_titles, written_tx=run.written_tx,
                              now_us=now_us, report=report)
    except BaseException:
        if titles is not None:
            titles.invalidate()
        raise
    finally:
        bar.close()
    if titles is not None and run.uncommitted_titles:
        titles.invalidate()  # a refused document's title was registered but never committed
    report.sources = [outcome for _, outcome in sorted(run.outcomes, key=lambda o: o[0])]
    report.errors = [error for _, error in sorted(run.errors, key=lambda e: e[0])]
    return report
