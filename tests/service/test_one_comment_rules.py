"""Two commands in one comment, and edits (issue 41, item 10).

`repro` then `cancel` in one comment cancelled only the older jobs, kept the new one and
said nothing; editing a repro's arguments queued a second job beside the first. The
rules now: a comment's `cancel` acts first, on the jobs queued or running before the
comment, whatever the order written, and the reply says so; an edit that changes a
comment's repro replaces the job that comment started."""

from __future__ import annotations

from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.threads import bot_comments, comment_event
from triagebot.workers.triage import Triage


def _replies(fake: Any) -> list[str]:
    return [c.body for c in bot_comments(fake) if "reply=" in c.body.split("\n")[0]]


def test_repro_then_cancel_cancels_the_older_job_and_says_so(env: dict[str, Any]) -> None:
    triage: Triage = env["triage"]
    fake, store = env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro runs=2"))
    [old] = store.thread_jobs(REPO, 42)
    triage.handle(comment_event(fake, "@triagebot repro runs=3\n@triagebot cancel"))
    new, older = store.thread_jobs(REPO, 42)
    assert older.id == old.id and older.state == "cancelled"
    assert new.state == "queued" and not new.cancel_requested
    [reply] = _replies(fake)
    assert "`cancel` ran first" in reply and old.id in reply


def test_cancel_then_repro_does_the_same(env: dict[str, Any]) -> None:
    triage: Triage = env["triage"]
    fake, store = env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro runs=2"))
    triage.handle(comment_event(fake, "@triagebot cancel\n@triagebot repro runs=3"))
    new, older = store.thread_jobs(REPO, 42)
    assert older.state == "cancelled" and new.state == "queued"


def test_editing_a_repros_arguments_replaces_its_job(env: dict[str, Any]) -> None:
    triage: Triage = env["triage"]
    fake, store = env["fake"], env["store"]
    first = comment_event(fake, "@triagebot repro runs=2")
    assert first.comment is not None
    triage.handle(first)
    [old] = store.thread_jobs(REPO, 42)
    triage.handle(comment_event(fake, "@triagebot repro runs=3", action="edited",
                                previous="@triagebot repro runs=2",
                                comment_id=first.comment.id, delivery="d-2"))
    new, older = store.thread_jobs(REPO, 42)
    assert older.id == old.id and older.state == "cancelled"
    assert "edited" in (older.cancel_reason or "")
    assert new.state == "queued" and new.command == "repro runs=3"
    [reply] = _replies(fake)
    assert "The edit changed this comment's command" in reply and old.id in reply
    triage.publish(old.id)
    [old_comment] = [c for c in bot_comments(fake) if f"job={old.id}" in c.body]
    assert "its command was edited" in old_comment.body
