"""Static-embedding backend: a model2vec ``StaticModel`` loaded from a local directory.

A model2vec model is a token-embedding table distilled from a sentence transformer: encoding is
a tokenizer pass plus a mean of table rows, so it needs no torch at run time and embeds thousands
of texts per second on one core. The mean is computed here, in a fixed order and precision, so
that embeddings (and with them plan weights) are the same bits on every machine. The default
model (``models/minilm-l6-m2v-256`` at the repository root) is distilled from
sentence-transformers/all-MiniLM-L6-v2; see its PROVENANCE.md and ``scripts/build_model.py``.

Loading never touches the network: the directory must exist (model2vec would otherwise treat the
path as a hub repository id and try to download it), and ``HF_HUB_OFFLINE=1`` is set by default
before model2vec (and with it huggingface_hub) is imported.
"""

from __future__ import annotations

import os
import re
from collections.abc import Sequence
from itertools import accumulate, chain
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from planner_svc.core.errors import ConfigError
from planner_svc.embed.pooling import NO_WEIGHTS, pool_offsets, table_dtype
from planner_svc.embed.words import (
    ascii_word_tokens,
    local_characters,
    word_composing,
    word_tokens,
)

#: How token vectors are pooled (part of the embedder's name): the mean summed in float64 in
#: token order. Vectors pooled another way (model2vec's own float16 mean) differ in their last
#: bits, so a store holding them is told apart from one this pooling wrote.
POOLING_VERSION = "ordered-f64"

#: Files a model directory must hold for the loader to use it locally.
REQUIRED_FILES = ("config.json", "model.safetensors", "tokenizer.json")

IN_THREAD_TEXTS = 32
"""Batches of at most this many texts (a plan's question and its parts, its hop residuals: one
per hop source, 10 by default) are tokenized one text at a time in the calling thread; larger
ones (ingest) by the tokenizer's parallel batch encoder. Both give the same token ids: the
in-thread path only avoids handing a few microseconds of work to the tokenizer's thread pool,
whose wake-up latency dominates a query's embedding on a busy server (a batch of 10 hop
residuals took about 0.6 ms there, against 0.1 ms in the calling thread)."""


def check_model_dir(path: Path, *, field: str) -> Path:
    """Return ``path`` resolved if it is a directory holding a model2vec model.

    Raises:
        ConfigError: (``field``) the directory or one of :data:`REQUIRED_FILES` is missing.
    """
    resolved = path.expanduser().resolve()
    if not resolved.is_dir():
        raise ConfigError(field, f"{str(path)!r} is not a directory holding a model2vec model")
    missing = [name for name in REQUIRED_FILES if not (resolved / name).is_file()]
    if missing:
        raise ConfigError(field, f"{str(path)!r} lacks {', '.join(missing)}")
    return resolved


def _bare_tokenizer(tokenizer: Any) -> Any | None:
    """A copy of ``tokenizers.Tokenizer`` ``tokenizer`` without its normalizer, when that is a
    lowercasing ``BertNormalizer``; else None. On printable ASCII text (no control character,
    no whitespace but the space) such a normalizer's cleaning, CJK padding and accent
    stripping change nothing and its lowercasing maps each character to one character, so
    encoding the lowercased text without it gives the same tokens and offsets, unless an
    added token (matched in the text before normalization) occurs in either text."""
    from tokenizers import Tokenizer, normalizers

    normalizer = tokenizer.normalizer
    if not isinstance(normalizer, normalizers.BertNormalizer) or not normalizer.lowercase:
        return None
    bare = Tokenizer.from_str(tokenizer.to_str())
    bare.normalizer = None
    return bare


class Model2VecEmbedder:
    """Embedder backed by ``model2vec.StaticModel``; satisfies ``Embedder``.

    Args:
        path: local model directory (config.json, model.safetensors, tokenizer.json).
        name: stable id persisted with the store's vectors and the vector index; defaults to
            the directory name plus :data:`POOLING_VERSION`.

    Attributes:
        name: ``name`` or ``<directory name>/<pooling version>``, e.g.
            ``"minilm-l6-m2v-256/ordered-f64"``.
        dim: the model's vector dimension (256 for the default model).

    Raises:
        ConfigError: (``embed.model_dir``) the directory is missing or incomplete.
    """

    def __init__(self, path: str | os.PathLike[str], *, name: str | None = None) -> None:
        directory = check_model_dir(Path(path), field="embed.model_dir")
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        from model2vec import StaticModel

        self._model: Any = StaticModel.from_pretrained(directory, force_download=False)
        self.path: Path = directory
        self.name: str = name if name is not None else f"{directory.name}/{POOLING_VERSION}"
        self.dim: int = int(self._model.dim)
        # float32 when the model's values widen to it exactly (a half-precision or int8
        # table), else float64: the pooling kernel reads it
        embedding = np.asarray(self._model.embedding)
        self._table: npt.NDArray[Any] = np.ascontiguousarray(
            embedding, dtype=table_dtype(embedding.dtype))
        self._weights: npt.NDArray[Any] | None = (
            None if self._model.weights is None else np.asarray(self._model.weights)
        )
        self._mapping: npt.NDArray[Any] | None = (
            None if self._model.token_mapping is None else np.asarray(self._model.token_mapping)
        )
        self._max_tokens: int | None = self._model.max_length
        self._unknown: int | None = self._model.unk_token_id
        self._word_limit: int | None = word_composing(self._model.tokenizer)
        self._bare: Any | None = _bare_tokenizer(self._model.tokenizer)
        added = [token.content.lower()
                 for token in self._model.tokenizer.get_added_tokens_decoder().values()]
        self._added: re.Pattern[str] | None = (
            re.compile("|".join(map(re.escape, added))) if added else None)

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """Embed ``texts``: the mean of the model's token vectors, L2-normalised.

        The model's tokenizer splits each text (no special tokens, unknown tokens dropped, at
        most the model's ``max_length`` tokens); the rows of the token table (per-token weights
        applied when the model has them) are summed in float64 in token order and normalised
        (:func:`~planner_svc.embed.pooling.pool_tokens`: the bits of
        :func:`~planner_svc.embed.base.ordered_sum` and
        :func:`~planner_svc.embed.base.normalize_rows`). Every step is exactly rounded in a
        fixed order, so a text embeds to the same bits on every machine and thread count.

        Returns:
            Shape ``(len(texts), dim)``, float32, unit rows; a zero row for a text with no
            known token (e.g. ``""``). Thread-safe.
        """
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        return self._pool(self._token_ids(texts))

    def session(self) -> Model2VecEmbedder | WordSession:
        """An embedder for a run of related texts (one plan's question, its parts, then texts
        made of the question's words): the rows of :meth:`embed`, bit for bit, where a text
        of words of a text embedded earlier in the run takes their tokens from that text's
        encoding instead of being tokenized (:class:`WordSession`). This embedder itself when
        its tokenizer does not compose words (:func:`~planner_svc.embed.words.word_composing`).
        Not thread-safe: one run, one thread."""
        if self._word_limit is None:
            return self
        return WordSession(self, self._word_limit)

    def _encode(self, texts: Sequence[str]) -> list[Any]:
        """Each text's ``tokenizers.Encoding``, without special tokens. The tokenizers are only
        read (never reconfigured), so calls from several threads need no lock."""
        tokenizer = self._model.tokenizer
        if len(texts) <= IN_THREAD_TEXTS:
            if self._bare is None:
                return [tokenizer.encode(text, add_special_tokens=False) for text in texts]
            return list(map(self._encode_one, texts))
        encodings: list[Any] = tokenizer.encode_batch_fast(list(texts), add_special_tokens=False)
        return encodings

    def _encode_one(self, text: str) -> Any:
        """The ``tokenizers.Encoding`` of ``text``, without special tokens. A printable ASCII
        text that holds no added token (in any case) is lowercased here and encoded by the
        tokenizer without its ``BertNormalizer`` (:func:`_bare_tokenizer`): on such a text the
        normalizer only lowercases (ASCII letters, one character for one), so the encodings
        are equal, offsets included."""
        bare = self._bare
        if bare is not None and (lowered := self._lowered(text)) is not None:
            return bare.encode(lowered, add_special_tokens=False)
        return self._model.tokenizer.encode(text, add_special_tokens=False)

    def _lowered(self, text: str) -> str | None:
        """``text`` lowercased when :meth:`_encode_one` encodes it without the normalizer (a
        printable ASCII text holding no added token, and a tokenizer it applies to), else
        None."""
        if self._bare is not None and text.isascii() and text.isprintable():
            lowered = text.lower()
            if self._added is None or self._added.search(lowered) is None:
                return lowered
        return None

    def _token_ids(self, texts: Sequence[str]) -> list[list[int]]:
        """Each text's token ids: no special tokens, the model's unknown token dropped."""
        return [self._known(e.ids) for e in self._encode(texts)]

    def _known(self, ids: list[int]) -> list[int]:
        """``ids`` without the model's unknown token (as ``StaticModel.tokenize``)."""
        unknown = self._unknown
        if unknown is None or unknown not in ids:
            return ids
        return [i for i in ids if i != unknown]

    def _pool(self, token_ids: list[list[int]]) -> npt.NDArray[np.float32]:
        """The unit vectors of texts from their known token ids (at most the model's
        ``max_length`` of each kept): see :meth:`embed`. One array holds the texts' token
        offsets, then their tokens."""
        if self._max_tokens is not None:
            token_ids = [ids[: self._max_tokens] for ids in token_ids]
        lengths = list(map(len, token_ids))
        texts, tokens = len(lengths), sum(lengths)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        packed = np.fromiter(chain(accumulate(lengths, initial=0),
                                   chain.from_iterable(token_ids)),
                             dtype=np.int64, count=texts + 1 + tokens)
        offsets, index = packed[:texts + 1], packed[texts + 1:]
        rows = index if self._mapping is None else self._mapping[index].astype(np.int64)
        weights = (NO_WEIGHTS if self._weights is None
                   else self._weights[index].astype(np.float64))
        return pool_offsets(self._table, rows, weights, offsets)


class WordSession:
    """Embeds a run of related texts like :meth:`Model2VecEmbedder.embed`, bit for bit, reading
    the tokens of a text made of words (``\\w+`` runs joined by single spaces) from the
    encodings of texts it embedded earlier (:mod:`planner_svc.embed.words`): a word's tokens
    come from a text whose encoding shows them (:func:`~planner_svc.embed.words.word_tokens`),
    the encodings read lazily, longest text first, when a text is not yet made of known words.
    Any other text is tokenized (and its encoding kept for later texts).

    Args:
        embedder: the embedder whose tokenizer, table and pooling it uses.
        limit: the tokenizer's truncation length (a text of more tokens is tokenized).
    """

    def __init__(self, embedder: Model2VecEmbedder, limit: int) -> None:
        self._embedder = embedder
        self._limit = limit
        self.name: str = embedder.name
        self.dim: int = embedder.dim
        self._words: dict[str, list[int]] = {}  # word -> its known token ids
        self._counts: dict[str, int] = {}  # word -> its token count, unknown tokens included
        self._longest = 0  # the largest of those counts
        self._pending: list[tuple[str, Any]] = []  # (text, its encoding) not read yet

    def embed(self, texts: Sequence[str]) -> npt.NDArray[np.float32]:
        """As :meth:`Model2VecEmbedder.embed`."""
        embedder = self._embedder
        if len(texts) == 0:
            return np.zeros((0, self.dim), dtype=np.float32)
        composed = [self._compose(text) for text in texts]
        while self._pending and None in composed:
            self._pending.sort(key=lambda pending: len(pending[0]))
            self._read(*self._pending.pop())
            composed = [ids if ids is not None else self._compose(text)
                        for text, ids in zip(texts, composed, strict=True)]
        missing = [i for i, ids in enumerate(composed) if ids is None]
        if missing:
            encodings = embedder._encode([texts[i] for i in missing])
            for i, encoding in zip(missing, encodings, strict=True):
                composed[i] = embedder._known(encoding.ids)
                self._pending.append((texts[i], encoding))
        return embedder._pool([ids for ids in composed if ids is not None])

    def _compose(self, text: str) -> list[int] | None:
        """The known token ids of ``text`` from its words' tokens; None unless every word is
        known and the text is not truncated."""
        if not self._words:
            return None
        words = text.split(" ")
        try:
            ids = list(chain.from_iterable(map(self._words.__getitem__, words)))
        except KeyError:  # a word not known
            return None
        # the token count (unknown tokens included) is summed only when it may pass the limit
        if (len(words) * self._longest > self._limit
                and sum(map(self._counts.__getitem__, words)) > self._limit):
            return None
        return ids

    def _read(self, text: str, encoding: Any) -> None:
        """Learn the words whose tokens ``encoding`` (of ``text``) shows."""
        if encoding.overflowing or not local_characters(text):
            return
        embedder = self._embedder
        # lowercased and encoded without the normalizer (or, in a batch of more than 32
        # texts, by the full tokenizer, whose encodings carry no offsets: then None below)
        if embedder._lowered(text) is not None:
            found = ascii_word_tokens(text, encoding.ids, encoding.offsets)
        else:
            found = word_tokens(text, encoding.ids, encoding.offsets, encoding.word_ids)
        if found is None:
            return
        known, unknown = embedder._known, embedder._unknown
        words, counts = self._words, self._counts
        for word, ids in found.items():
            if word not in words:
                # known(ids), called only when the unknown token occurs (None never does)
                words[word] = ids if unknown not in ids else known(ids)
                counts[word] = len(ids)
        self._longest = max(self._longest, max(map(len, found.values()), default=0))
