"""Token estimator and the budget rule (README.md, "Selection rules"; seed "Budget derivation")."""

from __future__ import annotations

import math

import pytest

from planner_svc.core.tokens import effective_budget, estimate_tokens

# A CJK fixture: one token per character is the rule the estimator must not undercut.
CJK_FIXTURE = "日本語の文章は、およそ一文字で一トークンとして数える。"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 1),
        ("abc", 1),
        ("abcd", 2),  # 4 / 3.6 = 1.11 -> 2
        ("hello", 2),
        ("x" * 18, 5),  # exactly 5.0: no float rounding may push it to 6
        ("x" * 19, 6),
        ("x" * 36, 10),
        ("x" * 37, 11),
        ("x" * 360, 100),
        ("x" * 3600, 1000),
        ("The quick brown fox jumps over the lazy dog.", 13),  # 44 bytes -> 12.2 -> 13
        ("line one\nline two\t\x00", 6),  # control characters are ASCII bytes too
    ],
)
def test_ascii(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("café", 2),  # 3 ASCII -> 1, plus 1 for é
        ("naïve café", 5),  # 8 ASCII -> 3, plus 2
        ("Grüße aus Köln", 7),  # 11 ASCII -> 4, plus 3
        ("Ça déménage à Noël", 9),  # 13 ASCII -> 4, plus 5
    ],
)
def test_accented_latin(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_accented_latin_counts_code_points_not_bytes() -> None:
    # "é" is one code point in NFC (2 UTF-8 bytes) but two in NFD (e + combining accent).
    assert estimate_tokens("\u00e9") == 1
    assert estimate_tokens("e\u0301") == 2


def test_cjk_fixture() -> None:
    assert len(CJK_FIXTURE) == 27
    assert estimate_tokens(CJK_FIXTURE) == 27
    assert estimate_tokens("東京は日本の首都です") == 10
    assert estimate_tokens("Tokyo (東京) is the capital.") == 9  # 24 ASCII -> 7, plus 2


def test_cjk_is_not_undercounted_like_a_flat_byte_ratio() -> None:
    flat = math.ceil(len(CJK_FIXTURE.encode("utf-8")) / 3.6)
    assert flat == 23  # 81 bytes: the flat ratio would claim fewer tokens than characters
    assert estimate_tokens(CJK_FIXTURE) > flat
    assert estimate_tokens(CJK_FIXTURE) >= len(CJK_FIXTURE)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("👍", 1),
        ("👍🏽", 2),  # base + skin tone modifier
        ("👨\u200d👩\u200d👧", 5),  # three people joined by two ZWJ
        ("ok 👍", 2),  # 3 ASCII -> 1, plus 1
    ],
)
def test_emoji(text: str, expected: int) -> None:
    assert estimate_tokens(text) == expected


def test_non_ascii_characters_add_to_the_ascii_estimate() -> None:
    a, b = "plain ascii text", "東京"
    assert estimate_tokens(a + b) == estimate_tokens(a) + estimate_tokens(b)


# ---- effective_budget ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("requested", "ctx", "estimate", "expected"),
    [
        (6000, None, False, 6000),  # no ceiling known, exact counts
        (6000, 8192, False, 4096),  # ceiling ctx / 2 wins
        (6000, 8193, False, 4096),  # ctx / 2 floored
        (6000, 128_000, False, 6000),  # config lower than the ceiling
        (6000, 12_000, False, 6000),  # equal to the ceiling
        (6000, None, True, 5400),  # x 0.9
        (6001, None, True, 5400),  # 5400.9 floored
        (6009, None, True, 5408),  # 5408.1 floored
        (6000, 8192, True, 3686),  # both: 4096 x 0.9 = 3686.4
        (6000, 8193, True, 3686),
        (1, None, True, 0),
        (0, None, False, 0),
        (0, 8192, True, 0),
        (6000, 0, False, 0),
        (6000, 1, False, 0),
        (6000, 3, True, 0),  # 1 x 0.9 floored
    ],
)
def test_effective_budget(requested: int, ctx: int | None, estimate: bool, expected: int) -> None:
    assert effective_budget(requested, ctx, estimate) == expected


def test_effective_budget_never_raises_past_request() -> None:
    for requested in (0, 1, 999, 6000, 10**12):
        for ctx in (None, 0, 7, 2 * requested, 10**13):
            for estimate in (False, True):
                assert effective_budget(requested, ctx, estimate) <= requested


def test_effective_budget_is_exact_for_large_values() -> None:
    # Integer arithmetic: a float product would lose the low digits of this value.
    big = 2**62 + 1
    assert effective_budget(big, None, True) == big * 9 // 10
    assert effective_budget(big, None, True) == 4150517416584649114


def test_effective_budget_rejects_negative_inputs() -> None:
    with pytest.raises(ValueError, match="requested budget must be >= 0, got -1"):
        effective_budget(-1, None, False)
    with pytest.raises(ValueError, match="context window must be >= 0, got -2"):
        effective_budget(10, -2, False)
