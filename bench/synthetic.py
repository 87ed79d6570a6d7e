"""A seeded synthetic corpus for scale benchmarks: Markdown documents in English words, grouped
by topic, whose passages mention other documents by title.

Nothing is downloaded: the words are the whole-word entries of the embedding model's own
vocabulary (``models/minilm-l6-m2v-256/tokenizer.json``, roughly in frequency order), drawn
with Zipf weights, so BM25 sees a long-tailed vocabulary and the embedder sees words it knows.
Each document belongs to one of :data:`TOPICS` topics (a seed word and its
:data:`TOPIC_WORDS` nearest neighbours in the model's token space, a semantic field; sentences
mix function words, topic words and other content words), so documents of one topic are
near each other in both BM25 and embedding space. Titles are two or three capitalised topic
words, unique, derived from the document number alone; a paragraph names another document's
title with probability :data:`MENTION_P` (mostly an earlier document, sometimes a later one,
so late mentions are resolved too), which gives the graph ``mentions`` edges.

Every document is a pure function of ``(seed, number)``: :func:`document` can be called in any
order, by any process, and :func:`question` derives questions about a document from the same
draws.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass
from functools import cache
from itertools import accumulate
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VOCABULARY = ROOT / "models" / "minilm-l6-m2v-256" / "tokenizer.json"

TOPICS = 4096
"""Topics documents are drawn from."""
TOPIC_WORDS = 48
"""Words per topic."""
FUNCTION_WORDS = 150
"""The most frequent vocabulary entries (the, and, was, ...): a sentence's glue."""
FUNCTION_SHARE = 0.45
"""Share of a sentence's words that are function words."""
TOPIC_SHARE = 0.45
"""Share of a sentence's words drawn from the document's topic (the rest: any content word)."""
MENTION_P = 0.45
"""Probability that a paragraph names another document's title."""
LATER_MENTION_P = 0.1
"""Of the mentions, the share naming a document later in the stream."""


@dataclass(frozen=True, slots=True)
class SyntheticDoc:
    """One generated document (Markdown: a title heading and paragraphs)."""

    source_id: str
    title: str
    text: str
    topic: int


@cache
def _words() -> tuple[tuple[str, ...], tuple[float, ...]]:
    """The vocabulary (alphabetic, lower-case, 3+ letters) and its cumulative Zipf weights."""
    vocab = json.loads(VOCABULARY.read_text(encoding="utf-8"))["model"]["vocab"]
    ordered = sorted(vocab.items(), key=lambda kv: kv[1])
    words = tuple(w for w, _i in ordered if w.isascii() and w.isalpha() and w.islower()
                  and len(w) >= 3)
    weights = [1.0 / (rank + 20.0) for rank in range(len(words))]
    return words, tuple(accumulate(weights))


@cache
def _content() -> tuple[tuple[str, ...], tuple[float, ...]]:
    """Content words (past the function words) and their cumulative Zipf weights."""
    words, _cum = _words()
    content = words[FUNCTION_WORDS:]
    return content, tuple(accumulate(1.0 / (rank + 20.0) for rank in range(len(content))))


@cache
def _topic_words(seed: int) -> tuple[tuple[str, ...], ...]:
    """Every topic's words: a seed word (mid- or low-frequency) and its nearest neighbours in
    the embedding model's token space, so a topic is a semantic field, as in real text."""
    from safetensors.numpy import load_file

    vocab = json.loads(VOCABULARY.read_text(encoding="utf-8"))["model"]["vocab"]
    words, _cum = _words()
    pool = words[400:]
    table = load_file(str(VOCABULARY.parent / "model.safetensors"))["embeddings"]
    matrix = np.asarray(table[[vocab[w] for w in pool]], dtype=np.float32)
    matrix /= np.linalg.norm(matrix, axis=1, keepdims=True) + 1e-12
    rng = np.random.default_rng(seed)
    seeds = rng.choice(len(pool), size=TOPICS, replace=False)
    topics: list[tuple[str, ...]] = []
    for start in range(0, TOPICS, 256):
        block = matrix[seeds[start:start + 256]] @ matrix.T
        nearest = np.argpartition(-block, TOPIC_WORDS, axis=1)[:, :TOPIC_WORDS]
        topics.extend(tuple(pool[i] for i in sorted(row.tolist())) for row in nearest)
    return tuple(topics)


def _topic(seed: int, topic: int) -> tuple[str, ...]:
    return _topic_words(seed)[topic]


def _doc_rng(seed: int, number: int, what: str) -> random.Random:
    return random.Random(f"{seed}:{what}:{number}")


def topic_of(seed: int, number: int) -> int:
    """The topic of document ``number``."""
    return _doc_rng(seed, number, "topic").randrange(TOPICS)


def title(seed: int, number: int) -> str:
    """The title of document ``number``: capitalised topic words and a letters-only tag of the
    number, so titles are unique."""
    rng = _doc_rng(seed, number, "title")
    words = _topic(seed, topic_of(seed, number))
    picked = rng.sample(words, 3 if rng.random() < 0.4 else 2)
    text = " ".join(w.capitalize() for w in picked)
    return f"{text} {_tag(number)}"


def _tag(number: int) -> str:
    """A word-like, letters-only tag of the document number (base-20 consonant-vowel pairs),
    so titles stay unique without digits (the matcher ignores digit-only forms)."""
    consonants, vowels = "bdfgklmnprstvz", "aeiou"
    out = []
    n = number
    while True:
        n, r = divmod(n, len(consonants) * len(vowels))
        out.append(consonants[r // len(vowels)] + vowels[r % len(vowels)])
        if n == 0:
            break
    return "".join(out).capitalize()


def _sentence(rng: random.Random, topic: tuple[str, ...]) -> str:
    words, cum = _words()
    content, content_cum = _content()
    n = rng.randint(8, 16)
    out: list[str] = []
    for _ in range(n):
        roll = rng.random()
        if roll < FUNCTION_SHARE:
            out.append(rng.choices(words[:FUNCTION_WORDS], cum_weights=cum[:FUNCTION_WORDS])[0])
        elif roll < FUNCTION_SHARE + TOPIC_SHARE:
            out.append(rng.choice(topic))
        else:
            out.append(rng.choices(content, cum_weights=content_cum)[0])
    out[0] = out[0].capitalize()
    return " ".join(out) + "."


def document(seed: int, number: int, total: int) -> SyntheticDoc:
    """Document ``number`` (0-based) of a corpus of ``total`` documents."""
    rng = _doc_rng(seed, number, "body")
    topic_id = topic_of(seed, number)
    topic = _topic(seed, topic_id)
    paragraphs: list[str] = []
    for _ in range(rng.choice((2, 3, 3, 4))):
        sentences = [_sentence(rng, topic) for _ in range(rng.randint(2, 4))]
        if number > 0 and rng.random() < MENTION_P:
            if rng.random() < LATER_MENTION_P and number + 1 < total:
                other = rng.randrange(number + 1, total)
            else:
                other = rng.randrange(0, number)
            at = rng.randrange(len(sentences))
            sentences[at] = sentences[at][:-1] + f", as {title(seed, other)} shows."
        paragraphs.append(" ".join(sentences))
    name = title(seed, number)
    text = f"# {name}\n\n" + "\n\n".join(paragraphs) + "\n"
    return SyntheticDoc(source_id=f"syn/{number}", title=name, text=text, topic=topic_id)


def question(seed: int, number: int, variant: int = 0) -> str:
    """A question about document ``number``: its title and words of its topic (distinct for
    distinct ``(number, variant)``)."""
    rng = _doc_rng(seed, number, f"question:{variant}")
    topic = _topic(seed, topic_of(seed, number))
    a, b = rng.sample(topic, 2)
    form = rng.randrange(3)
    if form == 0:
        return f"What is the {a} {b} of {title(seed, number)}?"
    if form == 1:
        return f"How does {title(seed, number)} relate to {a} and {b}?"
    other = (number * 7919 + 13) % max(1, number + 1)
    return f"Which is more {a}: {title(seed, number)} or {title(seed, other)}?"
