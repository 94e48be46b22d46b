"""The tracking issue's body and comments (report/sentinel.py): pure, from plain values."""

from __future__ import annotations

from datetime import UTC, datetime

from triagebot.report.sentinel import (
    TrackRow,
    change_comment,
    issue_body,
    not_regression_reply,
    title,
)
from triagebot.sentinel.models import CaseFigures, Flag, ModeFigures, SentinelCase

CASE = SentinelCase(case_id="vllm-mtp-k1-standin-cpu", engine="vllm", model="standin",
                    method="mtp", k=1, modes=["eager", "graph"], workload="offline",
                    runner="cpu")
FLAG = Flag(case_id=CASE.case_id, release="0.32.0", previous="0.29.0",
            kind="stopped_paying", mode="graph",
            reason="under graph speculation runs at 0.91x [0.88, 0.94] of no speculation")
FIGURES = CaseFigures(
    case_id=CASE.case_id, engine="vllm", release="0.32.0", previous="0.29.0", status="ok",
    measured_at=datetime(2026, 11, 1, tzinfo=UTC), modes=[
        ModeFigures(mode="eager", spec_ratio=1.31, spec_ci=(1.27, 1.35), verdict="DIFFERENT",
                    ratio_of_ratios=0.99, ror_ci=(0.95, 1.03), ror_verdict="SAME",
                    acceptance_rate=0.62, acceptance_ci=(0.6, 0.64), per_position=[0.62],
                    previous_acceptance=0.63, outputs_equal=True),
        ModeFigures(mode="graph", spec_ratio=0.91, spec_ci=(0.88, 0.94), verdict="DIFFERENT",
                    ratio_of_ratios=0.7, ror_ci=(0.66, 0.74), ror_verdict="DIFFERENT",
                    acceptance_rate=0.61, outputs_equal=False)])


def test_the_body_holds_the_verdicts_acceptance_bisect_and_reproduce_block() -> None:
    rows = [TrackRow(release="0.32.0", previous="0.29.0", reason=FLAG.reason,
                     job_url="http://t/jobs/a", bisect_url="http://t/jobs/b")]
    body = issue_body(CASE, FLAG, FIGURES, rows, command_name="triagebot", source="o/r")
    assert "**vllm-mtp-k1-standin-cpu**" in body
    assert "speculation stopped paying" in body
    assert "| graph | 0.910x [0.880, 0.940] | DIFFERENT | 0.700x [0.660, 0.740] DIFFERENT " \
           "| DIVERGED |" in body
    assert "| eager | 0.62 [0.60, 0.64] | 0.63 | 0.62 |" in body
    assert "[bisect 0.29.0..0.32.0](http://t/jobs/b) (queued)" in body
    assert ("In a checkout of o/r:\n\n```bash\ntriagebot sentinel --engine vllm --runner cpu "
            "--releases 0.29.0,0.32.0 --cases vllm-mtp-k1-standin-cpu --config "
            ".github/triagebot.toml\n```") in body
    assert "`@triagebot not-a-regression`" in body


def test_no_bisect_says_why_and_a_mark_says_who() -> None:
    rows = [TrackRow(release="0.32.0", previous="0.29.0", reason="r",
                     bisect_note="not started: no plan")]
    body = issue_body(CASE, FLAG, FIGURES, rows, command_name="triagebot",
                      marked_by=["maint"])
    assert "| not started: no plan |" in body
    assert "Marked **not a regression** by @maint" in body
    assert "@triagebot not-a-regression" not in body


def test_a_crash_quotes_the_engine_in_one_line_and_titles_stay_short() -> None:
    crashed = FIGURES.model_copy(update={"status": "crashed", "modes": [],
                                         "error_line": "RuntimeError: boom\n<b>x</b>"})
    flag = FLAG.model_copy(update={"kind": "crashed", "reason": "it crashed"})
    body = issue_body(CASE, flag, crashed, [], command_name="triagebot")
    assert "The engine said: `RuntimeError: boom" in body and "<b>" not in body
    assert "### Verdicts" not in body
    assert len(title(CASE, flag.model_copy(update={"release": "9" * 300}))) <= 200


def test_a_later_release_comment_and_the_reply_give_their_numbers() -> None:
    row = TrackRow(release="0.33.0", previous="0.32.0", reason="again", job_url="http://j")
    text = change_comment(CASE, FLAG, row)
    assert "again at **0.33.0** (against 0.32.0)" in text and "([job](http://j))" in text
    assert "2.0% (1 of 50 flags)" in not_regression_reply(1, 50, 1)
    assert "already counted" in not_regression_reply(0, 50, 1)
    assert "rate is now -" in not_regression_reply(0, 0, 0)
