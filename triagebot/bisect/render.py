"""The bisect section of a report (markdown): range, steps, answer, candidates, and how
to reproduce it. The same text goes into the sticky comment, the job page and the CLI."""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.bisect.rank import RankedCommit
from triagebot.bisect.runner import BisectRun
from triagebot.bisect.search import clean_steps_bound

_MARK = {"good": "good", "bad": "bad", "skip": "skip"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def answer(run: BisectRun) -> str:
    """One sentence: what the bisect found, or where it stands."""
    out = run.outcome
    if out is None:
        return "Bisect not started."
    changed = ("first bad" if run.range.direction == "regress" else "first good")
    before = ("last good" if run.range.direction == "regress" else "last bad")
    if out.exact:
        return (f"**{changed}: {out.first_new}**, {before}: {out.last_old} "
                f"({out.steps} step{'s' if out.steps != 1 else ''}).")
    if out.done:
        maybe = ", ".join([*out.skipped, out.first_new])
        return (f"**{changed} is one of {maybe}**: {', '.join(out.skipped)} could not be "
                f"judged (skipped); {before}: {out.last_old} ({out.steps} steps).")
    left = len(out.untested) + len(out.skipped)
    why = f" ({run.stopped})" if run.stopped else ""
    return (f"In progress{why}: {changed} lies in {out.last_old} .. {out.first_new} "
            f"({left} point(s) left, {out.steps} step(s) so far).")


def render_section(run: BisectRun, candidates: Sequence[RankedCommit] = ()) -> str:
    rng = run.range
    what = ("where it broke" if rng.direction == "regress" else
            "where it started working (regress=success)")
    lines = [
        "## Bisect",
        "",
        answer(run),
        "",
        f"- Range: {run.package} {rng.good} (good) .. {rng.bad} (bad), {rng.candidates} "
        f"candidate {rng.level}s, searching {what}; with a clean predicate at most "
        f"{clean_steps_bound(rng.candidates)} steps.",
    ]
    if run.predicate:
        lines.append(f"- Predicate: {run.predicate}")
    lines += [f"- {note}" for note in run.notes]
    lines += ["", "| # | point | measured | verdict | why |", "|---|---|---|---|---|"]
    for k, step in enumerate(run.steps, 1):
        runs = f" ({step.runs} runs, {step.seconds:.0f} s)" if step.runs else ""
        lines.append(f"| {k} | {_cell(step.point)} | {_cell(step.measure or '-')}{runs} | "
                     f"{_MARK[step.verdict]} | {_cell(step.reason[:240])} |")
    if not run.steps:
        lines.append("| - | - | - | - | no step has finished yet |")
    if candidates:
        lines += ["", "Candidates, ranked by how close their changes are to the report's "
                  "subject:", ""]
        for k, cand in enumerate(candidates, 1):
            c = cand.commit
            link = c.pr_url or c.url
            name = f"[{_cell(c.title or c.sha[:10])}]({link})" if link else _cell(c.title)
            why = f": {'; '.join(cand.why)}" if cand.why else ""
            lines.append(f"{k}. {name} (`{c.sha[:10]}`, score {cand.score:g}){why}")
    if run.command:
        lines += ["", "Reproduce with:", "", "```bash", run.command, "```"]
    return "\n".join(lines) + "\n"
