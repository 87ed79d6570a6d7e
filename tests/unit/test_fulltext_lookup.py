"""The store's phrase lookup (late-mention candidates): the rarest-word path finds every row the
phrase query finds, the batched lookup of many phrases (rarest words first, on SQLite and
PostgreSQL) finds every passage naming one of them whatever the hint, and late mentions come
out the same whichever way candidates are found."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from planner_svc.ingest import DocumentIn, late_mentions
from planner_svc.ingest import ingest_documents as _ingest_documents
from planner_svc.ingest.mentions import TitleMatcher, title_forms
from planner_svc.store import Store, fulltext
from planner_svc.store.fulltext import rare_word_order
from planner_svc.store.open import AnyStore
from planner_svc.store.postgres import nodes as pg_nodes
from planner_svc.store.postgres.nodes import rarest_first
from planner_svc.store.records import NodeVersion, NodeWrite
from tests.pgserver import Backend, SchemaPerTest, StatementCounter

NOW = 1_800_000_000_000_000
T1 = 1_785_542_400_000_000

TITLES = [
    "Johnny Cash",
    "Cash",  # one word, also the last word of another title
    "Capra (genus)",  # a qualified title: its bare form is looked up too
    "Frank Capra",
    "The Who",  # stop words only
    "Of Mice and Men",  # stop words and one content word
    "Bora Bora",  # a repeated word
    "AC/DC",  # punctuation inside
    "Guns N' Roses",
    "Mr. Smith Goes to Washington",
    "Apollo 11",
    "Émile Zola",  # diacritics: FTS5 folds them, the matcher does not
    "Zürich",
    "snake_case",  # an underscore: one \\w word, two FTS5 tokens
]

TEXTS = [
    "Johnny Cash sang; the cash register rang. Frank Capra directed.",
    "The Who played AC/DC songs and Guns N' Roses songs.",
    "Bora Bora is an island. bora bora in lower case. Bora alone.",
    "Of Mice and Men, a novel; mice and men alone.",
    "Mr. Smith Goes to Washington (1939) and Apollo 11 (1969).",
    "Emile Zola and Émile Zola; Zurich and Zürich.",
    "Capra goats, the Capra (genus) page, snake_case names and snake case.",
    "Cash only. Johnny's Cash. cash.",
]


def _phrase_rows(store: Store, phrase: str) -> set[int]:
    """Version ids the plain FTS5 phrase query finds (current passages)."""
    saved = fulltext.RARE_WORD_MAX_ROWS
    fulltext.RARE_WORD_MAX_ROWS = -1  # no word is ever rare enough: the phrase query runs
    try:
        return {n.version_id for n in store.current_nodes_matching_phrase(phrase,
                                                                           label="passage")}
    finally:
        fulltext.RARE_WORD_MAX_ROWS = saved


def test_rare_word_order_puts_stop_words_last_then_longer_then_later_words_first() -> None:
    assert rare_word_order("Of Mice and Men") == ["mice", "men", "and", "of"]
    assert rare_word_order("Bora Bora") == ["bora"]
    assert rare_word_order("AC/DC") == ["dc", "ac"]
    assert rare_word_order("Mr. Smith Goes to Washington") == [
        "washington", "smith", "goes", "mr", "to"]
    assert rare_word_order("Émile Zola") == ["émile", "zola"]
    assert rare_word_order("snake_case __ _") == ["snake_case"]
    assert rare_word_order("The Who") == ["who", "the"]
    assert rare_word_order("...") == []


def test_rare_word_order_tries_words_in_fewest_titles_first() -> None:
    counts = {"frank": 40, "capra": 2, "the": 1}
    assert rare_word_order("Frank Capra", counts) == ["capra", "frank"]
    assert rare_word_order("The Frank", counts) == ["frank", "the"]  # stop words stay last
    assert rare_word_order("Frank Zappa", counts) == ["zappa", "frank"]  # unknown counts 0


def test_matcher_counts_the_titles_holding_each_word() -> None:
    matcher = TitleMatcher()
    matcher.add("a", "Bora Bora")
    matcher.add("b", "Bora (island)")
    matcher.add("c", "Johnny Cash")
    assert matcher.word_titles == {"bora": 2, "island": 1, "johnny": 1, "cash": 1}
    matcher.add("b", "Cash Island")  # a new title replaces the old one's words
    matcher.add("c", "Johnny Cash")  # the same title again changes nothing
    assert matcher.word_titles == {"bora": 1, "island": 1, "johnny": 1, "cash": 2}


@pytest.mark.parametrize("max_rows", [64, 2, 0])
def test_rare_word_lookup_finds_every_row_the_phrase_query_finds(
    tmp_path: Path, max_rows: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(tmp_path / "s") as store:
        store.write_nodes(
            [NodeWrite(node_id=f"psg:t:{i}", labels=("passage",), text=text,
                       valid_from_us=T1) for i, text in enumerate(TEXTS)]
            + [NodeWrite(node_id="doc:t", labels=("document",), text=" ".join(TEXTS),
                         valid_from_us=T1)],
            tx_us=T1,
        )
        # a newer version of one passage: the old one is no longer current
        store.write_nodes([NodeWrite(node_id="psg:t:0", labels=("passage",),
                                     text="Frank Capra only.", valid_from_us=T1)],
                          tx_us=T1 + 1)
        matcher = TitleMatcher()
        matcher.add_all((str(i), t) for i, t in enumerate(TITLES))
        # a hint that is wrong on purpose: the words in most titles first
        reversed_hint = {w: -n for w, n in matcher.word_titles.items()}
        found_any = 0
        for title in TITLES:
            for form in title_forms(title):
                phrase = " ".join(form)
                want = _phrase_rows(store, phrase)
                monkeypatch.setattr(fulltext, "RARE_WORD_MAX_ROWS", max_rows)
                for hint in (None, matcher.word_titles, reversed_hint):
                    got = store.current_nodes_matching_phrase(phrase, label="passage",
                                                              commonness=hint)
                    ids = [n.version_id for n in got]
                    assert ids == sorted(set(ids))
                    assert want <= set(ids), (phrase, hint, want, ids)
                    assert all(n.tx_to_us is None and "passage" in n.labels for n in got)
                monkeypatch.undo()
                found_any += bool(want)
        assert found_any >= 12  # the texts do name most titles


def test_a_word_in_no_row_answers_for_an_ascii_word_only(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    with Store.open(tmp_path / "s") as store:
        store.write_nodes([NodeWrite(node_id="psg:t:0", labels=("passage",),
                                     text="Zürich and Émile", valid_from_us=T1)], tx_us=T1)
        queries: list[str] = []
        conn = store._conn()

        class Spy:
            def execute(self, sql: str, params: tuple[object, ...] = ()) -> object:
                if "MATCH" in sql:
                    queries.append(str(params[0]))
                return conn.execute(sql, params)

        monkeypatch.setattr(store, "_conn", lambda: Spy())
        assert store.current_nodes_matching_phrase("Absentee Zürich", label="passage") == []
        assert queries == ['"absentee"']  # no row holds it: nothing more is asked
        queries.clear()
        got = store.current_nodes_matching_phrase("Zürich Émile", label="passage")
        assert [n.node_id for n in got] == ["psg:t:0"]
        queries.clear()
        assert store.current_nodes_matching_phrase("Zürichx Émilex", label="passage") == []
        # no row holds a non-ASCII word: the next word, then the phrase query decide
        assert queries == ['"zürichx"', '"émilex"', '"zürichx émilex"']


def _ingest(store: Store, docs: list[DocumentIn]) -> None:
    for doc in docs:  # one call per document: later titles are resolved as late mentions
        _ingest_documents(store, None, [doc], now_us=NOW)


def _mention_versions(store: Store) -> list[tuple[str, str, int, int | None]]:
    return sorted((e.src, e.dst, e.tx_from_us, e.tx_to_us)
                  for _id, e in store.edge_versions_after(0, 1_000_000)
                  if e.relation == "mentions")


def _graph(tmp_path: Path, name: str, docs: list[DocumentIn], mode: str,
           monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, int, int | None]]:
    with monkeypatch.context() as m:
        if mode != "scan":  # a store "large" for its titles: lookups, never a scan
            m.setattr(late_mentions, "FTS_RESOLVE_MAX_TITLES", 0)
            m.setattr(late_mentions, "SCAN_NODES_PER_TITLE", 1)
        if mode == "phrase query":
            m.setattr(fulltext, "RARE_WORD_MAX_ROWS", -1)
        elif mode == "rare word, small cap":
            m.setattr(fulltext, "RARE_WORD_MAX_ROWS", 2)
        with Store.open(tmp_path / name) as store:
            _ingest(store, docs)
            return _mention_versions(store)


def _docs(titles: list[str], texts: list[str]) -> list[DocumentIn]:
    return [
        DocumentIn(source_id=f"s/{i}", title=title, text=text, media_type="text/plain",
                   version_tx_us=T1 + 10 * i, valid_from_us=T1)
        for i, (title, text) in enumerate(zip(titles, texts, strict=True))
    ]


def test_late_mentions_are_the_same_whichever_way_candidates_are_found(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # each text names titles registered after it (and some before): late mentions, and
    # mentions a longer title registered later hides (Frank Capra over Capra)
    texts = [TEXTS[i % len(TEXTS)] for i in range(len(TITLES))]
    docs = _docs(TITLES, texts)
    graphs = {mode: _graph(tmp_path, mode, docs, mode, monkeypatch)
              for mode in ("scan", "phrase query", "rare word", "rare word, small cap")}
    assert graphs["rare word"] == graphs["phrase query"] == graphs["scan"]
    assert graphs["rare word, small cap"] == graphs["scan"]
    assert len(graphs["scan"]) >= 20
    assert any(tx_to is not None for *_k, tx_to in graphs["scan"])  # a hidden mention closed


_WORDS = ["Bora", "bora", "Cash", "the", "of", "Zürich", "Zola", "AC", "DC", "N", "11",
          "snake_case", "Men", "Mice"]
_SEPS = [" ", " ", " ", "/", "'", ". ", ", "]


@st.composite
def _corpus(draw: st.DrawFn) -> tuple[list[str], list[str]]:
    words = st.sampled_from(_WORDS)
    titles = draw(st.lists(st.lists(words, min_size=1, max_size=3).map(" ".join),
                           min_size=2, max_size=6, unique=True))
    texts = []
    for _ in titles:
        parts = draw(st.lists(st.one_of(words, st.sampled_from(titles)), min_size=1,
                              max_size=8))
        seps = draw(st.lists(st.sampled_from(_SEPS), min_size=len(parts), max_size=len(parts)))
        texts.append("".join(p + s for p, s in zip(parts, seps, strict=True)))
    return titles, texts


@settings(max_examples=25, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(corpus=_corpus())
def test_late_mentions_match_a_full_scan_for_generated_titles(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
    corpus: tuple[list[str], list[str]],
) -> None:
    titles, texts = corpus
    docs = _docs(titles, texts)
    root = tmp_path_factory.mktemp("gen")
    scan = _graph(root, "scan", docs, "scan", monkeypatch)
    assert _graph(root, "rare", docs, "rare word", monkeypatch) == scan
    assert _graph(root, "cap", docs, "rare word, small cap", monkeypatch) == scan


def test_rarest_first_orders_the_postgres_word_tests_as_the_rare_word_order() -> None:
    assert rarest_first("Frank Capra") == ["Capra", "Frank"]  # same length: later first
    assert rarest_first("Frank Capra", {"capra": 40, "frank": 2}) == ["Frank", "Capra"]
    assert rarest_first("Of Mice and Men") == ["Mice", "Men", "and", "Of"]
    assert rarest_first("Bora bora") == ["Bora", "bora"]  # one rank: by code point
    assert rarest_first("snake_case __") == ["snake_case", "__"]  # not tried alone: last
    assert rarest_first("Émile Zola", {"émile": 3}) == ["Zola", "Émile"]
    assert rarest_first("...") == []


def _write_texts(store: AnyStore) -> None:
    store.write_nodes(
        [NodeWrite(node_id=f"psg:t:{i}", labels=("passage",), text=text, valid_from_us=T1)
         for i, text in enumerate(TEXTS)]
        + [NodeWrite(node_id="doc:t", labels=("document",), text=" ".join(TEXTS),
                     valid_from_us=T1)],
        tx_us=T1,
    )
    store.write_nodes([NodeWrite(node_id="psg:t:0", labels=("passage",),
                                 text="Frank Capra only.", valid_from_us=T1)], tx_us=T1 + 1)


def test_batched_lookup_holds_every_passage_naming_a_title_whatever_the_hint(
    backend: Backend,
) -> None:
    matcher = TitleMatcher()
    matcher.add_all((str(i), t) for i, t in enumerate(TITLES))
    phrases = [" ".join(form) for title in TITLES for form in title_forms(title)]
    reversed_hint = {w: -n for w, n in matcher.word_titles.items()}
    with backend.open() as store:
        _write_texts(store)
        naming = {n.version_id for n in store.iter_current_nodes(label="passage")
                  if matcher.find(n.text)}
        assert len(naming) >= 6
        answers: list[set[int]] = []
        for hint in (None, matcher.word_titles, reversed_hint):
            got = store.current_nodes_matching_phrases(phrases, label="passage",
                                                       commonness=hint)
            ids = [n.version_id for n in got]
            assert ids == sorted(set(ids))
            assert naming <= set(ids), (hint, naming, ids)
            assert all(n.tx_to_us is None and "passage" in n.labels for n in got)
            one_by_one: set[int] = set()
            for phrase in phrases:
                one_by_one |= {n.version_id for n in store.current_nodes_matching_phrase(
                    phrase, label="passage", commonness=hint)}
            assert set(ids) == one_by_one
            answers.append(set(ids))
        if backend.name == "postgresql":  # one query's condition: the hint orders, never adds
            assert answers[0] == answers[1] == answers[2]
        assert store.current_nodes_matching_phrases([], label="passage") == []
        assert store.current_nodes_matching_phrases(["...", "Absentee Zürich"],
                                                    label="passage") == []


def test_batched_lookup_of_more_phrase_words_than_a_statement_may_bind(
    backend: Backend,
) -> None:
    # 22,000 three-word phrases: 66,000 words, past PostgreSQL's 65,535 parameters a statement
    filler = [f"Qx{i} Qy{i} Qz{i}" for i in range(22_000)]
    phrases = ["Frank Capra", *filler, "Of Mice and Men", "Zürich"]
    with backend.open() as store:
        _write_texts(store)
        want: set[int] = set()
        for phrase in ("Frank Capra", "Of Mice and Men", "Zürich"):
            want |= {n.version_id for n in store.current_nodes_matching_phrase(
                phrase, label="passage")}
        assert len(want) >= 3
        with StatementCounter() as counter:
            got = store.current_nodes_matching_phrases(phrases, label="passage")
        assert [n.version_id for n in got] == sorted(want)
        if backend.name == "postgresql":  # 66,000 + 4 words in statements of <= 29,999
            assert counter.statements == 3


def test_batched_lookup_split_into_statements_answers_as_one_statement(
    postgres_schemas: SchemaPerTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
) -> None:
    phrases = [" ".join(form) for title in TITLES for form in title_forms(title)]
    with Backend("postgresql", tmp_path, postgres_schemas.url()).open() as store:
        _write_texts(store)
        whole = store.current_nodes_matching_phrases(phrases, label="passage")
        assert len(whole) >= 6
        words = sum(len(rarest_first(p)) for p in phrases)
        for cap in (6, 7, 11):  # the longest phrase has 5 words: every one is tested whole
            monkeypatch.setattr(pg_nodes, "PHRASE_STATEMENT_PARAMS", cap)
            with StatementCounter() as counter:
                split = store.current_nodes_matching_phrases(phrases, label="passage")
            assert split == whole  # same versions, once each, in version_id order
            assert counter.statements >= words / (cap - 1) > 3
    assert [len(b) for b in pg_nodes._statement_batches([["a"], ["b", "c"], ["d"]])] == [3]
    monkeypatch.setattr(pg_nodes, "PHRASE_STATEMENT_PARAMS", 3)
    assert list(pg_nodes._statement_batches([["a"], ["b", "c"], ["d", "e"], ["f"]])) == [
        [["a"]], [["b", "c"]], [["d", "e"]], [["f"]]]
    monkeypatch.setattr(pg_nodes, "PHRASE_STATEMENT_PARAMS", 4)
    assert list(pg_nodes._statement_batches([["a"], ["b", "c"], ["d", "e"], ["f"]])) == [
        [["a"], ["b", "c"]], [["d", "e"], ["f"]]]


@pytest.mark.parametrize("backend_name", ["sqlite", "postgresql"])
def test_late_mentions_by_batched_lookup_equal_a_full_scan_on_each_backend(
    backend_name: str, tmp_path: Path, request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    texts = [TEXTS[i % len(TEXTS)] for i in range(len(TITLES))]
    docs = _docs(TITLES, texts)
    hints: list[Mapping[str, int] | None] = []

    def graph(mode: str) -> list[tuple[str, str, int, int | None]]:
        url = None
        if backend_name == "postgresql":
            schemas: SchemaPerTest = request.getfixturevalue("postgres_schemas")
            url = schemas.url()
        with monkeypatch.context() as m, Backend(backend_name, tmp_path / mode,
                                                 url).open() as store:
            if mode == "lookups":  # a store "large" for its titles: lookups, never a scan
                m.setattr(late_mentions, "FTS_RESOLVE_MAX_TITLES", 0)
                m.setattr(late_mentions, "SCAN_NODES_PER_TITLE", 1)
                lookup = store.current_nodes_matching_phrases

                def spy(phrases: list[str], *, label: str,
                        commonness: Mapping[str, int] | None = None) -> list[NodeVersion]:
                    hints.append(commonness)
                    return lookup(phrases, label=label, commonness=commonness)

                m.setattr(store, "current_nodes_matching_phrases", spy)
            _ingest(store, docs)
            return _mention_versions(store)

    scan = graph("scan")
    assert graph("lookups") == scan
    assert len(scan) >= 20
    # one batched lookup per ingest call, given the known titles' word counts as its hint
    assert len(hints) == len(TITLES)
    assert all(h is not None and h["cash"] >= 1 for h in hints)
    last = hints[-1]
    assert last is not None and last["capra"] == 2 and last["snake_case"] == 1
