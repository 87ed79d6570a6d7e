"""The span-text cache in front of the store: same answers, fewer reads, bounded memory."""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest

from planner_svc.core.config import SelectionSettings
from planner_svc.core.model import CoordKey, SpanRef
from planner_svc.recall.planner import EvidencePlanner
from planner_svc.recall.request import EvidenceQuery, StructuredLeg
from planner_svc.recall.span_texts import SpanTexts
from planner_svc.store import NodeWrite, Store

TEXT = "Paris is the capital of France. Lyon lies on the Rhone."


class CountingSource:
    """Texts of ``source@1``'s spans (0 <= start <= end <= len, ASCII); records each read."""

    def __init__(self, text: str = TEXT) -> None:
        self.text = text
        self.reads: list[list[CoordKey]] = []

    def canonical_slices(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        keys = list(keys)
        self.reads.append(keys)
        return {k: self.text[k[2]:k[3]] for k in keys
                if k[:2] == ("source", 1) and 0 <= k[2] <= k[3] <= len(self.text)}


def key(start: int, end: int) -> CoordKey:
    return ("source", 1, start, end)


def entry_bytes(text: str) -> int:
    cache = SpanTexts(CountingSource(text), max_bytes=10**9)
    cache.slices([key(0, len(text))])
    return cache.kept_bytes


def test_answers_like_the_source_and_reads_each_kept_span_once() -> None:
    source = CountingSource()
    cache = SpanTexts(source)
    keys = [key(0, 5), key(32, 36), ("other", 1, 0, 3), key(50, 999)]
    first = cache.slices(keys)
    assert first == source.canonical_slices(keys) == {key(0, 5): "Paris", key(32, 36): "Lyon"}
    source.reads.clear()
    assert cache.slices(keys) == first
    # only the unsliceable keys are asked again: absent answers are never kept
    assert source.reads == [[("other", 1, 0, 3), key(50, 999)]]
    assert len(cache) == 2


def test_a_call_whose_spans_are_all_kept_reads_nothing() -> None:
    source = CountingSource()
    cache = SpanTexts(source)
    cache.slices([key(0, 5), key(6, 8)])
    source.reads.clear()
    assert cache.slices([key(6, 8), key(0, 5), key(6, 8)]) == {key(0, 5): "Paris",
                                                               key(6, 8): "is"}
    assert source.reads == []


def test_the_least_recently_used_text_is_evicted_first_within_the_bound() -> None:
    size = entry_bytes("Paris")  # every text below is 5 characters
    source = CountingSource()
    cache = SpanTexts(source, max_bytes=2 * size)
    cache.slices([key(0, 5)])   # "Paris"
    cache.slices([key(6, 11)])  # "is th"
    cache.slices([key(0, 5)])   # used again: now the most recent
    cache.slices([key(32, 37)])  # "Lyon " evicts "is th"
    assert cache.kept_bytes == 2 * size
    source.reads.clear()
    cache.slices([key(0, 5), key(32, 37)])
    assert source.reads == []
    cache.slices([key(6, 11)])
    assert source.reads == [[key(6, 11)]]
    assert cache.kept_bytes <= 2 * size


def test_the_bound_counts_the_text_object_and_the_entry() -> None:
    text = "x" * 1000
    assert entry_bytes(text) >= sys.getsizeof(text) > 1000


def test_a_text_larger_than_the_bound_is_served_but_not_kept() -> None:
    source = CountingSource()
    cache = SpanTexts(source, max_bytes=entry_bytes("Par") + 1)
    assert cache.slices([key(0, 30)]) == {key(0, 30): TEXT[:30]}
    assert len(cache) == 0 and cache.kept_bytes == 0
    cache.slices([key(0, 3)])
    assert len(cache) == 1


def test_zero_bytes_keeps_nothing() -> None:
    source = CountingSource()
    cache = SpanTexts(source, max_bytes=0)
    cache.slices([key(0, 5)])
    cache.slices([key(0, 5)])
    assert len(source.reads) == 2 and len(cache) == 0


def test_a_negative_bound_is_refused() -> None:
    with pytest.raises(ValueError, match="max_bytes"):
        SpanTexts(CountingSource(), max_bytes=-1)


def test_threads_sharing_the_cache_get_the_source_texts_and_keep_the_bound() -> None:
    source = CountingSource("abcdefghij" * 20)
    bound = 20 * entry_bytes("abcd")
    cache = SpanTexts(source, max_bytes=bound)
    keys = [key(i, i + 4) for i in range(150)]
    expected = source.canonical_slices(keys)
    errors: list[str] = []

    def work(offset: int) -> None:
        for n in range(300):
            wanted = [keys[(offset + n * 7 + j) % len(keys)] for j in range(5)]
            got = cache.slices(wanted)
            if got != {k: expected[k] for k in wanted}:
                errors.append(f"{wanted}: {got}")

    threads = [threading.Thread(target=work, args=(t * 13,)) for t in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    assert 0 < cache.kept_bytes <= bound


def test_over_a_real_store_the_texts_are_the_stores(tmp_path: Path) -> None:
    text = "Zürich liegt am See.\n\nGenève est au bord du lac."
    with Store.open(tmp_path / "data") as store:
        store.put_source_version("swiss", text, title="swiss", media_type="text/plain",
                                 tx_us=10)
        raw = text.encode("utf-8")
        keys = [("swiss", 10, 0, raw.index(b".") + 1), ("swiss", 10, 1, 3),
                ("swiss", 10, 2, 4),  # starts inside "ü"
                ("swiss", 11, 0, 4)]  # no such version
        cache = SpanTexts(store)
        assert cache.slices(keys) == store.canonical_slices(keys) == {
            keys[0]: "Zürich liegt am See.", keys[1]: "ü"}
        assert cache.slices(keys) == store.canonical_slices(keys)


class CountingStore:
    """A store whose span-text reads are recorded (everything else passes through)."""

    def __init__(self, store: Store) -> None:
        self._store = store
        self.text_reads: list[list[CoordKey]] = []

    def canonical_slices(self, keys: Iterable[CoordKey]) -> dict[CoordKey, str]:
        keys = list(keys)
        self.text_reads.append(keys)
        return self._store.canonical_slices(keys)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._store, name)


def test_a_plan_cites_kept_texts_and_equals_the_plan_read_from_the_store(
    tmp_path: Path,
) -> None:
    cities = "Paris is the capital of France.\n\nLyon lies on the Rhone."
    with Store.open(tmp_path / "data") as store:
        store.put_source_version("cities", cities, title="cities", media_type="text/plain",
                                 tx_us=10)
        spans = [(0, 31), (33, 56)]
        store.add_spans("cities", 10, [(a, b, "paragraph") for a, b in spans])
        store.write_nodes(
            [NodeWrite(node_id=f"cities:{i}", text=cities.encode()[a:b].decode(),
                       labels=("passage",), provenance=(SpanRef("cities", 10, a, b),),
                       valid_from_us=1)
             for i, (a, b) in enumerate(spans)],
            tx_us=10,
        )
        query = EvidenceQuery(
            structured=StructuredLeg(text="Paris capital Lyon"), semantic=None, expand_depth=0,
            at_valid_us=5, at_tx_us=100, budget_tokens=1000, model="", allow_ungrounded=False,
            explain=True, max_frac_per_source=1.0, dedup_overlap=0.5,
        )
        counting = CountingStore(store)
        kept = EvidencePlanner(counting, index=None, embedder=None,  # type: ignore[arg-type]
                               config=SelectionSettings())
        uncached = EvidencePlanner(store, index=None, embedder=None, config=SelectionSettings(),
                                   span_text_bytes=0)
        first = kept.plan(query).plan
        reads = len(counting.text_reads)
        second = kept.plan(query).plan
        assert len(counting.text_reads) == reads  # the second plan read no text
        plain = uncached.plan(query).plan
        assert first == second == plain
        assert [s.text for s in first.spans] == ["Paris is the capital of France.",
                                                 "Lyon lies on the Rhone."]
        assert [e.candidate.text for e in first.explanations] == [s.text for s in first.spans]


def test_a_key_asked_twice_in_one_call_is_read_once() -> None:
    source = CountingSource()
    cache = SpanTexts(source)
    assert cache.slices([key(0, 5), key(32, 36), key(0, 5)]) == {key(0, 5): "Paris",
                                                                  key(32, 36): "Lyon"}
    assert source.reads == [[key(0, 5), key(32, 36)]]
