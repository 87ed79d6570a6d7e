"""Plan hash v1: BLAKE3 over a fixed, language-neutral byte encoding of a plan.

Encoding (README.md, "Plan hash v1"), all integers big-endian:
plan_model (u32 byte length + UTF-8), budget (u64), used (u64), span count (u64), then per span
in canonical order: source_id (u32 length + UTF-8), source_version_tx (i64), start (u64),
end (u64), kind (u32 length + UTF-8), class (u8: 1 truth, 2 cache), weight (IEEE-754 bits as
u64), tokens (u64). Rendered ``b3:`` + 64 lowercase hex. Span text and stats are not hashed.
The raw weight bits make a one-ULP change visible (memory-planner seed, "Determinism and the
plan hash").
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Sequence

from blake3 import blake3

from planner_svc.core.model import PLAN_MODEL, PlannedSpan

_U32 = struct.Struct(">I")
_HEAD = struct.Struct(">QQQ")  # budget, used, span count
_SPAN_FIXED = struct.Struct(">qQQ")  # source_version_tx, start, end
_SPAN_TAIL = struct.Struct(">BdQ")  # class, weight (big-endian IEEE-754 = its bits as u64), tokens


@functools.lru_cache(maxsize=4096, typed=True)
def _str_field(value: str) -> bytes:
    """``value`` as the encoding writes a string: u32 byte length + UTF-8 (kept for the
    source ids and kinds plans repeat)."""
    raw = value.encode("utf-8")
    return _U32.pack(len(raw)) + raw


def encode_plan(plan_model: str, budget: int, used: int, spans: Sequence[PlannedSpan]) -> bytes:
    """The canonical byte encoding of a plan; ``spans`` must already be in canonical order.

    Raises:
        struct.error: when an integer does not fit its field (e.g. a negative offset).
    """
    out = bytearray(_str_field(plan_model))
    out += _HEAD.pack(budget, used, len(spans))
    text, fixed, tail = _str_field, _SPAN_FIXED.pack, _SPAN_TAIL.pack
    for planned in spans:
        ref = planned.span
        out += (text(ref.source_id) + fixed(ref.source_version_tx, ref.start, ref.end)
                + text(planned.kind) + tail(planned.span_class, planned.weight, planned.tokens))
    return bytes(out)


def plan_hash(plan_model: str, budget: int, used: int, spans: Sequence[PlannedSpan]) -> str:
    """``b3:`` + lowercase hex BLAKE3 of :func:`encode_plan`."""
    return "b3:" + blake3(encode_plan(plan_model, budget, used, spans)).hexdigest()


EMPTY_PLAN_HASH = plan_hash(PLAN_MODEL, 0, 0, ())
"""Hash of the empty plan (budget 0, used 0, no spans): what an ungrounded answer carries."""
