"""Properties of exact token accounting with the repository tokenizer (hypothesis)."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from planner_svc.core.model import PlannedSpan, SpanClass, SpanRef
from planner_svc.core.plan import build_plan
from planner_svc.recall.tokens import default_counter

MODEL = "minilm-l6"
COUNTER = default_counter()

# Scripts a corpus mixes: Latin with accents, digits, punctuation, CJK, kana, Hangul, Cyrillic.
_ALPHABET = st.sampled_from(
    list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789")
    + list("éèüñçß.,;:!?()[]{}'\"-_/#@%&*+=<>|~")
    + list("中的人大国知识图谱证据规划日本語のテキストカタ한국어텍스트Привет")
    + [" ", "  ", "\n", "\t"]
)
TEXT = st.lists(_ALPHABET, max_size=80).map("".join)
ANY_TEXT = st.text(max_size=60)


def _count(text: str) -> int:
    n = COUNTER.count(MODEL, text)
    assert n is not None
    return n


@settings(max_examples=200, deadline=None)
@given(st.lists(ANY_TEXT, min_size=1, max_size=6))
def test_counts_add_up_across_whitespace(texts: list[str]) -> None:
    # Words never merge across whitespace, so spans joined by a newline cost exactly the sum of
    # their own counts: the evidence a prompt assembles costs what the plan says it used.
    assert _count("\n".join(texts)) == sum(_count(t) for t in texts)


@settings(max_examples=100, deadline=None)
@given(ANY_TEXT, st.integers(min_value=1, max_value=50))
@example("知识图谱 evidence planning " * 3, 50)  # 900 tokens: past the file's 512 cap
def test_counts_are_never_capped(text: str, copies: int) -> None:
    assert _count(" ".join([text] * copies)) == copies * _count(text)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.tuples(TEXT.filter(lambda t: t.strip() != ""),
                       st.floats(min_value=0.0, max_value=1.0),
                       st.integers(min_value=0, max_value=4)),
             min_size=1, max_size=30),
    st.integers(min_value=0, max_value=600),
    st.sampled_from([0.25, 0.4, 1.0]),
)
def test_selected_evidence_fits_the_budget_when_counted_by_the_tokenizer(
    items: list[tuple[str, float, int]], requested: int, max_frac: float
) -> None:
    pool = []
    for i, (text, weight, source) in enumerate(items):
        start = i * 1000
        pool.append(PlannedSpan(
            span=SpanRef(f"s{source}", 1, start, start + max(1, len(text.encode()))),
            kind="paragraph", span_class=SpanClass.TRUTH, weight=weight,
            tokens=_count(text), text=text,
        ))
    plan = build_plan(pool, requested_budget=requested,
                      context_window=COUNTER.context_window(MODEL), estimate_mode=False,
                      max_frac_per_source=max_frac, dedup_overlap=0.5)
    assert plan.budget == min(requested, 256)
    assert plan.stats.token_estimate is False
    assembled = "\n".join(s.text for s in plan.spans)
    assert _count(assembled) == plan.used <= plan.budget
