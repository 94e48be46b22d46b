"""Findings -> one markdown comment: the report the CLI prints and the bot posts.

The layout lives in `templates/report.md.j2`: the answer on the first screen
(`first_screen.py`), then collapsed sections (the tables here, the rest in
`sections.py`). Everything the template prints passes through `markdown.py` first and is
marked `Md` (`safe.py`); the jinja environment's `finalize` refuses any value that did
not, so a template edit cannot print raw user-derived text.

The comment always fits GitHub's 65,536-character limit: when it would not, evidence
lines and scripts are shortened first, then scripts are left out, then evidence, and as
a last resort the text is cut at a line with its open blocks closed; the report says
which of these happened.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any

import jinja2

from triagebot.analyze.findings_models import Findings
from triagebot.analyze.findings_outcome import outcome_word
from triagebot.analyze.looks import DESIGN_EFFECT, DESIGN_POWER
from triagebot.model import Plan
from triagebot.render import RenderedScript
from triagebot.report import first_screen
from triagebot.report import markdown as md
from triagebot.report.safe import (
    Md,
    UnsafeReportValue,
    cell_text,
    finalize,
    interval,
    join_md,
    number,
    prose,
)
from triagebot.report.sections import (
    Limits,
    against_view,
    chart,
    encoder_lines,
    graph_lines,
    hint_views,
    spec_lines,
    step_split_views,
    why_view,
)
from triagebot.templating import strict_environment

__all__ = ["MAX_CHARS", "Md", "UnsafeReportValue", "finalize", "render_report"]

MAX_CHARS = 65_536
TARGET_CHARS = 65_000  # margin for the GitHub client's own newline handling


@cache
def _environment() -> jinja2.Environment:
    env = strict_environment(jinja2.PackageLoader("triagebot.report", "templates"), finalize)
    env.filters["join_md"] = join_md
    return env


# --- tables and method -------------------------------------------------------------------


def _cell_rows(findings: Findings) -> list[list[Md]]:
    rows = []
    for c in findings.cells:
        t = c.throughput
        acc = c.acceptance
        status = c.status if c.status == "ok" else f"{c.status}: {c.error or ''}"
        rows.append([
            cell_text(c.label),
            Md(f"{number(t.median, '.1f')}{interval(t.ci_low, t.ci_high, '.1f')}"),
            Md(str(t.n)),
            Md(number(t.cv * 100 if t.cv is not None else None, ".1f", "%")),
            Md(number(acc.acceptance_rate if acc else None, ".1%")),
            Md(number(acc.mean_acceptance_length if acc else None)),
            cell_text(status, 120),
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
            cell_text(comp.name),
            Md(f"{number(r.ratio, '.3f')}x{interval(r.ci_low, r.ci_high, '.3f')}"
               if r.ratio is not None else "—"),
            Md(verdict),
            Md(f"{r.n_a} v {r.n_b}"),
            cell_text(r.reason, 200),
        ])
    for inter in findings.interactions:
        ir = inter.result
        rows.append([
            cell_text(inter.name),
            Md(f"{number(ir.ratio_of_ratios, '.3f')}x{interval(ir.ci_low, ir.ci_high, '.3f')}"
               if ir.ratio_of_ratios is not None else "—"),
            Md(f"**{ir.verdict}**"),
            Md(f"{ir.n_a1}/{ir.n_b1} v {ir.n_a2}/{ir.n_b2}"),
            cell_text(ir.reason, 200),
        ])
    return rows


def _method_lines(findings: Findings) -> list[Md]:
    """How the verdicts were reached: margin, error budget, the A/A pair, the signal."""
    method = next((c.result.method for c in findings.comparisons if c.result.method), "—")
    different = (f"DIFFERENT means beyond ±{findings.negligible:.1%} (the negligible band) "
                 "and is held to ≤ 1 % false positives over all looks when the truth lies "
                 "in that band" if findings.negligible > 0 else
                 "DIFFERENT is held to ≤ 1 % false positives over all looks")
    out = [prose(f"SAME means within ±{findings.margin:.0%} (the practical margin); the "
              f"interval shown is the one held to it. Method: {method}; {different}, "
              "SAME to ≤ 5 % when the truth lies at the margin.", 600)]
    targets = [f"{c.name} {c.result.target_runs}" for c in findings.comparisons
               if c.kind == "ratio" and c.result.target_runs is not None]
    if targets:
        out.append(prose("Runs per arm each DIFFERENT test spends its error by, sized at its "
                      f"measured noise to find a {DESIGN_EFFECT:.0%} change "
                      f"{DESIGN_POWER:.0%} of the time (a quiet pair decides sooner): "
                      f"{', '.join(targets)}.", 600))
    aa = next((c.result for c in findings.comparisons if c.kind == "noise"), None)
    if aa is not None and aa.ratio is not None:
        cv = f", run-to-run CV {aa.run_cv:.1%}" if aa.run_cv is not None else ""
        drift = f"; {aa.drift.note}" if aa.drift is not None else ""
        out.append(prose(f"A/A pair (two runs of one configuration): {aa.ratio:.3f}x"
                      f"{interval(aa.ci_low, aa.ci_high, '.3f')} ({aa.n_a} v {aa.n_b} runs){cv}"
                      f"{drift}. It measures the runner; it does not gate the verdicts.", 600))
    else:
        out.append(prose(f"A/A pair: {findings.noise.note}", 600))
    out.extend(_metric_lines(findings))
    if findings.decided_by:
        out.append(prose(f"Decided by: {findings.decided_by}.", 300))
    return out


def _metric_lines(findings: Findings) -> list[Md]:
    """Which throughput the verdicts use, where the runs also recorded their CPU time."""
    cpu = [c.cpu_throughput.cv for c in findings.cells
           if c.cpu_throughput is not None and c.cpu_throughput.cv is not None]
    wall = [c.throughput.cv for c in findings.cells
            if c.cpu_throughput is not None and c.throughput.cv is not None]
    if not cpu or not wall:
        return []
    return [prose("Verdicts use wall-clock tok/s. The engine's CPU time per output token (every "
               "process and thread of it) is recorded beside it as a cross-check: run-to-run "
               f"CV {min(cpu):.1%}-{max(cpu):.1%} per cell, against wall-clock's "
               f"{min(wall):.1%}-{max(wall):.1%}. CPU time leaves out the moments a "
               "neighbour held the core, but not a slower core: on a shared virtual machine "
               "the speed of the core itself drifts (fixed work timed beside the engines "
               "shows it; the runner's page, linked above, says how), and there CPU time "
               "was no steadier than wall-clock time, so the verdicts keep wall-clock time.",
               700)]



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
        "headline": prose(rest, 2000),
        "question": prose(findings.question, 600),
        "reason": prose(findings.outcome_reason, 800),
        "first": _first_screen(plan, findings, inputs.docs_url),
        "never_engaged": [prose(e.sentence, 600) for e in findings.never_engaged],
        "cells": _cell_rows(findings),
        "comparisons": _comparison_rows(findings),
        "method": _method_lines(findings),
        "chart": chart(findings),
        "graphs": graph_lines(findings),
        "step_splits": step_split_views(findings),
        "encoder": encoder_lines(findings),
        "spec": spec_lines(findings),
        "why": why_view(findings),
        "hints": hint_views(findings, limits),
        "against": against_view(findings),
        # The runner's own limits are on the first screen; the other notes stay here.
        "notes": [prose(n, 600) for n in findings.notes
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

