"""A sentinel tracking issue, as Markdown: pure, from the case, its latest figures and rows.

One issue per regression (one case, one flag kind). Its body is the sticky part, rewritten
on each release that measures the case again: what was flagged, the verdict table under
each mode, the acceptance figures, the bisect (its result, its link while it runs, or
why there is none) and the command that reproduces it. A release that changes what the
issue says gets one comment of its own (`change_comment`).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from triagebot.frozen import Frozen
from triagebot.report.markdown import inline
from triagebot.sentinel.models import CaseFigures, Flag, ModeFigures, SentinelCase

KIND_WORDS = {
    "stopped_paying": "speculation stopped paying",
    "speedup_fell": "the speedup fell beyond the margin",
    "acceptance_fell": "acceptance fell beyond its interval",
    "outputs_diverged": "greedy outputs diverged from no speculation",
    "crashed": "the release crashed",
    "refused": "the release refused the config",
    "drift": "a slow drift across releases",
}
LABEL = "perf-sentinel"


class TrackRow(Frozen):
    """One release at which a tracked case was flagged (or measured again)."""

    release: str
    previous: str | None = None
    reason: str
    job_url: str = ""
    bisect_url: str = ""  # the bisect job's page, once one is queued
    bisect_note: str = ""  # the bisect's result, or why there is none


def title(case: SentinelCase, flag: Flag) -> str:
    return inline(f"Sentinel: {case.engine} {flag.release}: {case.case_id}: "
                  f"{KIND_WORDS[flag.kind]}", 200)


def _ratio(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    interval = f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else ""
    return f"{value:.3f}x{interval}"


def _share(value: float | None, ci: tuple[float, float] | None) -> str:
    if value is None:
        return "-"
    interval = f" [{ci[0]:.2f}, {ci[1]:.2f}]" if ci else ""
    return f"{value:.2f}{interval}"


def verdict_table(figures: CaseFigures) -> str:
    head = ("| mode | spec/no-spec | verdict | vs previous (ratio of ratios) | outputs |\n"
            "|------|--------------|---------|-------------------------------|---------|")
    lines = [head]
    for m in figures.modes:
        outputs = {True: "equal", False: "DIVERGED", None: "-"}[m.outputs_equal]
        lines.append(f"| {m.mode} | {_ratio(m.spec_ratio, m.spec_ci)} | {m.verdict or '-'} "
                     f"| {_ratio(m.ratio_of_ratios, m.ror_ci)} {m.ror_verdict or ''} "
                     f"| {outputs} |")
    return "\n".join(lines)


def acceptance_table(modes: Sequence[ModeFigures]) -> str:
    lines = ["| mode | acceptance | previous release | per position |",
             "|------|------------|------------------|--------------|"]
    for m in modes:
        positions = ", ".join(f"{p:.2f}" for p in m.per_position) or "-"
        lines.append(f"| {m.mode} | {_share(m.acceptance_rate, m.acceptance_ci)} | "
                     f"{_share(m.previous_acceptance, m.previous_acceptance_ci)} | "
                     f"{positions} |")
    return "\n".join(lines)


def reproduce(case: SentinelCase, releases: Sequence[str], source: str = "") -> str:
    """The command, run in a checkout of the repository whose config holds the case."""
    words = ["triagebot", "sentinel", "--engine", case.engine, "--runner", case.runner,
             "--releases", ",".join(releases), "--cases", case.case_id,
             "--config", ".github/triagebot.toml"]
    where = f"In a checkout of {inline(source, 140)}:\n\n" if source else ""
    return f"{where}```bash\n{shlex.join(words)}\n```"


def _bisect(row: TrackRow) -> str:
    if row.bisect_note and not row.bisect_url:
        return inline(row.bisect_note, 400)
    if row.bisect_url:
        note = f": {inline(row.bisect_note, 400)}" if row.bisect_note else " (queued)"
        return f"[bisect {row.previous or '?'}..{row.release}]({row.bisect_url}){note}"
    return "not started"


def issue_body(case: SentinelCase, flag: Flag, figures: CaseFigures,
               rows: Sequence[TrackRow], *, command_name: str, marked_by: Sequence[str] = (),
               source: str = "") -> str:
    """The tracking issue's body: the regression, the latest figures, the releases."""
    latest = rows[-1] if rows else None
    modes = ", ".join(case.modes)
    parts = [
        f"The sentinel flagged **{case.case_id}** ({case.engine}, {case.method} k={case.k} "
        f"on `{inline(case.model, 120)}`, {modes}, workload `{inline(case.workload, 60)}`, "
        f"runner `{case.runner}`): {KIND_WORDS[flag.kind]}.",
        f"**{figures.release}** against **{figures.previous or '-'}**: "
        f"{inline(flag.reason, 600)}",
    ]
    if figures.error_line:
        parts.append(f"The engine said: `{inline(figures.error_line, 300)}`")
    if figures.modes:
        parts += ["### Verdicts", verdict_table(figures),
                  "### Acceptance", acceptance_table(figures.modes)]
    parts.append("### Releases")
    history = ["| release | against | why | bisect | job |",
               "|---------|---------|-----|--------|-----|"]
    for row in rows:
        job = f"[job]({row.job_url})" if row.job_url else "-"
        history.append(f"| {inline(row.release, 40)} | {inline(row.previous or '-', 40)} | "
                       f"{inline(row.reason, 300)} | {_bisect(row)} | {job} |")
    parts.append("\n".join(history))
    if latest is not None:
        parts += ["### Reproduce", reproduce(case, [latest.previous or latest.release,
                                                    latest.release], source)]
    if marked_by:
        who = ", ".join(f"@{login}" for login in marked_by)
        parts.append(f"Marked **not a regression** by {who}; the sentinel counts it in its "
                     "false-positive rate.")
    else:
        parts.append(f"Not a regression? Say `@{command_name} not-a-regression` here: it "
                     "is counted, and the job pages and `/metrics` show the sentinel's "
                     "observed false-positive rate.")
    return "\n\n".join(parts)


def change_comment(case: SentinelCase, flag: Flag, row: TrackRow) -> str:
    """A later release flagged the same way: one comment, the body holds the figures."""
    link = f" ([job]({row.job_url}))" if row.job_url else ""
    return (f"The sentinel flagged **{case.case_id}** again at **{inline(row.release, 40)}** "
            f"(against {inline(row.previous or '-', 40)}): {inline(flag.reason, 600)}"
            f"{link}. Bisect: {_bisect(row)}. The issue body holds the latest figures.")


def not_regression_reply(count: int, flags: int, marked: int) -> str:
    rate = f"{marked / flags:.1%}" if flags else "-"
    what = (f"{count} flagged release{'s' if count != 1 else ''} of this case"
            if count else "this case's flags (already counted)")
    return (f"Marked {what} as not a regression. The sentinel's observed false-positive "
            f"rate is now {rate} ({marked} of {flags} flags).")
