"""The demo corpus: fetched for ``make demo`` and the development questions, never needed in
production.

Public surface: :func:`fetch_corpus` and the corpus constants of :mod:`planner_svc.demo.corpus`.
"""

from planner_svc.demo.corpus import CORPUS_TIME_US, DEFAULT_CACHE, fetch_corpus, wiki_source_id

__all__ = ["CORPUS_TIME_US", "DEFAULT_CACHE", "fetch_corpus", "wiki_source_id"]
