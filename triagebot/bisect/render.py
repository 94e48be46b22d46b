"""The bisect section of a report (markdown): range, each level's steps, answer, culprit,
candidates, and how to reproduce it. The same text goes into the sticky comment, the job
page and the CLI."""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.bisect.rank import CommitInfo, RankedCommit
from triagebot.bisect.runner import BisectRun, LevelResult
from triagebot.bisect.search import clean_steps_bound

_TITLE = {"release": "Releases", "nightly": "Nightlies", "commit": "Commits"}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _short(point: str, level: str) -> str:
    return point[:10] if level == "commit" else point


def _words(direction: str) -> tuple[str, str]:
    return (("first bad", "last good") if direction == "regress"
            else ("first good", "last bad"))


def _link(commit: CommitInfo) -> str:
    link = commit.pr_url or commit.url
    title = _cell(commit.title or commit.sha[:10])
    return f"[{title}]({link})" if link else title


def answer(run: BisectRun) -> str:
    """One sentence: what the bisect found, or where it stands; the levels above the
    deepest one add their brackets."""
    out = run.outcome
    if out is None:
        return "Bisect not started."
    level = run.range.level
    changed, before = _words(run.range.direction)
    new, old = _short(out.first_new, level), _short(out.last_old, level)
    steps = sum(len(lv.steps) for lv in run.earlier) + out.steps
    if out.exact:
        text = f"**{changed}: {new}**, {before}: {old}"
    elif out.done:
        maybe = ", ".join(_short(p, level) for p in [*out.skipped, out.first_new])
        text = (f"**{changed} is one of {maybe}**: "
                f"{', '.join(_short(p, level) for p in out.skipped)} could not be judged "
                f"(skipped); {before}: {old}")
    else:
        left = len(out.untested) + len(out.skipped)
        why = f" ({run.stopped})" if run.stopped else ""
        text = (f"In progress{why}: {changed} lies in {old} .. {new} "
                f"({left} point{'s' if left != 1 else ''} left")
        return text + f", {steps} step{'s' if steps != 1 else ''} so far)." + _above(run)
    return text + f" ({steps} step{'s' if steps != 1 else ''})." + _above(run)


def _above(run: BisectRun) -> str:
    parts = []
    for lv in run.earlier:
        if lv.outcome is not None:
            name = _TITLE[lv.range.level].lower()
            parts.append(f"{name} {lv.outcome.last_old} .. {lv.outcome.first_new}")
    return f" Narrowed from {', then '.join(parts)}." if parts else ""


def _level_lines(run: BisectRun, lv: LevelResult) -> list[str]:
    rng = lv.range
    what = ("where it broke" if rng.direction == "regress" else
            "where it started working (regress=success)")
    good, bad = _short(rng.good, rng.level), _short(rng.bad, rng.level)
    lines = [
        "", f"### {_TITLE[rng.level]}", "",
        f"- Range: {good} (good) .. {bad} (bad), {rng.candidates} candidate "
        f"{_TITLE[rng.level].lower()}, searching {what}; with a clean predicate at most "
        f"{clean_steps_bound(rng.candidates)} steps.",
    ]
    if lv.stopped:
        lines.append(f"- Stopped: {lv.stopped}.")
    titles = {c.sha: c.title for c in run.commits}
    lines += ["", "| # | point | measured | verdict | why |", "|---|---|---|---|---|"]
    for k, step in enumerate(lv.steps, 1):
        runs = f" ({step.runs} runs, {step.seconds:.0f} s)" if step.runs else ""
        point = _short(step.point, rng.level)
        if titles.get(step.point):
            point += f" {titles[step.point][:60]}"
        lines.append(f"| {k} | {_cell(point)} | {_cell(step.measure or '-')}{runs} | "
                     f"{step.verdict} | {_cell(step.reason[:240])} |")
    if not lv.steps:
        lines.append("| - | - | - | - | no step has finished yet |")
    return lines


def render_section(run: BisectRun, candidates: Sequence[RankedCommit] = ()) -> str:
    lines = ["## Bisect", "", answer(run), ""]
    if run.culprit is not None:
        c = run.culprit
        lines += [f"**Culprit:** {_link(c)} (`{c.sha[:10]}`)", ""]
    lines.append(f"- Package: {run.package}")
    if run.predicate:
        lines.append(f"- Predicate: {run.predicate}")
    lines += [f"- {note}" for note in run.notes]
    lines += [f"- The {'good' if s.point == run.range.good else 'bad'} end "
              f"{_short(s.point, 'commit')} at its own build: {s.verdict}"
              f" ({_cell(s.measure or s.reason)[:200]})" for s in run.ends]
    for lv in run.levels():
        lines += _level_lines(run, lv)
    if candidates:
        lines += ["", "Candidates, ranked by how close their changes are to the report's "
                  "subject:", ""]
        for k, cand in enumerate(candidates, 1):
            c = cand.commit
            why = f": {'; '.join(cand.why)}" if cand.why else ""
            lines.append(f"{k}. {_link(c)} (`{c.sha[:10]}`, score {cand.score:g}){why}")
    if run.command:
        lines += ["", "Reproduce with:", "", "```bash", run.command, "```"]
    return "\n".join(lines) + "\n"
