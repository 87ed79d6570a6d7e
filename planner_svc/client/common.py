"""What the gRPC clients share: the default request for a question, plan rendering, and
waiting for a server to serve (the address and token: :mod:`planner_svc.client.connection`).

Shared by ``planner-svc plan``, ``eval`` and ``research`` (and the demo and benchmarks) so every
client asks the same way.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Sequence
from typing import Any

import grpc
from grpc_health.v1 import health_pb2, health_pb2_grpc

from planner_svc.api.planner.v1 import plan_pb2
from planner_svc.core.model import Location
from planner_svc.recall.request import QUESTION_EXPAND_DEPTH

__all__ = [
    "FATE_NAMES",
    "NotServing",
    "location_text",
    "question_request",
    "render_explanations",
    "render_plan",
    "render_recall",
    "render_timings",
    "wait_serving",
]

FATE_NAMES = {
    plan_pb2.CANDIDATE_FATE_PACKED: "packed",
    plan_pb2.CANDIDATE_FATE_DEDUPED: "deduped",
    plan_pb2.CANDIDATE_FATE_UNPACKABLE: "unpackable",
    plan_pb2.CANDIDATE_FATE_BUDGET_FULL: "budget full",
    plan_pb2.CANDIDATE_FATE_CAP_BLOCKED: "cap blocked",
}
"""How ``--explain`` names each candidate fate."""


def question_request(
    question: str,
    *,
    budget_tokens: int | None = None,
    expand_depth: int = QUESTION_EXPAND_DEPTH,
    k: int = 0,
    limit: int = 0,
    model: str = "",
    at_valid_us: int | None = None,
    at_tx_us: int | None = None,
    allow_ungrounded: bool = False,
    explain: bool = False,
    max_frac_per_source: float | None = None,
) -> plan_pb2.PlanRequest:
    """The default request for a natural-language question: the question once (both recall
    legs search with it) and one hop of expansion.

    ``k`` / ``limit`` of 0 take the server defaults (a leg message is sent only to carry a
    non-zero one); budget None and ``max_frac_per_source`` None (the per-source cap, a fraction
    of the budget in (0, 1]) take the server's. With the defaults it is the wire form
    of :func:`planner_svc.recall.request.question_query`.
    """
    request = plan_pb2.PlanRequest(
        question=question,
        structured=plan_pb2.StructuredRecall(limit=limit) if limit else None,
        semantic=plan_pb2.SemanticRecall(k=k) if k else None,
        expand_depth=expand_depth,
        model=model,
        allow_ungrounded=allow_ungrounded,
        explain=explain,
    )
    if max_frac_per_source is not None:
        request.max_frac_per_source = max_frac_per_source
    if budget_tokens is not None:
        request.budget_tokens = budget_tokens
    if at_valid_us is not None:
        request.at_valid = at_valid_us
    if at_tx_us is not None:
        request.at_tx = at_tx_us
    return request


def _clip(text: str, width: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: max(0, width - 1)] + "…"


def location_text(span: plan_pb2.PlannedSpan) -> str:
    """The span's location on one line (``p. 2 · Swarm control``, ``Varroa › Monitoring``,
    ``cell 3``); empty when the plan carries none."""
    if not span.HasField("location"):
        return ""
    where = span.location
    return Location(
        page=where.page if where.HasField("page") and where.page > 0 else None,
        heading_path=tuple(where.heading_path),
        cell_index=where.cell_index if where.HasField("cell_index") else None,
    ).render()


def render_plan(plan: plan_pb2.EvidencePlan, *, width: int | None = None) -> str:
    """A readable table: source, kind, location (page, heading path, notebook cell), tokens,
    weight, text (one line per span), then totals."""
    st = plan.stats
    if not plan.spans and plan.budget == 0 and st.pool_spans == 0:  # the ungrounded plan
        return "\n".join([
            f"plan {plan.plan_hash}  empty: no span to cite (the ungrounded plan "
            "--allow-ungrounded asks for when recall declines or finds nothing)",
            _recall_line(st),
        ])
    width = width or shutil.get_terminal_size((120, 24)).columns
    rows = [("source", "kind", "location", "tokens", "weight", "text")]
    for s in plan.spans:
        rows.append((s.span.source_id, s.kind, location_text(s), str(s.tokens),
                     f"{s.weight:.4f}", s.text))
    src_w = min(40, max(len(r[0]) for r in rows))
    kind_w = max(len(r[1]) for r in rows)
    where_w = min(40, max(len(r[2]) for r in rows))
    fixed = src_w + kind_w + where_w + 6 + 8 + 10
    text_w = max(20, width - fixed)
    lines = []
    for src, kind, where, tokens, weight, text in rows:
        lines.append(
            f"{_clip(src, src_w):<{src_w}}  {kind:<{kind_w}}  {_clip(where, where_w):<{where_w}}"
            f"  {tokens:>6}  {weight:>6}  {_clip(text, text_w)}"
        )
    lines.append("")
    lines.append(
        f"plan {plan.plan_hash}  used {plan.used}/{plan.budget} tokens  "
        f"{st.selected_spans}/{st.pool_spans} spans  deduped {st.deduped}  "
        f"skipped: unpackable {st.skipped_unpackable}, budget full {st.skipped_budget_full}, "
        f"cap {st.cap_skipped}  stranded by cap {st.budget_stranded_by_cap}"
        + ("  (token estimate)" if st.token_estimate else "")
    )
    if st.budget_stranded_by_cap * 4 >= max(plan.budget, 1):
        lines.append(_stranded_note(st, plan.budget))
    lines.append(_recall_line(st))
    return "\n".join(lines)


def _stranded_note(st: plan_pb2.PlanStats, budget: int) -> str:
    """Advice when a quarter of the budget or more is left unused and the per-source cap
    refused a span that would have fit it (``budget_stranded_by_cap``: the unused budget
    then): a span larger than the cap (``cap_tokens``) is never selected, however
    relevant."""
    return (f"note: {st.budget_stranded_by_cap} of {budget} tokens unused, and the "
            f"per-source cap ({st.cap_tokens} tokens a source) refused {st.cap_skipped} "
            "span(s), one at least that would have fit the budget; a span larger than the cap "
            "is never selected: raise --max-frac-per-source (or --budget, which scales the "
            "cap)")


def _recall_line(st: plan_pb2.PlanStats) -> str:
    return (f"recall: {st.nodes_recalled} passages scored; documents by the structured leg "
            f"{st.structured_hits}, by hops {st.expanded_hits}; semantic neighbours "
            f"{st.semantic_hits}")


def render_recall(trace: plan_pb2.RecallTrace, *, documents: int = 12) -> str:
    """The abstention decision and the best ``documents`` candidate documents with their
    scores (aligned columns). A similarity the decision did not count (no document holds a
    term of the question) is marked so."""
    lines = []
    if trace.HasField("abstention"):
        a = trace.abstention
        similarity = f"{a.similarity:.3f}" if a.HasField("similarity") else "n/a"
        verdict = "declined" if a.declined else "answered"
        # With no document holding a term of the question, the similarity does not count
        # (recall.planner.Abstention): say so where it alone would have cleared its minimum.
        ignored = (a.declined and not a.best_source and a.HasField("similarity")
                   and a.similarity >= a.min_similarity)
        lines.append(
            f"abstention: {verdict}: coverage {a.coverage:.3f} (min {a.min_coverage:.2f}, "
            f"{a.best_source or 'no document'}), similarity {similarity} "
            f"(min {a.min_similarity:.2f}"
            + ("; not counted: no document holds a term of the question)" if ignored else ")")
        )
    lines.append(f"{'score':>6} {'struct':>6} {'sem':>6} {'hop':>6}  document")
    for d in trace.documents[:documents]:
        line = (f"{d.score:>6.3f} {d.structured:>6.3f} {d.semantic:>6.3f} {d.hop:>6.3f}  "
                f"{d.source_id}")
        provenance = _provenance(d)
        if provenance:
            line += f"  ({provenance})"
        lines.append(line)
    hidden = len(trace.documents) - documents
    if hidden > 0:
        lines.append(f"... {hidden} more documents")
    return "\n".join(lines)


def _provenance(d: plan_pb2.DocumentScore) -> str:
    """What ranked a candidate document, for its line of :func:`render_recall`: empty for its
    direct scores alone; ``hop from X; residual ...`` when a hop ranked it (its hop score is its
    score: recall takes the hop when it is at least the direct score, and ranks the document's
    passages on the residual terms); ``direct; also a hop from X`` when its direct scores ranked
    it and a hop reached it too."""
    if not d.hop_from:
        return ""
    if d.hop >= d.score:
        residual = f"; residual {' '.join(d.residual_terms)}" if d.residual_terms else ""
        return f"hop from {d.hop_from}{residual}"
    return f"direct; also a hop from {d.hop_from}"


def render_timings(timings: Sequence[plan_pb2.StageTiming]) -> str:
    """Each stage's wall time in milliseconds, in the order the stages ran, and their total."""
    total = sum(t.duration_us for t in timings)
    lines = [f"stages (ms, {total / 1000:.2f} in all):"]
    lines.extend(f"{t.stage:>12} {t.duration_us / 1000:>8.2f}" for t in timings)
    return "\n".join(lines)


def render_explanations(plan: plan_pb2.EvidencePlan, *, width: int | None = None,
                        others: int | None = None) -> str:
    """The candidates with their fate, legs and scores, densest first (equal densities in the
    order the plan gives them), in aligned columns (density and weight in scientific
    notation: most candidates' are far below 0.001).

    Args:
        width: the terminal's columns (default: the terminal's, else 120); longer lines are
            clipped.
        others: how many candidates the plan did not pack to list, the densest (None: all);
            every packed candidate is listed. The ones left out are counted on a last line,
            by fate.

    Raises:
        ValueError: ``others`` is negative.
    """
    if others is not None and others < 0:
        raise ValueError(f"others must be >= 0, got {others}")
    width = width or shutil.get_terminal_size((120, 24)).columns
    header = (f"{'fate':<12} {'density':>9} {'weight':>9} {'tokens':>6}  "
              f"{'struct/sem/hop':<17}  {'local':>5} {'rank':>4}  span")
    out = [header]
    ordered = sorted(plan.explanations, key=lambda e: -e.density)
    hidden: Counter[int] = Counter()
    listed = 0
    for e in ordered:
        if e.fate != plan_pb2.CANDIDATE_FATE_PACKED and others is not None:
            if listed >= others:
                hidden[e.fate] += 1
                continue
            listed += 1
        c = e.candidate
        legs = e.legs
        leg_txt = "/".join(
            f"{getattr(legs, name):.3f}" if legs.HasField(name) else "-"
            for name in ("structured", "semantic", "expanded")
        )
        ref = f"{c.span.source_id}[{c.span.start}:{c.span.end}]"
        line = (
            f"{FATE_NAMES.get(e.fate, '?'):<12} {e.density:>9.3e} {c.weight:>9.3e} "
            f"{c.tokens:>6}  {leg_txt:<17}  {legs.local:>5.3f} {legs.rank:>4}  {ref}"
        )
        if e.HasField("deduped_by"):
            d = e.deduped_by
            line += f" (by [{d.start}:{d.end}])"
        out.append(line if len(line) <= width else line[: max(40, width) - 1] + "…")
    if hidden:
        total = sum(hidden.values())
        parts = [f"{hidden[fate]} {name}" for fate, name in FATE_NAMES.items() if hidden[fate]]
        unknown = total - sum(hidden[fate] for fate in FATE_NAMES)
        if unknown:  # a fate this client does not name (unset, or newer than it)
            parts.append(f"{unknown} ?")
        out.append(f"... {total} more candidate{'s' if total != 1 else ''} "
                   f"({', '.join(parts)})")
    return "\n".join(out)


class NotServing(RuntimeError):
    """A server process exited, or did not report SERVING in time."""


def wait_serving(address: str, proc: subprocess.Popen[Any], timeout_s: float) -> None:
    """Block until the health service at ``address`` reports SERVING.

    ``proc`` is the server process: its exit ends the wait at once.

    Raises:
        NotServing: the process exited, or ``timeout_s`` seconds passed.
    """
    deadline = time.monotonic() + timeout_s
    with grpc.insecure_channel(address) as channel:
        stub = health_pb2_grpc.HealthStub(channel)
        while time.monotonic() < deadline:
            if proc.poll() is not None:
                raise NotServing(f"server exited with code {proc.returncode} before serving")
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1.0)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError:
                pass
            time.sleep(0.2)
    raise NotServing(f"server at {address} not serving after {timeout_s:.0f} s")
