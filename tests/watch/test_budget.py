"""`[watch] runner_minutes_per_day`: a release past the day's runner minutes waits, is
shown as waiting (naming the limit) in the thread's Watch table and `status`, and runs
on the next day's poll; it is never dropped."""

from __future__ import annotations

from pathlib import Path

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.release_feed import serve_feed
from tests.watch.triage_side import (
    context,
    finish,
    record,
    runs,
    settings_for,
    tick,
    watched,
    watches,
)
from triagebot.github.markers import has_marker
from triagebot.workers.triage_facts import watch_facts


def test_a_release_past_the_days_minutes_waits_and_runs_the_next_day(
        namespace: str, fake_github: FakeGitHub, tmp_path: Path) -> None:
    fake_github.add_issue(REPO, 42, "ngram slower than no speculation", "-",
                          author="reporter")
    fake_github.set_file(REPO, ".github/triagebot.toml",
                         "[watch]\nrunner_minutes_per_day = 10\n")
    with serve_feed() as feed:
        ctx = context(settings_for(namespace, fake_github, feed.url, tmp_path))
        job = watched(ctx)
        feed.publish("vllm", "0.20.1", "2026-01-02")
        feed.publish("vllm", "0.21.0", "2026-02-01")
        # Watch runs of this repository already spent the day's minutes.
        watches(ctx).add_minutes(REPO, "20260301", 12.5)
        assert tick(ctx, "20260301") == 0
        assert tick(ctx, "20260301") == 0
        assert runs(ctx, "0.21.0") == []
        waiting = record(ctx).waiting
        assert waiting == ("0.21.0 waits: the repository's runner minutes for today (UTC) "
                           "are spent (12 of `[watch] runner_minutes_per_day` = 10); it "
                           "runs on the next day's poll.")
        sticky = [c for c in fake_github.comments(REPO, 42) if has_marker(c.body, f"job={job.id}")]
        assert len(sticky) == 1 and f"**Waiting:** {waiting}" in sticky[0].body
        status = watch_facts(ctx, REPO, 42, tuple(ctx.store.thread_jobs(REPO, 42)))
        assert status.lines == (f"waiting: {waiting}",)

        # The next day has minutes again: the release runs, and no longer waits.
        assert tick(ctx, "20260302") == 1
        assert record(ctx).waiting == ""
        finish(ctx, "0.21.0", "0.20.1", 0.6)
        rec = record(ctx)
        assert [(r.release, r.state) for r in rec.rows] == [("0.21.0", "reproduced")]
        sticky = [c for c in fake_github.comments(REPO, 42) if has_marker(c.body, f"job={job.id}")]
        assert "**Waiting:**" not in sticky[0].body and "| 0.21.0 |" in sticky[0].body
