"""The Watch table: one row per release the watch measured, newest last.

Each row gives the release, its date, the deciding comparison's ratio with its interval
and verdict, the ratio over the last release's (measured in the same job), the state and
the job page; the reasons follow the table, one line each. Reasons quote engine logs, so
every text goes through `markdown.inline` / `table_cell`.
"""

from __future__ import annotations

from collections.abc import Sequence

from triagebot.report.markdown import code_span, inline, table_cell
from triagebot.watch.models import Ratio, WatchRow
from triagebot.watch.states import describe


def render_watch(rows: Sequence[WatchRow], comparison: str, *, heading: str = "### Watch",
                 waiting: str = "") -> str:
    """The section: heading, what is watched, the table, the reasons, and what waits."""
    lines = [heading, ""]
    # `waiting` is triagebot's own sentence (a limit and a feed's version, which the feed
    # reader only takes in the shape of a version), so its code spans stay.
    after = [f"**Waiting:** {waiting[:400]}", ""] if waiting else []
    if not rows:
        return "\n".join([*lines, "No release measured yet.", "", *after])
    lines += [f"{code_span(comparison)} on each new release, measured side by side with "
              "the last release measured, in one job on one runner.", "",
              "| release | date | ratio [95 % CI] | verdict | vs last release | state | job |",
              "|---|---|---|---|---|---|---|"]
    lines += [_row(r) for r in rows]
    lines += ["", *(f"- {inline(r.release, 40)} **{r.words}**: {inline(r.reason, 400)}"
                    for r in rows), "", *after]
    return "\n".join(lines)


def _row(row: WatchRow) -> str:
    ratio = row.ratio
    shown = describe(ratio).split(" (")[0] if ratio and ratio.value is not None else "—"
    verdict = ratio.verdict if ratio and ratio.value is not None else "—"
    job = f"[job]({row.job_url})" if row.job_url.startswith(("http://", "https://")) else "—"
    cells = [table_cell(row.release, 40), table_cell(row.date or "—", 40), shown, verdict,
             _change(row.change, row.against), f"**{row.words}**", job]
    return "| " + " | ".join(cells) + " |"


def _change(change: Ratio | None, against: str | None) -> str:
    if change is None or change.value is None or against is None:
        return "—"
    ci = (f" [{change.ci_low:.2f}, {change.ci_high:.2f}]"
          if change.ci_low is not None and change.ci_high is not None else "")
    return f"{change.value:.2f}x{ci} of {table_cell(against, 40)}"
