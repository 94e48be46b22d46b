"""The Watch table: a row per release, reasons after it, engine text kept inert."""

from __future__ import annotations

from triagebot.report.watch import render_watch
from triagebot.watch.models import Ratio, WatchRow

ROWS = [
    WatchRow(release="0.20.0", date="2026-04-02", state="broken",
             reason="0.20.0 fails: spec + graph: TypeError: f() takes 5 | @team <b>"),
    WatchRow(release="0.25.1", date="2026-06-30", comparison="spec/no_spec @ graph",
             ratio=Ratio(value=0.58, ci_low=0.55, ci_high=0.61, verdict="DIFFERENT",
                         n_a=24, n_b=24),
             state="reproduced", reason="spec/no_spec @ graph 0.58x: DIFFERENT below 1",
             job_url="https://bot.example/jobs/abc"),
    WatchRow(release="0.32.0", against="0.25.1", ratio=Ratio(value=1.0, ci_low=0.98,
             ci_high=1.02, verdict="SAME"), change=Ratio(value=1.72, ci_low=1.6,
             ci_high=1.8, verdict="DIFFERENT"), state="fixed", reason="SAME"),
]


def test_the_table_has_a_row_per_release_and_a_reason_each() -> None:
    text = render_watch(ROWS, "spec/no_spec @ graph")
    lines = text.splitlines()
    assert lines[0] == "### Watch"
    assert lines[4] == ("| release | date | ratio [95 % CI] | verdict | vs last release | "
                        "state | job |")
    assert lines[6] == "| 0.20.0 | 2026-04-02 | — | — | — | **broken** | — |"
    assert lines[7] == ("| 0.25.1 | 2026-06-30 | 0.58x [0.55, 0.61] | DIFFERENT | — | "
                        "**still reproduced** | [job](https://bot.example/jobs/abc) |")
    assert lines[8] == ("| 0.32.0 | — | 1.00x [0.98, 1.02] | SAME | 1.72x [1.60, 1.80] of "
                        "0.25.1 | **fixed** | — |")
    assert "- 0.25.1 **still reproduced**: spec/no\\_spec @" in text


def test_a_quoted_line_cannot_break_the_table_ping_or_inject_html() -> None:
    text = render_watch(ROWS[:1], "x")
    reason = next(ln for ln in text.splitlines() if ln.startswith("- 0.20.0"))
    assert "\\|" in reason and "<b>" not in reason and "@team" not in reason


def test_no_rows_yet() -> None:
    assert "No release measured yet." in render_watch([], "x")
