"""Words' tokens read from a text's encoding: equal to tokenizing the joined words, bit for bit.

The composed path (:class:`~planner_svc.embed.model2vec_backend.WordSession`) must give the
rows :meth:`Model2VecEmbedder.embed` gives for the joined text whenever it is taken, and must
not be taken where the composition breaks (a piece over two words or over a word's edge, a
truncated text, a reordering mark, another kind of tokenizer).
"""

from __future__ import annotations

import re
import string
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from planner_svc.embed import HashingEmbedder, Model2VecEmbedder, default_embedder
from planner_svc.embed.model2vec_backend import WordSession
from planner_svc.embed.words import (
    ascii_word_tokens,
    local_characters,
    word_composing,
    word_tokens,
)

_WORD = re.compile(r"\w+")  # the recall engine's words

PIECES = [
    # ASCII words, digits, punctuation, underscores, apostrophes, hyphens
    "the", "Dacian", "tribes", "Romania", "x", "a", "b", "42", "1976", "3.5", "_", "x_y",
    "don't", "'", "-", "present-day", ",", ".", "?", "!", "(", ")", "[", "]", "#", "$", "%",
    "&", "*", "+", "/", ":", ";", "<", "=", ">", "@", "\\", "^", "`", "{", "|", "}", "~", '"',
    "[UNK]", "[PAD]", "[CLS]",
    # accents, precomposed and combining; reordering marks
    "é", "café", "naïve", "Ünïcödé", "ñ", "e\u0301", "\u0301", "\u0316", "\u0308",
    "\u302e", "\U0001d165", "\U0001d15e", "\u0903", "\u20dd",
    # CJK, Hangul, kana, Greek with a final sigma, Cyrillic, special casing
    "東", "京", "東京", "タワー", "한국어", "가", "\u1100\u1161", "ΟΔΟΣ", "Σ", "Μ", "İ", "ß",
    "ﬁ", "\u212a", "Привет",
    # symbols, emoji
    "©", "™", "½", "²", "€", "°", "🙂", "👍🏽", "👨\u200d👩",
    # whitespace, controls, format characters, an unassigned code point
    " ", " ", " ", "\t", "\n", "\r\n", "\u00a0", "\u3000", "\u2009", "\x00", "\x07",
    "\u200b", "\u200d", "\ufeff", "\U000e0080",
]

BENIGN = ["the", "Dacian", "tribes", "x", "a", "42", "_", "don't", "-", ",", "?", "é", "café",
          "東京", "한국어", "ΟΔΟΣ", "½", "©", "🙂", " ", " ", " ", "\t", "\u00a0"]
# mostly pieces that keep words composable, so the composed path is taken often
texts = st.lists(st.one_of(st.sampled_from(BENIGN), st.sampled_from(BENIGN),
                           st.sampled_from(PIECES)), max_size=40).map("".join)


@pytest.fixture(scope="module")
def embedder() -> Model2VecEmbedder:
    model = default_embedder()
    assert isinstance(model, Model2VecEmbedder)
    return model


def _tokenizer(embedder: Model2VecEmbedder) -> Any:
    return embedder._model.tokenizer


def _ids(embedder: Model2VecEmbedder, text: str) -> list[int]:
    return list(_tokenizer(embedder).encode(text, add_special_tokens=False).ids)


def _bits(rows: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(rows, dtype=np.float32).view(np.uint32)


class _Counting:
    """Counts the texts the embedder tokenizes."""

    def __init__(self, embedder: Model2VecEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
        self.texts: list[str] = []
        encode: Callable[[Sequence[str]], list[Any]] = embedder._encode

        def counted(batch: Sequence[str]) -> list[Any]:
            self.texts.extend(batch)
            return encode(batch)

        monkeypatch.setattr(embedder, "_encode", counted)


def test_default_tokenizer_composes(embedder: Model2VecEmbedder) -> None:
    assert word_composing(_tokenizer(embedder)) == 512
    assert isinstance(embedder.session(), WordSession)


@settings(max_examples=300, deadline=None)
@given(text=texts)
def test_word_tokens_are_the_words_tokenized_alone(embedder: Model2VecEmbedder,
                                                   text: str) -> None:
    encoding = _tokenizer(embedder).encode(text, add_special_tokens=False)
    if encoding.overflowing or not local_characters(text):
        return
    found = word_tokens(text, encoding.ids, encoding.offsets, encoding.word_ids)
    assert found is not None
    for word, ids in found.items():
        assert ids == _ids(embedder, word), word
    known = sorted(found)
    if known:
        joined = [token for word in known for token in found[word]]
        assert joined == _ids(embedder, " ".join(known))


@settings(max_examples=300, deadline=None)
@given(question=texts, data=st.data())
def test_session_rows_equal_embedding_the_joined_words(
        embedder: Model2VecEmbedder, question: str, data: st.DataObject) -> None:
    """A plan's run: the question (and a part), then texts of some of its word occurrences in
    question order and of repeated words; every row bit for bit as embedding the text."""
    words = _WORD.findall(question)
    part = data.draw(texts)
    selections = data.draw(st.lists(
        st.lists(st.integers(0, max(len(words) - 1, 0)), max_size=12), max_size=6))
    joined = [" ".join(words[i] for i in sorted(set(s)) if i < len(words)) for s in selections]
    joined += [" ".join(words[i] for i in s if i < len(words)) for s in selections]
    session = embedder.session()
    assert (_bits(session.embed([question, part])) == _bits(embedder.embed([question, part]))
            ).all()
    got = session.embed(joined)
    assert (_bits(got) == _bits(embedder.embed(joined))).all()


ASCII_PIECES = [piece for piece in PIECES if piece.isascii() and piece.isprintable()]
ascii_texts = st.lists(st.sampled_from(ASCII_PIECES), max_size=40).map("".join)


@settings(max_examples=300, deadline=None)
@given(text=ascii_texts)
def test_ascii_word_tokens_are_word_tokens(embedder: Model2VecEmbedder, text: str) -> None:
    """On a printable ASCII text without an added token, the words read from the offsets of
    the encoding without the normalizer are those :func:`word_tokens` reads from the
    tokenizer's own encoding."""
    if embedder._lowered(text) is None:  # holds an added token
        return
    bare = embedder._encode_one(text)
    full = _tokenizer(embedder).encode(text, add_special_tokens=False)
    assert ascii_word_tokens(text, bare.ids, bare.offsets) == word_tokens(
        text, full.ids, full.offsets, full.word_ids)


def test_ascii_word_tokens_refuse_encodings_without_offsets() -> None:
    assert ascii_word_tokens("ab cd", [5, 6], [(0, 0), (0, 0)]) is None
    assert ascii_word_tokens("ab cd", [5, 6], [(3, 5), (0, 2)]) is None
    assert ascii_word_tokens("ab ab", [5, 6], [(0, 2), (3, 5)]) is None  # a word, two ways
    assert ascii_word_tokens("ab", [5, 6], [(0, 2), (2, 3)]) is None  # past the text
    assert ascii_word_tokens("ab", [5, 6], [(5, 6), (0, 1)]) is None  # past it, then back
    assert ascii_word_tokens("ab-cd_e", [5, 6, 7, 8, 9], [(0, 2), (2, 3), (3, 5), (5, 6),
                                                          (6, 7)]) == {"ab": [5],
                                                                       "cd_e": [7, 8, 9]}


@pytest.mark.parametrize(("question", "left_out"), [
    ("a©b and c", {"a", "b"}),                 # a symbol between letters: one piece, two words
    ("x™y z", {"x", "y"}),
    ("e\u0903 f", {"e"}),                      # a spacing mark after a word joins its piece
    ("e\u0316\u0301 f", set()),                # nonspacing marks after it are stripped
    ("ab[UNK]cd e", {"UNK"}),                  # an added token holding a word
    ("a\u200db c", {"a", "b"}),                # a removed format character joins two words
    ("½x y", set()),                           # ½ is a word character: one word
])
def test_pieces_over_a_word_edge_leave_the_word_out(
        embedder: Model2VecEmbedder, question: str, left_out: set[str]) -> None:
    encoding = _tokenizer(embedder).encode(question, add_special_tokens=False)
    found = word_tokens(question, encoding.ids, encoding.offsets, encoding.word_ids)
    assert found is not None
    words = set(_WORD.findall(question))
    assert set(found) == words - left_out
    for word in found:
        assert found[word] == _ids(embedder, word)


def test_session_tokenizes_only_what_it_cannot_compose(
        embedder: Model2VecEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    counting = _Counting(embedder, monkeypatch)
    session = embedder.session()
    question = "Which tribes a©b lived in present-day Romania, and who ruled them?"
    session.embed([question])
    residuals = ["tribes lived Romania", "ruled them", "Romania Romania", "a tribes", "b"]
    rows = session.embed(residuals)
    assert counting.texts == [question, "a tribes", "b"]
    assert (_bits(rows) == _bits(embedder.embed(residuals))).all()


@pytest.mark.parametrize("question", [
    "word " * 600 + "tail",                    # truncated at 512 tokens
    "가\u302e word tail",                        # a spacing mark of non-zero class: reordered
    "word \U0001d15e tail",
    "word \U000e0080 tail",                    # unassigned in Python's tables
])
def test_session_falls_back_for_unusable_questions(
        embedder: Model2VecEmbedder, monkeypatch: pytest.MonkeyPatch, question: str) -> None:
    counting = _Counting(embedder, monkeypatch)
    session = embedder.session()
    session.embed([question])
    rows = session.embed(["word tail"])
    assert counting.texts == [question, "word tail"]
    assert (_bits(rows) == _bits(embedder.embed(["word tail"]))).all()


def test_local_characters() -> None:
    assert local_characters("plain ascii, even [UNK]")
    assert local_characters("café naïve e\u0301 東京 한국어 🙂 ©")
    assert not local_characters("가\u302e")
    assert not local_characters("\U0001d15e")
    assert not local_characters("\U000e0080")


def test_other_tokenizers_do_not_compose(embedder: Model2VecEmbedder) -> None:
    from tokenizers import AddedToken, Tokenizer, normalizers, pre_tokenizers

    def copy() -> Any:
        return Tokenizer.from_str(_tokenizer(embedder).to_str())

    assert word_composing(copy()) == 512
    changed = copy()
    changed.normalizer = normalizers.NFKC()
    assert word_composing(changed) is None
    changed = copy()
    changed.normalizer = normalizers.BertNormalizer(lowercase=False)
    assert word_composing(changed) is None
    changed = copy()
    changed.pre_tokenizer = pre_tokenizers.Whitespace()
    assert word_composing(changed) is None
    changed = copy()
    changed.enable_padding(length=8)
    assert word_composing(changed) is None
    changed = copy()
    changed.add_tokens([AddedToken("new york", normalized=False)])
    assert word_composing(changed) is None
    changed = copy()
    changed.no_truncation()
    assert word_composing(changed) == 1 << 62


def test_hashing_embedder_has_no_session() -> None:
    assert not hasattr(HashingEmbedder(8), "session")


def test_batch_encodings_without_offsets_are_not_read(
        embedder: Model2VecEmbedder, monkeypatch: pytest.MonkeyPatch) -> None:
    """A batch larger than the in-thread one is encoded without offsets: its words stay
    unknown and later texts are tokenized."""
    counting = _Counting(embedder, monkeypatch)
    session = embedder.session()
    batch = [f"word tail {i}" for i in range(40)]
    session.embed(batch)
    rows = session.embed(["word tail"])
    assert counting.texts == [*batch, "word tail"]
    assert (_bits(rows) == _bits(embedder.embed(["word tail"]))).all()


def test_session_of_a_model_with_weights_a_token_mapping_and_a_max_length(
        embedder: Model2VecEmbedder, tmp_path: Path) -> None:
    """Composed texts are weighted and mapped as embedded; the model's max_length (5) also
    truncates its tokenizer, so a longer question is not read and a longer text is
    tokenized."""
    from model2vec import StaticModel

    tokenizer = _tokenizer(embedder)
    vocabulary = tokenizer.get_vocab_size()
    rng = np.random.default_rng(5)
    StaticModel(vectors=rng.standard_normal((300, 8)).astype(np.float16), tokenizer=tokenizer,
                weights=rng.random(vocabulary).astype(np.float32),
                token_mapping=rng.integers(0, 300, vocabulary).astype(np.int64),
                max_length=5).save_pretrained(tmp_path)
    model = Model2VecEmbedder(tmp_path)
    for question, read in [("Johnny Cash, 1968", True),
                           ("The Tennessee Three backed Johnny Cash", False)]:
        words = _WORD.findall(question)
        session = model.session()
        assert isinstance(session, WordSession)
        session.embed([question])
        joined = [" ".join(words[i:]) for i in range(len(words))] + [
            "Cash Cash", "Cash Cash Cash Cash Cash Cash"]
        assert (_bits(session.embed(joined)) == _bits(model.embed(joined))).all()
        assert set(session._words) == (set(words) if read else set())


ASCII = st.lists(st.one_of(st.sampled_from([p for p in PIECES if p.isascii()]),
                           st.text(alphabet=string.printable[:95], max_size=6),
                           st.text(alphabet=st.characters(min_codepoint=0, max_codepoint=127),
                                   max_size=6)),
                 max_size=40).map("".join)
"""Mostly printable ASCII (the path without the normalizer), some control characters."""


@settings(max_examples=500, deadline=None)
@given(text=st.one_of(ASCII, texts))
def test_in_thread_encodings_equal_the_tokenizers(embedder: Model2VecEmbedder,
                                                  text: str) -> None:
    """Printable ASCII text is lowercased and encoded without the normalizer: the same
    tokens, offsets and pieces as the model's tokenizer gives."""
    got = embedder._encode([text])[0]
    want = _tokenizer(embedder).encode(text, add_special_tokens=False)
    assert (got.ids, got.tokens, got.offsets, got.word_ids) == (
        want.ids, want.tokens, want.offsets, want.word_ids)
    assert [o.ids for o in got.overflowing] == [o.ids for o in want.overflowing]


@pytest.mark.parametrize("text", ["Who founded the city?", "a [PAD] b", "a [unk] b",
                                  "A [Pad] B", "x" * 600, "x " * 600, "MiXeD CaSe 42!"])
def test_in_thread_encodings_of_added_tokens_and_long_texts(embedder: Model2VecEmbedder,
                                                            text: str) -> None:
    assert embedder._bare is not None  # the default model's BertNormalizer lowercases
    got = embedder._encode([text])[0]
    want = _tokenizer(embedder).encode(text, add_special_tokens=False)
    assert (got.ids, got.offsets, got.word_ids) == (want.ids, want.offsets, want.word_ids)
    assert [o.ids for o in got.overflowing] == [o.ids for o in want.overflowing]
