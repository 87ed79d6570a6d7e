"""The digest: the planner's whole view of a research session, bounded in size.

Source: the research planner reference ("Digest", "DeadEnd",
"SubQuestion"). The digest holds the question, the sub-questions with their lead, claim and
dead-end counts and answered flags, the proposals refused as duplicates of a sub-question
(:mod:`planner_svc.research.duplicates`), dead ends collapsed by cause (one example query each),
the number of live contradictions, session totals and the budget remaining. It never holds text
fetched by a lead: only the user's question, the planner's own wording (admitted or refused) and
the orchestrator's dead-end causes and queries.

Every public method takes one lock, so worker threads may record leads, claims and dead ends
concurrently without losing updates. :func:`render_digest` is pure and bounds the serialized
form by ``max_chars`` characters, compacting the least informative detail first.
"""

from __future__ import annotations

import re
import threading
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass, field

from planner_svc.core.errors import ConfigError
from planner_svc.research.duplicates import DuplicateRule, DuplicateScreen, wording_key

DEFAULT_DIGEST_CHARS = 4000
"""Default bound of the serialized digest, in characters (about 1k tokens).

Characters rather than tokens: the tokenizer differs per provider, and a bound that holds in
characters holds for every one of them."""

MIN_DIGEST_CHARS = 600
"""Smallest accepted ``max_chars``; the question itself must also fit in ``max_chars - 400``."""

_HEADER_RESERVE = 400
"""Characters kept for the header lines (totals, section titles) beside the question."""

_WS_RE = re.compile(r"\s+")


def normalize_text(text: str) -> str:
    """A wording tidied for display and comparison: NFKC, case-folded, whitespace collapsed,
    trailing ``?``, ``.``, ``!`` and surrounding whitespace removed.

    Sub-questions are told apart by :func:`~planner_svc.research.duplicates.wording_key` (which
    also ignores punctuation and word order) and the similar-meaning rule, not by this.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _WS_RE.sub(" ", folded).strip().rstrip("?.! ").strip()


@dataclass(frozen=True, slots=True, kw_only=True)
class SubQuestion:
    """One thread of the research, as of the moment it was read.

    Attributes:
        id: assigned by the digest (``q1``, ``q2``, ...), never by a model.
        text: the planner's wording.
        leads: leads dispatched against it.
        claims: claims reported for it. Leads without claims is a question asked badly.
        answered: closed by the planner (never inferred from ``claims``).
        dead_ends: its leads reported as dead ends (``leads - dead_ends`` leads either found
            claims or are still out).
    """

    id: str
    text: str
    leads: int = 0
    claims: int = 0
    answered: bool = False
    dead_ends: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class Duplicate:
    """A proposal refused because it repeats a sub-question.

    Attributes:
        text: the proposal as worded.
        of: the ID of the sub-question it repeats.
        rule: which rule matched.
        similarity: the pair's similarity in [0, 1] (1.0 for the same words).
        round: the round that refused it (0 = the initial decomposition).
    """

    text: str
    of: str
    rule: DuplicateRule
    similarity: float
    round: int


@dataclass(frozen=True, slots=True, kw_only=True)
class Admission:
    """What became of one round's proposals (:meth:`Digest.admit`), each in proposal order.

    Attributes:
        admitted: the new sub-questions, with their IDs.
        duplicates: the proposals refused as repeats (also recorded in the digest).
        cut: proposals that were new but came after the round's cap was reached.
        cap: the cap that applied.
    """

    admitted: tuple[SubQuestion, ...] = ()
    duplicates: tuple[Duplicate, ...] = ()
    cut: tuple[str, ...] = ()
    cap: int = 0


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadEnd:
    """Leads that produced nothing, collapsed by cause.

    Attributes:
        cause: machine-readable cause (``bot_block``, ``no_results``).
        count: dead ends recorded with this cause.
        example: the first query recorded with this cause, so a blocked route can be told
            apart from a badly phrased search.
    """

    cause: str
    count: int
    example: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DigestView:
    """An immutable snapshot of a :class:`Digest` (what providers and the renderer read).

    ``questions`` are in ID order; ``dead_ends`` by count descending, then cause;
    ``duplicates`` in the order they were refused. ``budget_remaining`` is a fraction in [0, 1]
    or ``None`` when not reported.
    """

    question: str
    questions: tuple[SubQuestion, ...]
    dead_ends: tuple[DeadEnd, ...]
    duplicates: tuple[Duplicate, ...]
    contradictions: int
    leads_run: int
    claims_found: int
    dead_end_total: int
    budget_remaining: float | None
    max_chars: int

    def open(self) -> tuple[SubQuestion, ...]:
        """The sub-questions not yet answered, in ID order."""
        return tuple(q for q in self.questions if not q.answered)


@dataclass(slots=True)
class _MutableQuestion:
    id: str
    text: str
    leads: int = 0
    claims: int = 0
    answered: bool = False
    dead_ends: int = 0


@dataclass(slots=True)
class _MutableDeadEnd:
    count: int
    example: str


@dataclass(slots=True)
class _State:
    questions: dict[str, _MutableQuestion] = field(default_factory=dict)
    duplicates: list[Duplicate] = field(default_factory=list)
    dead_ends: dict[str, _MutableDeadEnd] = field(default_factory=dict)
    next_id: int = 1
    contradictions: int = 0
    leads_run: int = 0
    claims_found: int = 0
    dead_end_total: int = 0
    budget_remaining: float | None = None


class Digest:
    """The planner's view of one session; every method is safe for concurrent use.

    Args:
        question: the original research question; never dropped by compaction.
        max_chars: bound of :meth:`render` in characters; ``>= MIN_DIGEST_CHARS`` and at least
            ``len(question) + 400``.
        screen: decides when a proposal repeats a sub-question; None = a screen without an
            embedder (same words, or the same content words), at the default threshold.

    Raises:
        ConfigError: ``max_chars`` out of range, or the question empty or too long for it.
    """

    def __init__(self, question: str, *, max_chars: int = DEFAULT_DIGEST_CHARS,
                 screen: DuplicateScreen | None = None) -> None:
        if max_chars < MIN_DIGEST_CHARS:
            raise ConfigError("max_chars", f"{max_chars} is below the minimum {MIN_DIGEST_CHARS}")
        if not question.strip():
            raise ConfigError("question", "must not be empty")
        if len(question) > max_chars - _HEADER_RESERVE:
            raise ConfigError(
                "question",
                f"{len(question)} characters; at most {max_chars - _HEADER_RESERVE} "
                f"fit a digest bounded by max_chars={max_chars}",
            )
        self._question = question
        self._max_chars = max_chars
        self._lock = threading.Lock()
        self._s = _State()
        self._screen = screen or DuplicateScreen()

    @property
    def question(self) -> str:
        """The original research question."""
        return self._question

    @property
    def max_chars(self) -> int:
        """Bound of the serialized form, in characters."""
        return self._max_chars

    def add_questions(self, texts: Iterable[str], *, round: int = 0) -> list[SubQuestion]:
        """Register proposed sub-questions without a cap; returns the ones newly added, with
        assigned IDs (see :meth:`admit`, which this is with no cap)."""
        return list(self.admit(texts, cap=None, round=round).admitted)

    def admit(self, texts: Iterable[str], *, cap: int | None, round: int) -> Admission:
        """Screen one round's proposals, in order, and register the new ones.

        IDs are ``q<n>`` numbered across the whole session, so two rounds can never collide
        (a model's own numbering restarts every batch and is never consulted: only text is
        accepted). Each proposal (whitespace collapsed) is, in this order:

        - dropped when it holds no word (it is not a question);
        - refused as a duplicate when it repeats a sub-question of the session, of any round
          or earlier in this batch (:class:`~planner_svc.research.duplicates.DuplicateScreen`);
          the refusal is recorded here (:attr:`DigestView.duplicates`);
        - cut when ``cap`` sub-questions were already admitted from this batch;
        - else admitted.

        Args:
            texts: the proposals, in the provider's order.
            cap: most sub-questions to admit; None = no cap.
            round: the round proposing them (0 = the initial decomposition), recorded with
                each refusal.
        """
        admitted: list[SubQuestion] = []
        duplicates: list[Duplicate] = []
        cut: list[str] = []
        with self._lock:
            for raw in texts:
                text = _WS_RE.sub(" ", raw).strip()
                if not wording_key(text):
                    continue
                match = self._screen.match(text)
                if match is not None:
                    dup = Duplicate(text=text, of=match.question_id, rule=match.rule,
                                    similarity=match.similarity, round=round)
                    self._s.duplicates.append(dup)
                    duplicates.append(dup)
                    continue
                if cap is not None and len(admitted) >= cap:
                    cut.append(text)
                    continue
                qid = f"q{self._s.next_id}"
                self._s.next_id += 1
                self._s.questions[qid] = _MutableQuestion(id=qid, text=text)
                self._screen.add(qid, text)
                admitted.append(SubQuestion(id=qid, text=text))
        return Admission(admitted=tuple(admitted), duplicates=tuple(duplicates), cut=tuple(cut),
                         cap=0 if cap is None else cap)

    def record_lead(self, question_id: str) -> None:
        """Note one lead dispatched against ``question_id``.

        Raises:
            KeyError: unknown ``question_id``.
        """
        with self._lock:
            self._get(question_id).leads += 1
            self._s.leads_run += 1

    def record_claims(self, question_id: str, n: int) -> None:
        """Note ``n >= 0`` claims found for ``question_id``.

        Raises:
            KeyError: unknown ``question_id``. ValueError: ``n < 0``.
        """
        if n < 0:
            raise ValueError(f"n: {n} claims; must be >= 0")
        with self._lock:
            self._get(question_id).claims += n
            self._s.claims_found += n

    def record_dead_end(self, cause: str, example_query: str,
                        question_id: str | None = None) -> None:
        """Note one lead that produced nothing; collapsed by ``cause``, first example kept, and
        counted on ``question_id`` when given.

        Raises:
            ValueError: empty ``cause``. KeyError: unknown ``question_id``.
        """
        cause = cause.strip()
        if not cause:
            raise ValueError("cause: must not be empty")
        with self._lock:
            if question_id is not None:
                self._get(question_id).dead_ends += 1
            entry = self._s.dead_ends.get(cause)
            if entry is None:
                self._s.dead_ends[cause] = _MutableDeadEnd(count=1, example=example_query)
            else:
                entry.count += 1
            self._s.dead_end_total += 1

    def mark_answered(self, question_id: str) -> bool:
        """Close a sub-question; returns False (and changes nothing) for an unknown ID."""
        with self._lock:
            q = self._s.questions.get(question_id)
            if q is None:
                return False
            q.answered = True
            return True

    def set_contradictions(self, live: int) -> None:
        """Replace the live contradiction count (current state, not history).

        Raises:
            ValueError: ``live < 0``.
        """
        if live < 0:
            raise ValueError(f"live: {live}; must be >= 0")
        with self._lock:
            self._s.contradictions = live

    def set_budget_remaining(self, fraction: float | None) -> None:
        """Replace the budget remaining: a fraction in [0, 1], or ``None`` for not reported.

        Raises:
            ValueError: fraction outside [0, 1] or not finite.
        """
        if fraction is not None and not 0.0 <= fraction <= 1.0:
            raise ValueError(f"fraction: {fraction}; allowed range [0, 1]")
        with self._lock:
            self._s.budget_remaining = fraction

    def complete(self) -> bool:
        """True when there is at least one sub-question and every one is answered."""
        with self._lock:
            qs = self._s.questions.values()
            return bool(qs) and all(q.answered for q in qs)

    def open(self) -> list[SubQuestion]:
        """Sub-questions still without an answer, in ID order."""
        return list(self.snapshot().open())

    def questions(self) -> list[SubQuestion]:
        """Every sub-question, in ID order."""
        return list(self.snapshot().questions)

    def get(self, question_id: str) -> SubQuestion:
        """One sub-question by ID. Raises KeyError for an unknown ID."""
        with self._lock:
            return _freeze(self._get(question_id))

    def snapshot(self) -> DigestView:
        """A consistent immutable copy of the whole digest."""
        with self._lock:
            s = self._s
            questions = tuple(
                _freeze(q) for q in sorted(s.questions.values(), key=lambda q: _id_key(q.id))
            )
            dead_ends = tuple(
                DeadEnd(cause=c, count=d.count, example=d.example)
                for c, d in sorted(s.dead_ends.items(), key=lambda kv: (-kv[1].count, kv[0]))
            )
            return DigestView(
                question=self._question,
                questions=questions,
                dead_ends=dead_ends,
                duplicates=tuple(s.duplicates),
                contradictions=s.contradictions,
                leads_run=s.leads_run,
                claims_found=s.claims_found,
                dead_end_total=s.dead_end_total,
                budget_remaining=s.budget_remaining,
                max_chars=self._max_chars,
            )

    def render(self) -> str:
        """The serialized digest, at most ``max_chars`` characters (see :func:`render_digest`)."""
        return render_digest(self.snapshot())

    def __str__(self) -> str:
        return self.render()

    def _get(self, question_id: str) -> _MutableQuestion:
        try:
            return self._s.questions[question_id]
        except KeyError:
            raise KeyError(f"question_id: unknown sub-question {question_id!r}") from None


def _freeze(q: _MutableQuestion) -> SubQuestion:
    return SubQuestion(id=q.id, text=q.text, leads=q.leads, claims=q.claims, answered=q.answered,
                       dead_ends=q.dead_ends)


def _id_key(qid: str) -> tuple[int, str]:
    digits = qid[1:]
    return (int(digits) if digits.isdigit() else 0, qid)


# --- serialization ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Detail:
    """How much detail one rendering keeps; each level of ``_LEVELS`` keeps less."""

    text_chars: int | None  # sub-question text limit; None = whole, 0 = omitted
    example_chars: int | None  # dead-end example limit; None = whole, 0 = omitted
    examples_for: int | None  # causes (largest first) that keep their example; None = all
    causes: int | None  # causes listed (largest first), the rest summarised; None = all
    answered: str  # "full" | "ids" | "count"
    open: str  # "full" | "ids" | "count"
    duplicates: int | None  # refused proposals listed (latest first); None = all, 0 = count


_LEVELS: tuple[_Detail, ...] = (
    _Detail(None, None, None, None, "full", "full", None),
    _Detail(200, 80, None, None, "full", "full", 20),
    _Detail(200, 80, 5, 10, "full", "full", 10),
    _Detail(200, 80, 5, 10, "ids", "full", 5),
    _Detail(80, 60, 3, 5, "ids", "full", 3),
    _Detail(80, 0, 0, 3, "count", "full", 0),
    _Detail(40, 0, 0, 0, "count", "full", 0),
    _Detail(0, 0, 0, 0, "count", "ids", 0),
    _Detail(0, 0, 0, 0, "count", "count", 0),
)
"""Compaction order: dead-end examples and older refused duplicates go first (least
informative), then rare causes, then the wording of answered sub-questions, then the wording of
open ones. The question and the totals line are in every level, and the last level always fits
(Digest's constructor checks it)."""


def render_digest(view: DigestView) -> str:
    """Serialize a digest snapshot for the planner, at most ``view.max_chars`` characters.

    Tries the levels of detail in ``_LEVELS`` from full to coarsest and returns the first that
    fits. Layout (one item per line)::

        QUESTION: <question>
        TOTALS: sub_questions=5 open=2 leads_run=9 claims_found=14 dead_ends=3
                contradictions=1 budget_remaining=0.40   (one line; budget omitted when unset)
        OPEN SUB-QUESTIONS:
        - q2 leads=3 claims=0 dead_ends=2: <text>   (dead_ends shown when > 0)
        ANSWERED SUB-QUESTIONS:
        - q1 leads=2 claims=6: <text>
        REFUSED AS DUPLICATES (do not propose again):
        - "<proposal>" repeats q1
        DEAD ENDS BY CAUSE:
        - bot_block x2, e.g. "<example query>"

    Deterministic: equal snapshots render to equal strings.
    """
    text = ""
    for detail in _LEVELS:
        text = _render(view, detail)
        if len(text) <= view.max_chars:
            return text
    # Unreachable for a Digest-made view (the constructor bounds the question), but the bound
    # is a promise: cut the coarsest rendering rather than return more than max_chars.
    return text[: view.max_chars]


def _clip(text: str, limit: int | None) -> str:
    if limit is None or len(text) <= limit:
        return text
    return text[: max(0, limit - 1)].rstrip() + "…"


def _render(view: DigestView, d: _Detail) -> str:
    open_qs = [q for q in view.questions if not q.answered]
    answered = [q for q in view.questions if q.answered]
    totals = (
        f"TOTALS: sub_questions={len(view.questions)} open={len(open_qs)} "
        f"leads_run={view.leads_run} claims_found={view.claims_found} "
        f"dead_ends={view.dead_end_total} contradictions={view.contradictions}"
    )
    if view.budget_remaining is not None and view.budget_remaining > 0:
        totals += f" budget_remaining={view.budget_remaining:.2f}"
    lines = [f"QUESTION: {view.question}", totals]
    lines.extend(_question_section("OPEN SUB-QUESTIONS", open_qs, d.open, d.text_chars))
    lines.extend(_question_section("ANSWERED SUB-QUESTIONS", answered, d.answered, d.text_chars))
    lines.extend(_duplicate_section(view, d))
    lines.extend(_dead_end_section(view, d))
    return "\n".join(lines)


def _question_section(
    title: str, qs: list[SubQuestion], mode: str, text_chars: int | None
) -> list[str]:
    if not qs:
        return []
    if mode == "count":
        return [f"{title}: {len(qs)} (detail omitted)"]
    if mode == "ids":
        return [f"{title}: " + " ".join(f"{q.id}({q.leads}/{q.claims})" for q in qs)]
    out = [f"{title}:"]
    for q in qs:
        head = f"- {q.id} leads={q.leads} claims={q.claims}"
        if q.dead_ends:
            head += f" dead_ends={q.dead_ends}"
        out.append(head if text_chars == 0 else f"{head}: {_clip(q.text, text_chars)}")
    return out


def _duplicate_section(view: DigestView, d: _Detail) -> list[str]:
    dups = view.duplicates
    if not dups:
        return []
    if d.duplicates is None:
        shown = dups
    else:
        shown = dups[len(dups) - d.duplicates :] if d.duplicates else ()
    out = ["REFUSED AS DUPLICATES (do not propose again):"] if shown else []
    limit = d.text_chars if d.text_chars else 80
    out.extend(f'- "{_clip(dup.text, limit)}" repeats {dup.of}' for dup in shown)
    rest = len(dups) - len(shown)
    if rest:
        label = "earlier " if shown else ""
        out.append(f"REFUSED AS DUPLICATES: {rest} {label}proposal(s) not listed")
    return out


def _dead_end_section(view: DigestView, d: _Detail) -> list[str]:
    if not view.dead_ends:
        return []
    listed = view.dead_ends if d.causes is None else view.dead_ends[: d.causes]
    out = ["DEAD ENDS BY CAUSE:"] if listed else []
    for rank, de in enumerate(listed):
        line = f"- {de.cause} x{de.count}"
        with_example = d.examples_for is None or rank < d.examples_for
        if with_example and d.example_chars != 0 and de.example:
            line += f', e.g. "{_clip(de.example, d.example_chars)}"'
        out.append(line)
    rest = view.dead_ends[len(listed) :]
    if rest:
        n = sum(de.count for de in rest)
        label = "other causes" if listed else "causes"
        out.append(f"DEAD ENDS: {len(rest)} {label} ({n} dead ends) not listed")
    return out
