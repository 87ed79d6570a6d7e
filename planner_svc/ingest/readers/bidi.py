"""Visual -> logical order for one line of mixed left-to-right and right-to-left text.

A PDF places glyphs where they are seen: right-to-left script (Hebrew, Arabic) appears in
visual order once a line is read left to right. :func:`visual_to_logical` undoes that with the
reordering rule of the Unicode Bidirectional Algorithm (UAX #9, rule L2: reverse every maximal
run at level >= k, for k from the highest level down to 1), which is its own inverse once the
levels are known. Levels are resolved from the visual line, simplified:

- the line's base direction: the direction of its leftmost and rightmost strong characters
  when they agree (a left-to-right paragraph starts at the left edge, a right-to-left one at
  the right edge), else right-to-left when it has more strong right-to-left characters (bidi
  classes R, AL) than left-to-right ones (L), else left-to-right;
- left-to-right base: R/AL at level 1, L at 0; digits (EN, AN) at 2 when the nearest strong
  characters on both sides are right-to-left, else 0; neutrals (spaces, punctuation) at 1
  between two right-to-left neighbours (digits at level 2 count as such), else 0;
- right-to-left base: R/AL at 1, L and digits at 2; neutrals at 2 between two left-to-right
  neighbours, else 1 (the line's ends count as right-to-left).

Units are clusters (several characters a PDF maps from one glyph, such as a ligature) and move
as one. Ambiguous lines (digits between a left-to-right word and a right-to-left one) resolve
to left-to-right; mirrored brackets are not swapped.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

_R, _L, _D, _N = "R", "L", "D", "N"


def _direction(cluster: str) -> str:
    for ch in cluster:
        kind = unicodedata.bidirectional(ch)
        if kind in ("R", "AL"):
            return _R
        if kind == "L":
            return _L
        if kind in ("EN", "AN"):
            return _D
    return _N


def has_rtl(text: str) -> bool:
    """Whether ``text`` holds a strong right-to-left character (bidi class R or AL)."""
    return any(unicodedata.bidirectional(ch) in ("R", "AL") for ch in text)


def _nearest_strong(classes: list[str], start: int, step: int) -> str | None:
    i = start
    while 0 <= i < len(classes):
        if classes[i] in (_R, _L):
            return classes[i]
        i += step
    return None


def levels(clusters: Sequence[str]) -> list[int]:
    """Embedding level of each cluster of a visual line (module docstring)."""
    classes = [_direction(c) for c in clusters]
    strong = [c for c in classes if c in (_R, _L)]
    if strong and strong[0] == strong[-1]:
        rtl_base = strong[0] == _R
    else:
        rtl_base = classes.count(_R) > classes.count(_L)
    out: list[int] = []
    for i, kind in enumerate(classes):
        left = _nearest_strong(classes, i - 1, -1)
        right = _nearest_strong(classes, i + 1, 1)
        if not rtl_base:
            if kind == _R:
                out.append(1)
            elif kind == _D:
                out.append(2 if left == _R and right == _R else 0)
            elif kind == _N:
                out.append(1 if left == _R and right == _R else 0)
            else:
                out.append(0)
        elif kind == _R:
            out.append(1)
        elif kind in (_L, _D):
            out.append(2)
        else:
            out.append(2 if left == _L and right == _L else 1)
    return out


def visual_to_logical(clusters: Sequence[str]) -> str:
    """Logical text of a line given its clusters in visual (left-to-right) order."""
    order = list(clusters)
    lv = levels(order)
    for level in range(max(lv, default=0), 0, -1):
        i = 0
        while i < len(order):
            if lv[i] < level:
                i += 1
                continue
            j = i
            while j < len(order) and lv[j] >= level:
                j += 1
            order[i:j] = order[i:j][::-1]
            lv[i:j] = lv[i:j][::-1]
            i = j
    return "".join(order)
