"""The BM25 baseline: BM25 over whole documents, the top documents packed in rank order.

What a user would build first with an off-the-shelf keyword index: every source's canonical
text as of the evaluation time is one document, indexed with the ``bm25s`` library at its
default parameters (Lucene BM25, k1 = 1.5, b = 0.75), tokenized by its default tokenizer
(lower-cased words of two or more characters) without the English stop words of ``bm25s``'s own
list. A question's top :data:`TOP_DOCUMENTS` documents by score are packed whole in rank order,
a document that does not fit the remaining budget skipped and the next one tried
(:func:`planner_svc.evaluation.packing.pack_skipping`); tokens are counted with the planner's
estimator. Ties in score rank by source id; a document that shares no term with the question
(score 0) is not a hit and is never packed.

The index lives in memory for one evaluation run and nothing is written to disk: for the
10k-document demo corpus it builds in about 0.7 s (18 MB kept, 37 MB at peak) and answers a
question in about 1 ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from planner_svc.core.tokens import estimate_tokens
from planner_svc.evaluation.packing import Candidate

if TYPE_CHECKING:
    from planner_svc.store.open import AnyStore

TOP_DOCUMENTS = 200
"""Documents considered per question."""

STOPWORDS = "en"
"""``bm25s`` stop-word list: its English list."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Document:
    """One indexed document: a source's canonical text as of the index time.

    Attributes:
        source_id: the source.
        text: its whole canonical text.
        tokens: :func:`~planner_svc.core.tokens.estimate_tokens` of ``text``.
    """

    source_id: str
    text: str
    tokens: int


def documents_as_of(store: AnyStore, tx_us: int) -> list[Document]:
    """Every source's latest version recorded at or before ``tx_us`` (microseconds), ordered by
    source id; a source with no version then is left out."""
    docs: list[Document] = []
    for source_id, _title, latest_tx in store.iter_sources():
        version = latest_tx if latest_tx <= tx_us else store.version_as_of(source_id, tx_us)
        if version is None:
            continue
        text = store.source_text(source_id, version)
        if text is not None:
            docs.append(Document(source_id=source_id, text=text, tokens=estimate_tokens(text)))
    return docs


class Bm25Baseline:
    """A BM25 index over whole documents, built once and queried per question."""

    def __init__(self, documents: Sequence[Document]) -> None:
        """Index ``documents`` (ties in score later rank in this order)."""
        import bm25s
        from bm25s.tokenization import Tokenizer

        self._docs = tuple(documents)
        self._tokenizer = Tokenizer(stopwords=STOPWORDS)
        self._retriever: Any = None
        if self._docs:
            corpus = self._tokenizer.tokenize(
                [d.text for d in self._docs], return_as="tuple", show_progress=False
            )
            self._retriever = bm25s.BM25()
            self._retriever.index(corpus, show_progress=False)

    @classmethod
    def from_store(cls, store: AnyStore, *, tx_us: int) -> Bm25Baseline:
        """The index over :func:`documents_as_of` ``(store, tx_us)``."""
        return cls(documents_as_of(store, tx_us))

    @property
    def size(self) -> int:
        """Number of indexed documents."""
        return len(self._docs)

    def scores(self, question: str) -> Any:
        """BM25 score of every document for ``question``: float32 array of shape
        ``(size,)`` in document order; all zeros when no question term is indexed."""
        if self._retriever is None:
            return np.zeros(0, dtype=np.float32)
        ids = self._tokenizer.tokenize(
            [question], update_vocab=False, return_as="ids", show_progress=False,
            allow_empty=False,
        )[0]
        if not ids:
            return np.zeros(len(self._docs), dtype=np.float32)
        return self._retriever.get_scores_from_ids(ids)

    def ranked(self, question: str, *, top: int = TOP_DOCUMENTS) -> list[Document]:
        """Up to ``top`` documents with a positive score, best first, ties by document order."""
        scores = np.asarray(self.scores(question))
        order = np.lexsort((np.arange(len(scores)), -scores))[:top]
        return [self._docs[i] for i in order if scores[i] > 0]

    def candidates(self, question: str, *, top: int = TOP_DOCUMENTS) -> list[Candidate]:
        """:meth:`ranked` as packing candidates (one whole-document span each)."""
        return [Candidate(pieces=((d.source_id, d.text),), tokens=d.tokens)
                for d in self.ranked(question, top=top)]
