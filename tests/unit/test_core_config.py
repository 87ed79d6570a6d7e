"""SelectionSettings validation: out-of-range values are rejected (never clamped), naming the
field."""

from __future__ import annotations

import math
from typing import Any

import pytest

from planner_svc.core.config import SelectionSettings, check_ratio
from planner_svc.core.errors import ConfigError, InvalidRequest


def test_defaults() -> None:
    config = SelectionSettings()
    assert config.max_frac_per_source == 0.4
    assert config.dedup_overlap == 0.5
    assert config.cache_discount == 0.5
    assert config.default_budget_tokens == 6000


@pytest.mark.parametrize(
    ("kwargs", "field", "fragment"),
    [
        ({"max_frac_per_source": 1.5}, "max_frac_per_source", "got 1.5"),
        ({"max_frac_per_source": 0.0}, "max_frac_per_source", "(0, 1]"),
        ({"max_frac_per_source": -0.1}, "max_frac_per_source", "got -0.1"),
        ({"max_frac_per_source": math.nan}, "max_frac_per_source", "got nan"),
        ({"max_frac_per_source": math.inf}, "max_frac_per_source", "got inf"),
        ({"max_frac_per_source": "0.4"}, "max_frac_per_source", "must be a number"),
        ({"max_frac_per_source": True}, "max_frac_per_source", "must be a number"),
        ({"dedup_overlap": 1.0000001}, "dedup_overlap", "[0.0, 1.0]"),
        ({"dedup_overlap": -1e-300}, "dedup_overlap", "got -1e-300"),
        ({"cache_discount": 2.0}, "cache_discount", "got 2.0"),
        ({"cache_discount": -0.5}, "cache_discount", "got -0.5"),
        ({"kind_priors": {"heading": 10.5}}, "kind_priors.heading", "[0.0, 10.0]"),
        ({"kind_priors": {"code": -1.0}}, "kind_priors.code", "got -1.0"),
        ({"kind_priors": {"cell": math.nan}}, "kind_priors.cell", "got nan"),
        ({"default_budget_tokens": 0}, "default_budget_tokens", "positive integer, got 0"),
        ({"default_budget_tokens": -5}, "default_budget_tokens", "got -5"),
        ({"default_budget_tokens": 6000.0}, "default_budget_tokens", "got 6000.0"),
        ({"default_budget_tokens": True}, "default_budget_tokens", "got True"),
    ],
)
def test_out_of_range_is_rejected_naming_the_field(
    kwargs: dict[str, Any], field: str, fragment: str
) -> None:
    with pytest.raises(ConfigError) as info:
        SelectionSettings(**kwargs)
    assert info.value.field == field
    assert fragment in info.value.reason
    assert str(info.value).startswith(f"{field}: ")
    assert isinstance(info.value, InvalidRequest)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_frac_per_source": 1.0},
        {"max_frac_per_source": 5e-324},
        {"dedup_overlap": 0.0},
        {"dedup_overlap": 1.0},
        {"cache_discount": 0.0},
        {"cache_discount": 1.0},
        {"kind_priors": {"heading": 0.0, "paragraph": 10.0}},
        {"default_budget_tokens": 1},
        {"max_frac_per_source": 1},  # ints are numbers too
    ],
)
def test_boundaries_are_accepted_unchanged(kwargs: dict[str, Any]) -> None:
    config = SelectionSettings(**kwargs)
    for name, value in kwargs.items():
        got = getattr(config, name)
        assert (dict(got) if name == "kind_priors" else got) == value


def test_never_clamps_overrides() -> None:
    base = SelectionSettings()
    with pytest.raises(ConfigError) as info:
        base.with_overrides(dedup_overlap=1.2)
    assert info.value.field == "dedup_overlap"
    with pytest.raises(ConfigError) as info:
        base.with_overrides(max_frac_per_source=0.0)
    assert info.value.field == "max_frac_per_source"


def test_overrides_copy_and_keep_the_rest() -> None:
    base = SelectionSettings(cache_discount=0.25, kind_priors={"heading": 0.3})
    derived = base.with_overrides(max_frac_per_source=0.7)
    assert derived.max_frac_per_source == 0.7
    assert derived.dedup_overlap == 0.5
    assert derived.cache_discount == 0.25
    assert dict(derived.kind_priors) == {"heading": 0.3}
    assert base.max_frac_per_source == 0.4
    assert base.with_overrides() == base


def test_kind_priors_are_read_only_and_detached_from_the_callers_dict() -> None:
    priors = {"heading": 0.6}
    config = SelectionSettings(kind_priors=priors)
    priors["heading"] = 9.0
    assert config.kind_priors["heading"] == 0.6
    with pytest.raises(TypeError):
        config.kind_priors["heading"] = 1.0  # type: ignore[index]


def test_check_ratio_custom_range() -> None:
    check_ratio("x", 10.0, high=10.0)
    with pytest.raises(ConfigError) as info:
        check_ratio("x", 10.01, high=10.0)
    assert info.value.field == "x"
    assert info.value.reason == "must be in [0.0, 10.0], got 10.01"
