"""Findings -> one markdown comment: the report the CLI prints and the bot posts.

The layout lives in `templates/report.md.j2`. Everything the template prints is built
here and passes through `markdown.py` first; the jinja environment's `finalize` refuses
any value that did not, so a template edit cannot print raw user-derived text.

The comment always fits GitHub's 65,536-character limit: when it would not, evidence
lines and scripts are shortened first, then scripts are left out, then evidence, and as
a last resort the text is cut at a line with its open blocks closed; the report says
which of these happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from statistics import median as stats_median
from typing import Any

import jinja2

from triagebot.analyze.against_report_models import LabelMatch
from triagebot.analyze.findings_models import Findings, Hint
from triagebot.analyze.findings_outcome import outcome_word
from triagebot.analyze.looks import DESIGN_EFFECT, DESIGN_POWER
from triagebot.model import Plan
from triagebot.plan.synthetic import NOTE
from triagebot.render import RenderedScript
from triagebot.report import first_screen
from triagebot.report import markdown as md
from triagebot.report.step_chart import step_chart
from triagebot.templating import strict_environment

__all__ = ["MAX_CHARS", "Md", "render_report"]

MAX_CHARS = 65_536
TARGET_CHARS = 65_000  # margin for the GitHub client's own newline handling
_ICON = {"error": "❌", "warning": "⚠️", "info": "ℹ️"}


class Md(str):
    """Text already made safe for the spot the template prints it in."""

    __slots__ = ()


class UnsafeReportValue(ValueError):
    """A template printed a value that did not pass a markdown helper."""


def _finalize(value: Any) -> Any:
    if isinstance(value, Md) or value is None or value == "":
        return value if value is not None else ""
    raise UnsafeReportValue(f"report template printed an unescaped {type(value).__name__}")


def _join(items: Sequence[Any], sep: str = " | ") -> Md:
    """Join already-safe pieces; a raw string among them is refused like in finalize."""
    for item in items:
        _finalize(item)
    return Md(sep.join(items))


@cache
def _environment() -> jinja2.Environment:
    env = strict_environment(jinja2.PackageLoader("triagebot.report", "templates"), _finalize)
    env.filters["join_md"] = _join
    return env


# --- formatting ---------------------------------------------------------------------------


def _t(text: object, limit: int = 500) -> Md:
    return Md(md.inline(text, limit))


def _c(text: object, limit: int = 200) -> Md:
    return Md(md.table_cell(text, limit))


def _num(value: float | None, fmt: str = ".2f", suffix: str = "") -> str:
    return "—" if value is None else f"{value:{fmt}}{suffix}"


def _ci(low: float | None, high: float | None, fmt: str = ".2f") -> str:
    return "" if low is None or high is None else f" [{low:{fmt}}, {high:{fmt}}]"


# --- view -------------------------------------------------------------------------------


@dataclass
class Limits:
    """How much of the long parts (evidence, scripts) one rendering keeps."""

    evidence_lines: int | None = None
    evidence_chars: int = 300
    script_chars: int | None = None
    scripts: bool = True
    details_note: str = ""


def _cell_rows(findings: Findings) -> list[list[Md]]:
    rows = []
    for c in findings.cells:
        t = c.throughput
        acc = c.acceptance
        status = c.status if c.status == "ok" else f"{c.status}: {c.error or ''}"
        rows.append([
            _c(c.label),
            Md(f"{_num(t.median, '.1f')}{_ci(t.ci_low, t.ci_high, '.1f')}"),
            Md(str(t.n)),
            Md(_num(t.cv * 100 if t.cv is not None else None, ".1f", "%")),
            Md(_num(acc.acceptance_rate if acc else None, ".1%")),
            Md(_num(acc.mean_acceptance_length if acc else None)),
            _c(status, 120),
        ])
    return rows


def _comparison_rows(findings: Findings) -> list[list[Md]]:
    rows = []
    for comp in findings.comparisons:
        r = comp.result
        verdict: str = "noise (A/A)" if comp.kind == "noise" else r.verdict
        if comp.main and comp.kind == "ratio":
            verdict = f"**{verdict}**"
        rows.append([
            _c(comp.name),
            Md(f"{_num(r.ratio, '.3f')}x{_ci(r.ci_low, r.ci_high, '.3f')}"
               if r.ratio is not None else "—"),
            Md(verdict),
            Md(f"{r.n_a} v {r.n_b}"),
            _c(r.reason, 200),
        ])
    for inter in findings.interactions:
        ir = inter.result
        rows.append([
            _c(inter.name),
            Md(f"{_num(ir.ratio_of_ratios, '.3f')}x{_ci(ir.ci_low, ir.ci_high, '.3f')}"
               if ir.ratio_of_ratios is not None else "—"),
            Md(f"**{ir.verdict}**"),
            Md(f"{ir.n_a1}/{ir.n_b1} v {ir.n_a2}/{ir.n_b2}"),
            _c(ir.reason, 200),
        ])
    return rows


def _method_lines(findings: Findings) -> list[Md]:
    """How the verdicts were reached: margin, error budget, the A/A pair, the signal."""
    method = next((c.result.method for c in findings.comparisons if c.result.method), "—")
    different = (f"DIFFERENT means beyond ±{findings.negligible:.1%} (the negligible band) "
                 "and is held to ≤ 1 % false positives over all looks when the truth lies "
                 "in that band" if findings.negligible > 0 else
                 "DIFFERENT is held to ≤ 1 % false positives over all looks")
    out = [_t(f"SAME means within ±{findings.margin:.0%} (the practical margin); the "
              f"interval shown is the one held to it. Method: {method}; {different}, "
              "SAME to ≤ 5 % when the truth lies at the margin.", 600)]
    targets = [f"{c.name} {c.result.target_runs}" for c in findings.comparisons
               if c.kind == "ratio" and c.result.target_runs is not None]
    if targets:
        out.append(_t("Runs per arm each DIFFERENT test spends its error by, sized at its "
                      f"measured noise to find a {DESIGN_EFFECT:.0%} change "
                      f"{DESIGN_POWER:.0%} of the time (a quiet pair decides sooner): "
                      f"{', '.join(targets)}.", 600))
    aa = next((c.result for c in findings.comparisons if c.kind == "noise"), None)
    if aa is not None and aa.ratio is not None:
        cv = f", run-to-run CV {aa.run_cv:.1%}" if aa.run_cv is not None else ""
        drift = f"; {aa.drift.note}" if aa.drift is not None else ""
        out.append(_t(f"A/A pair (two runs of one configuration): {aa.ratio:.3f}x"
                      f"{_ci(aa.ci_low, aa.ci_high, '.3f')} ({aa.n_a} v {aa.n_b} runs){cv}"
                      f"{drift}. It measures the runner; it does not gate the verdicts.", 600))
    else:
        out.append(_t(f"A/A pair: {findings.noise.note}", 600))
    out.extend(_metric_lines(findings))
    if findings.decided_by:
        out.append(_t(f"Decided by: {findings.decided_by}.", 300))
    return out


def _metric_lines(findings: Findings) -> list[Md]:
    """Which throughput the verdicts use, where the runs also recorded their CPU time."""
    cpu = [c.cpu_throughput.cv for c in findings.cells
           if c.cpu_throughput is not None and c.cpu_throughput.cv is not None]
    wall = [c.throughput.cv for c in findings.cells
            if c.cpu_throughput is not None and c.throughput.cv is not None]
    if not cpu or not wall:
        return []
    return [_t("Verdicts use wall-clock tok/s. The engine's CPU time per output token (every "
               "process and thread of it) is recorded beside it as a cross-check: run-to-run "
               f"CV {min(cpu):.1%}-{max(cpu):.1%} per cell, against wall-clock's "
               f"{min(wall):.1%}-{max(wall):.1%}. CPU time leaves out the moments a "
               "neighbour held the core, but not a slower core: on a shared virtual machine "
               "the speed of the core itself drifts (fixed work timed beside the engines "
               "shows it; the runner's page, linked above, says how), and there CPU time "
               "was no steadier than wall-clock time, so the verdicts keep wall-clock time.",
               700)]


def _chart(findings: Findings) -> Md:
    pairs = [(c.label, c.throughput.median) for c in findings.cells
             if c.throughput.median is not None]
    if not pairs:
        return Md("")
    labels = [f"{label} (n={c.throughput.n})" for (label, _), c in
              zip(pairs, [c for c in findings.cells if c.throughput.median is not None],
                  strict=True)]
    return Md(md.bar_chart("Median throughput per cell (tok/s)", labels,
                           [v for _, v in pairs if v is not None], "tok/s"))


def _spec_lines(findings: Findings) -> list[Md]:
    out: list[Md] = []
    for c in findings.cells:
        acc = c.acceptance
        if acc is None or c.replica:
            continue
        pos = ", ".join(f"{p:.2f}" for p in acc.per_position) or "—"
        out.append(_t(
            f"{c.label}: acceptance rate {_num(acc.acceptance_rate, '.1%')}, mean acceptance "
            f"length {_num(acc.mean_acceptance_length)}, per position [{pos}] "
            f"({acc.num_drafts} drafts over {c.throughput.n} runs)"
            + (f"; note: {'; '.join(acc.notes)}" if acc.notes else ""), 800))
    for comp in findings.comparisons:
        r = comp.result
        if comp.step_cost is not None:
            out.append(_t(f"{comp.name}: {comp.step_cost.sentence} ({r.n_a} v {r.n_b} runs)",
                          600))
        if comp.explanation is not None:
            out.append(_t(f"{comp.name}: {comp.explanation.sentence} ({r.n_a} v {r.n_b} "
                          f"runs; tokens per step from {comp.explanation.source})", 600))
    for sf in findings.step_fits:
        f = sf.fit
        if f.ok and f.per_token_seconds is not None:
            fixed = (f"fixed overhead {f.fixed_seconds * 1e3:.2f} ms per step, "
                     if f.fixed_seconds is not None else "")
            out.append(_t(f"k sweep of {sf.method} under {sf.context} (k = "
                          f"{', '.join(map(str, f.ks))}): {fixed}{f.per_token_seconds * 1e3:.2f}"
                          f" ms per drafted token; R² {_num(f.r_squared, '.3f')}", 600))
        else:
            out.append(_t(f"k sweep of {sf.method} under {sf.context}: no fit ({f.reason})"))
    for d in findings.divergence:
        if d.result.checked:
            out.append(_t(f"greedy outputs under {d.context}: {d.result.reason}"))
    return out


def _why_view(findings: Findings) -> dict[str, Any] | None:
    """Per compared mode: which explanation of a slower speculation holds, the pinned
    arms' ratios and the break-even acceptance length (`analyze/synthetic.py`)."""
    modes = findings.pinned
    if not modes:
        return None
    notes = [_t(n, 600) for n in findings.notes if n.startswith(NOTE)]
    rows = []
    for m in modes:
        lo_hi = m.break_even_ci
        rows.append([
            _t(m.mode or "all cells", 80), Md(_num(m.measured_length)),
            Md(_num(m.measured_ratio, ".2f", "x")),
            Md(_num(m.full_ratio, ".2f", "x") + _ci(*(m.full_ci or (None, None)))),
            Md((_num(m.reported_ratio, ".2f", "x") + _ci(*(m.reported_ci or (None, None)))
                + f" at {m.reported_length:.2f}") if m.reported_length else "—"),
            Md(_num(m.break_even) + _ci(*(lo_hi or (None, None))))])
    sources = sorted({m.break_even_source for m in modes if m.break_even_source})
    return {"sentences": [_t(m.sentence, 600) for m in modes], "rows": rows, "notes": notes,
            "sources": [_t(f"break-even acceptance length from {src}", 400)
                        for src in sources]}


def _encoder_lines(findings: Findings) -> list[Md]:
    """The multimodal encoder's forward time per request, per cell (mm-processor cells)."""
    out = []
    for c in findings.cells:
        e = c.encoder
        if e is None:
            continue
        runs = ", ".join(f"{ms:.2f}" for ms in e.encoder_forward_ms)
        pre = (f"; processor {stats_median(e.preprocessor_ms):.2f} ms per request"
               if e.preprocessor_ms else "")
        out.append(_t(f"{c.label}: encoder forward {stats_median(e.encoder_forward_ms):.2f} "
                      f"ms per request (median of the runs' means: {runs} ms; "
                      f"{e.encoder_calls} encoder calls in "
                      f"{len(e.encoder_forward_ms)} runs){pre}", 600))
    return out


def _step_split_views(findings: Findings) -> list[dict[str, Any]]:
    """Per mode: its chart (spec cells, then the no-spec step) and what it says."""
    views = []
    for f in findings.step_splits:
        shown = [*f.cells, *([f.baseline] if f.baseline is not None else [])]
        title = "all cells" if f.context == "all cells" else f"under {f.context}"
        lines = [_t(s, 600) for s in f.sentences]
        lines += [_t(c.cudagraphs.sentence, 800) for c in shown if c.cudagraphs is not None]
        # A cell with no step split says why in its sentence; one split in part, here.
        lines += [_t(f"{c.cell_label}: {n}", 400) for c in shown if c.step_s is not None
                  for n in c.notes]
        chart = step_chart(title, shown) if any(c.step_s for c in shown) else ""
        views.append({"chart": Md(md.fence(chart, "text")) if chart else Md(""),
                      "lines": lines})
    return views


def _graph_lines(findings: Findings) -> list[Md]:
    """Whether each cell of the graph axis ran CUDA graphs as labelled (GPU runners)."""
    return [Md(("**not as labelled** · " if g.flagged else "") + _t(g.sentence, 800))
            for g in findings.graphs]


@dataclass
class HintView:
    head: Md
    text: Md
    evidence: Md


def _hint_views(findings: Findings, limits: Limits) -> list[HintView]:
    views = []
    for h in findings.hints:
        views.append(HintView(
            head=Md(f"{_ICON[h.severity]} **{h.severity}** · {md.code_span(h.source)} · "
                    f"{md.inline(', '.join(dict.fromkeys(h.cells)), 300)}"),
            text=_t(h.text + (f" Related: {', '.join(h.related)}." if h.related else ""), 1200),
            evidence=Md(_evidence(h, limits)),
        ))
    return views


def _evidence(h: Hint, limits: Limits) -> str:
    lines = h.evidence if limits.evidence_lines is None else h.evidence[: limits.evidence_lines]
    if not lines:
        return ""
    text = "\n".join(md.shorten(ln, limits.evidence_chars) for ln in lines)
    if len(lines) < len(h.evidence):
        text += f"\n... ({len(h.evidence) - len(lines)} more lines left out for length)"
    return md.fence(text, "text")


def _ours(m: LabelMatch) -> str:
    if not m.comparable:
        return "not comparable"
    unit = f" {m.ours_unit}" if m.ours_unit and m.ours_median is not None else ""
    return f"{_num(m.ours_median)}{unit} (n={m.ours_n})"


def _against(findings: Findings) -> dict[str, Any] | None:
    ar = findings.against_report
    if ar is None:
        return None
    labels = [[_c(m.label, 80), _c(f"{m.reported_tok_s:.2f} {m.reported_unit}"),
               _c(m.cell_label or "—"),
               _c(_ours(m) if m.cell_id else "—"),
               _c(m.reason, 300)] for m in ar.labels]
    ratios = [_t(f"{r.comparison}: {r.sentence}; {r.reason}", 600) for r in ar.ratios]
    acc = [_t(a.sentence, 400) for a in ar.acceptance]
    env = [[Md(f.field), _c(f.reported or "—", 80), _c(f.ours or "—", 80),
            Md("differs" if f.differs else "same" if f.differs is False else "unknown")]
           for f in ar.env.fields]
    return {"labels": labels, "unmatched": [_c(u, 80) for u in ar.unmatched],
            "ratios": ratios, "acceptance": acc, "env": env,
            "env_sentence": _t(ar.env.sentence, 800)}


def _scripts(scripts: Sequence[RenderedScript], command: str, limits: Limits) -> dict[str, Any]:
    blocks = []
    for s in scripts:
        name = md.code_span(s.filename)
        if not limits.scripts:
            blocks.append({"name": Md(name), "body": Md("")})
            continue
        text = s.text if limits.script_chars is None else md.shorten(s.text, limits.script_chars)
        blocks.append({"name": Md(name), "body": Md(md.fence(text, s.language))})
    return {
        "command": Md(md.fence(command, "sh")) if command else Md(""),
        "blocks": blocks,
        # Built by `shortened_note`: already markdown, and ours.
        "note": Md(limits.details_note),
    }


def _runs_footer(findings: Findings) -> Md:
    ns = sorted({c.throughput.n for c in findings.cells})
    span = (f"{ns[0]}" if len(ns) == 1 else f"{ns[0]}–{ns[-1]}") if ns else "0"
    return Md(f"runs per cell: {span} (each number above states the runs it rests on)")


def _first_screen(plan: Plan, findings: Findings, docs_url: str) -> dict[str, Any]:
    # Built by `first_screen`: every piece of outside text in them went through `md`.
    return {"deciding": Md(first_screen.deciding_line(findings)),
            "acceptance": Md(first_screen.acceptance_line(findings)),
            "unanswered": [Md(line) for line in
                           first_screen.unanswered_lines(plan, findings, docs_url)]}


@dataclass
class ReportInputs:
    """What one rendering prints besides the findings: the scripts and the command that
    reproduce it, and where the deployment publishes the docs (empty: not published)."""

    scripts: Sequence[RenderedScript]
    command: str
    docs_url: str


def _view(plan: Plan, findings: Findings, inputs: ReportInputs,
          limits: Limits) -> dict[str, Any]:
    word = outcome_word(findings.outcome)
    rest = findings.headline.split(":", 1)[1].strip() if ":" in findings.headline \
        else findings.headline
    return {
        "verdict": Md(word),
        "headline": _t(rest, 2000),
        "question": _t(findings.question, 600),
        "reason": _t(findings.outcome_reason, 800),
        "first": _first_screen(plan, findings, inputs.docs_url),
        "never_engaged": [_t(e.sentence, 600) for e in findings.never_engaged],
        "cells": _cell_rows(findings),
        "comparisons": _comparison_rows(findings),
        "method": _method_lines(findings),
        "chart": _chart(findings),
        "graphs": _graph_lines(findings),
        "step_splits": _step_split_views(findings),
        "encoder": _encoder_lines(findings),
        "spec": _spec_lines(findings),
        "why": _why_view(findings),
        "hints": _hint_views(findings, limits),
        "against": _against(findings),
        # The runner's own limits are on the first screen; the other notes stay here.
        "notes": [_t(n, 600) for n in findings.notes
                  if not n.startswith(first_screen.CANNOT_NOTE)],
        "repro": _scripts(inputs.scripts, inputs.command, limits),
        "footer": Md(
            f"triagebot · {md.inline(findings.engine)} "
            f"{md.inline(findings.engine_version or 'unknown version')} · plan "
            f"{md.code_span(findings.plan_hash or plan.plan_hash or '—')} · "
            f"{_runs_footer(findings)}"),
    }


def _render(plan: Plan, findings: Findings, inputs: ReportInputs, limits: Limits) -> str:
    template = _environment().get_template("report.md.j2")
    return template.render(**_view(plan, findings, inputs, limits))


def shortened_note(what: str) -> str:
    """Our note on a shortened report, as markdown: `what` was cut (our own words, kept
    plain), and the command that writes everything shows as code."""
    return (f"Shortened to fit GitHub's 65,536-character comment limit: {md.inline(what)}. "
            f"{md.code_span('triagebot repro')} writes the full scripts and logs to its "
            "output directory.")


def _attempts() -> list[tuple[Limits, str]]:
    steps: list[tuple[Limits, str]] = [(Limits(), "")]
    steps.append((Limits(evidence_lines=5, evidence_chars=200, script_chars=6000),
                  "evidence and scripts cut to their first and last lines"))
    steps.append((Limits(evidence_lines=3, evidence_chars=200, scripts=False),
                  "scripts left out, evidence cut"))
    steps.append((Limits(evidence_lines=0, scripts=False), "scripts and log evidence left out"))
    return steps


def render_report(
    plan: Plan,
    findings: Findings,
    *,
    scripts: Sequence[RenderedScript] = (),
    command: str = "",
    docs_url: str = "",
) -> str:
    """The report comment for `findings`, always shorter than 65,536 characters.
    `docs_url` is where the deployment publishes triagebot's docs: the first screen links
    the runner's page there (empty: it names the page)."""
    inputs = ReportInputs(scripts=scripts, command=command, docs_url=docs_url)
    text = ""
    for limits, what in _attempts():
        if what:
            limits.details_note = shortened_note(what)
        text = _render(plan, findings, inputs, limits)
        if len(text) <= TARGET_CHARS:
            return text
    return md.cut(text, TARGET_CHARS,
                  f"_{shortened_note('the report itself was cut at a line')}_")

