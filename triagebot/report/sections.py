"""The report's collapsed sections beyond the tables: speculative-decoding diagnostics,
why speculation is slower or faster, the step split, CUDA graphs, the vision encoder,
hints with their log lines, and the report held against the reporter's numbers.
"""

from __future__ import annotations

from dataclasses import dataclass
from statistics import median as stats_median
from typing import Any

from triagebot.analyze.against_report_models import LabelMatch
from triagebot.analyze.findings_models import Findings, Hint
from triagebot.plan.synthetic import NOTE
from triagebot.report import markdown as md
from triagebot.report.safe import Md, cell_text, interval, number, prose
from triagebot.report.step_chart import step_chart

ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}


@dataclass
class Limits:
    """How much of the long parts (evidence, scripts) one rendering keeps."""

    evidence_lines: int | None = None
    evidence_chars: int = 300
    script_chars: int | None = None
    scripts: bool = True
    details_note: str = ""


def chart(findings: Findings) -> Md:
    pairs = [(c.label, c.throughput.median) for c in findings.cells
             if c.throughput.median is not None]
    if not pairs:
        return Md("")
    labels = [f"{label} (n={c.throughput.n})" for (label, _), c in
              zip(pairs, [c for c in findings.cells if c.throughput.median is not None],
                  strict=True)]
    return Md(md.bar_chart("Median throughput per cell (tok/s)", labels,
                           [v for _, v in pairs if v is not None], "tok/s"))


def spec_lines(findings: Findings) -> list[Md]:
    out: list[Md] = []
    for c in findings.cells:
        acc = c.acceptance
        if acc is None or c.replica:
            continue
        pos = ", ".join(f"{p:.2f}" for p in acc.per_position) or "—"
        out.append(prose(
            f"{c.label}: acceptance rate {number(acc.acceptance_rate, '.1%')}, mean acceptance "
            f"length {number(acc.mean_acceptance_length)}, per position [{pos}] "
            f"({acc.num_drafts} drafts over {c.throughput.n} runs)"
            + (f"; note: {'; '.join(acc.notes)}" if acc.notes else ""), 800))
    for comp in findings.comparisons:
        r = comp.result
        if comp.step_cost is not None:
            out.append(prose(f"{comp.name}: {comp.step_cost.sentence} ({r.n_a} v {r.n_b} runs)",
                          600))
        if comp.explanation is not None:
            out.append(prose(f"{comp.name}: {comp.explanation.sentence} ({r.n_a} v {r.n_b} "
                          f"runs; tokens per step from {comp.explanation.source})", 600))
    for sf in findings.step_fits:
        f = sf.fit
        if f.ok and f.per_token_seconds is not None:
            fixed = (f"fixed overhead {f.fixed_seconds * 1e3:.2f} ms per step, "
                     if f.fixed_seconds is not None else "")
            out.append(prose(f"k sweep of {sf.method} under {sf.context} (k = "
                          f"{', '.join(map(str, f.ks))}): {fixed}{f.per_token_seconds * 1e3:.2f}"
                          f" ms per drafted token; R² {number(f.r_squared, '.3f')}", 600))
        else:
            out.append(prose(f"k sweep of {sf.method} under {sf.context}: no fit ({f.reason})"))
    for d in findings.divergence:
        if d.result.checked:
            out.append(prose(f"greedy outputs under {d.context}: {d.result.reason}"))
    return out


def why_view(findings: Findings) -> dict[str, Any] | None:
    """Per compared mode: which explanation of a slower speculation holds, the pinned
    arms' ratios and the break-even acceptance length (`analyze/synthetic.py`)."""
    modes = findings.pinned
    if not modes:
        return None
    notes = [prose(n, 600) for n in findings.notes if n.startswith(NOTE)]
    rows = []
    for m in modes:
        lo_hi = m.break_even_ci
        rows.append([
            prose(m.mode or "all cells", 80), Md(number(m.measured_length)),
            Md(number(m.measured_ratio, ".2f", "x")),
            Md(number(m.full_ratio, ".2f", "x") + interval(*(m.full_ci or (None, None)))),
            Md((number(m.reported_ratio, ".2f", "x") + interval(*(m.reported_ci or (None, None)))
                + f" at {m.reported_length:.2f}") if m.reported_length else "—"),
            Md(number(m.break_even) + interval(*(lo_hi or (None, None))))])
    sources = sorted({m.break_even_source for m in modes if m.break_even_source})
    return {"sentences": [prose(m.sentence, 600) for m in modes], "rows": rows, "notes": notes,
            "sources": [prose(f"break-even acceptance length from {src}", 400)
                        for src in sources]}


def encoder_lines(findings: Findings) -> list[Md]:
    """The multimodal encoder's forward time per request, per cell (mm-processor cells)."""
    out = []
    for c in findings.cells:
        e = c.encoder
        if e is None:
            continue
        runs = ", ".join(f"{ms:.2f}" for ms in e.encoder_forward_ms)
        pre = (f"; processor {stats_median(e.preprocessor_ms):.2f} ms per request"
               if e.preprocessor_ms else "")
        out.append(prose(f"{c.label}: encoder forward {stats_median(e.encoder_forward_ms):.2f} "
                      f"ms per request (median of the runs' means: {runs} ms; "
                      f"{e.encoder_calls} encoder calls in "
                      f"{len(e.encoder_forward_ms)} runs){pre}", 600))
    return out


def step_split_views(findings: Findings) -> list[dict[str, Any]]:
    """Per mode: its chart (spec cells, then the no-spec step) and what it says."""
    views = []
    for f in findings.step_splits:
        shown = [*f.cells, *([f.baseline] if f.baseline is not None else [])]
        title = "all cells" if f.context == "all cells" else f"under {f.context}"
        lines = [prose(s, 600) for s in f.sentences]
        lines += [prose(c.cudagraphs.sentence, 800) for c in shown if c.cudagraphs is not None]
        # A cell with no step split says why in its sentence; one split in part, here.
        lines += [prose(f"{c.cell_label}: {n}", 400) for c in shown if c.step_s is not None
                  for n in c.notes]
        chart = step_chart(title, shown) if any(c.step_s for c in shown) else ""
        views.append({"chart": Md(md.fence(chart, "text")) if chart else Md(""),
                      "lines": lines})
    return views


def graph_lines(findings: Findings) -> list[Md]:
    """Whether each cell of the graph axis ran CUDA graphs as labelled (GPU runners)."""
    return [Md(("**not as labelled** · " if g.flagged else "") + prose(g.sentence, 800))
            for g in findings.graphs]


@dataclass
class HintView:
    head: Md
    text: Md
    evidence: Md


def hint_views(findings: Findings, limits: Limits) -> list[HintView]:
    views = []
    for h in findings.hints:
        views.append(HintView(
            head=Md(f"{ICON[h.severity]} **{h.severity}** · {md.code_span(h.source)} · "
                    f"{md.inline(', '.join(dict.fromkeys(h.cells)), 300)}"),
            text=prose(h.text + (f" Related: {', '.join(h.related)}." if h.related else ""), 1200),
            evidence=Md(evidence(h, limits)),
        ))
    return views


def evidence(h: Hint, limits: Limits) -> str:
    lines = h.evidence if limits.evidence_lines is None else h.evidence[: limits.evidence_lines]
    if not lines:
        return ""
    text = "\n".join(md.shorten(ln, limits.evidence_chars) for ln in lines)
    if len(lines) < len(h.evidence):
        text += f"\n... ({len(h.evidence) - len(lines)} more lines left out for length)"
    return md.fence(text, "text")


def ours(m: LabelMatch) -> str:
    if not m.comparable:
        return "not comparable"
    unit = f" {m.ours_unit}" if m.ours_unit and m.ours_median is not None else ""
    return f"{number(m.ours_median)}{unit} (n={m.ours_n})"


def against_view(findings: Findings) -> dict[str, Any] | None:
    ar = findings.against_report
    if ar is None:
        return None
    labels = [[cell_text(m.label, 80), cell_text(f"{m.reported_tok_s:.2f} {m.reported_unit}"),
               cell_text(m.cell_label or "—"),
               cell_text(ours(m) if m.cell_id else "—"),
               cell_text(m.reason, 300)] for m in ar.labels]
    ratios = [prose(f"{r.comparison}: {r.sentence}; {r.reason}", 600) for r in ar.ratios]
    acc = [prose(a.sentence, 400) for a in ar.acceptance]
    env = [[Md(f.field), cell_text(f.reported or "—", 80), cell_text(f.ours or "—", 80),
            Md("differs" if f.differs else "same" if f.differs is False else "unknown")]
           for f in ar.env.fields]
    return {"labels": labels, "unmatched": [cell_text(u, 80) for u in ar.unmatched],
            "ratios": ratios, "acceptance": acc, "env": env,
            "env_sentence": prose(ar.env.sentence, 800)}

