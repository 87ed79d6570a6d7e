"""weigh(): score x kind prior, then x cache discount, in that order (seed "Exploding nodes to
spans")."""

from __future__ import annotations

import struct

from hypothesis import given
from hypothesis import strategies as st

from planner_svc.core.config import DEFAULT_KIND_PRIORS, SelectionSettings
from planner_svc.core.model import SpanClass
from planner_svc.core.weigh import prior_lookup, weigh


def bits(x: float) -> str:
    return struct.pack(">d", x).hex()


def test_truth_span_is_score_times_prior() -> None:
    config = SelectionSettings()
    assert weigh(0.8, "paragraph", SpanClass.TRUTH, config) == 0.8
    assert weigh(0.8, "heading", SpanClass.TRUTH, config) == 0.48
    assert weigh(0.5, "cell", SpanClass.TRUTH, config) == 0.45
    assert weigh(0.5, "code", SpanClass.TRUTH, config) == 0.45
    assert weigh(0.5, "body", SpanClass.TRUTH, config) == 0.5


def test_unknown_kind_gets_prior_one() -> None:
    config = SelectionSettings(kind_priors={"heading": 0.6})
    assert weigh(0.37, "table-of-contents", SpanClass.TRUTH, config) == 0.37
    # "paragraph" is absent from this config's priors: 1.0, not the default table's value.
    assert weigh(0.37, "paragraph", SpanClass.TRUTH, config) == 0.37


def test_cache_discount_applies_only_to_cache_class() -> None:
    config = SelectionSettings(cache_discount=0.25)
    assert weigh(0.8, "paragraph", SpanClass.CACHE, config) == 0.2
    assert weigh(0.8, "paragraph", SpanClass.TRUTH, config) == 0.8
    default = SelectionSettings()
    assert default.cache_discount == 0.5
    assert weigh(0.9, "body", SpanClass.CACHE, default) == 0.45


def test_cache_discount_zero_gives_zero_weight() -> None:
    config = SelectionSettings(cache_discount=0.0)
    assert weigh(0.9, "heading", SpanClass.CACHE, config) == 0.0


def test_association_order_is_score_times_prior_then_discount() -> None:
    # (0.11 * 0.6) * 0.3 and 0.11 * (0.6 * 0.3) are different doubles; the former is the rule.
    config = SelectionSettings(cache_discount=0.3)
    w = weigh(0.11, "heading", SpanClass.CACHE, config)
    assert bits(w) == "3f94467381d7dbf5"
    assert w == 0.0198
    assert w != 0.11 * (0.6 * 0.3)
    assert bits(0.11 * (0.6 * 0.3)) == "3f94467381d7dbf4"


def test_default_priors_table() -> None:
    assert dict(DEFAULT_KIND_PRIORS) == {
        "paragraph": 1.0,
        "cell": 0.9,
        "code": 0.9,
        "body": 1.0,
        "heading": 0.6,
    }
    assert dict(SelectionSettings().kind_priors) == dict(DEFAULT_KIND_PRIORS)


@given(score=st.floats(min_value=0.0, max_value=1.0),
       kind=st.sampled_from(["paragraph", "cell", "code", "body", "heading", "figure", ""]),
       priors=st.dictionaries(st.sampled_from(["paragraph", "cell", "heading", "figure"]),
                              st.floats(min_value=0.0, max_value=10.0), max_size=4))
def test_the_prior_lookup_gives_weighs_truth_weight_bit_for_bit(
        score: float, kind: str, priors: dict[str, float]) -> None:
    for config in (SelectionSettings(), SelectionSettings(kind_priors=priors)):
        inlined = score * prior_lookup(config)(kind, 1.0)
        assert bits(inlined) == bits(weigh(score, kind, SpanClass.TRUTH, config))
