"""Comments as maintainers really write them, against the triage executor, the fake GitHub
and a real Redis (issue 27): a command named mid-sentence does nothing, an edit that adds
a command keeps the first command's reply, `cancel` says it by editing the job comment.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.threads import bot_comments, comment_event
from triagebot.decisions import replies as words
from triagebot.workers.triage import Triage


def test_a_command_named_mid_sentence_does_nothing(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    [job] = store.thread_jobs(REPO, 42)
    before = len(bot_comments(fake))
    for body in ("Looks real to me. No need to @triagebot cancel",
                 "please @triagebot status"):
        triage.handle(comment_event(fake, body))
    assert store.require(job.id).state == "queued" and not store.require(job.id).cancel_requested
    assert len(bot_comments(fake)) == before


def test_an_edit_that_adds_a_command_keeps_the_first_commands_reply(
        env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    first = comment_event(fake, "@triagebot help")
    triage.handle(first)
    [help_reply] = bot_comments(fake)
    assert "commands" in help_reply.body
    edited = comment_event(fake, "@triagebot help\n@triagebot status", action="edited",
                           previous="@triagebot help", comment_id=first.comment.id,
                           delivery="d-2")
    triage.handle(edited)
    triage.handle(edited)  # GitHub's redelivery of the edit adds nothing
    replies = bot_comments(fake)
    assert len(replies) == 2
    kept = next(c for c in replies if c.id == help_reply.id)
    assert kept.body == help_reply.body  # the help reply was not overwritten
    [status] = [c for c in replies if c.id != help_reply.id]
    assert "No reproduction has been requested" in status.body


def test_cancel_edits_the_job_comment_without_a_second_comment(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    [job] = store.thread_jobs(REPO, 42)
    cancel = comment_event(fake, "@triagebot cancel")
    triage.handle(cancel)
    triage.publish(job.id)
    [comment] = bot_comments(fake)  # the job's own comment, and no reply beside it
    assert comment.body.startswith(f"<!-- triagebot:v1 job={job.id} -->")
    assert "Cancelled** by @maint" in comment.body
    assert ("triagebot[bot]", "+1") in fake.reactions(cancel.comment.id)


def test_the_bisect_acknowledgement_describes_the_bisect(env: dict[str, Any],
                                                        tmp_path: Path) -> None:
    # It answered "Queued a reproduction ... on vllm 0.25.1 ... about 8 min": a version
    # outside the range and the time of one step.
    from tests.bisect.tiny_engine import build_index

    settings = env["settings"].model_copy(
        update={"bisect_find_links": build_index(tmp_path / "index", nightlies=False)})
    triage = Triage(settings, env["store"], env["triage"].ctx.celery, env["triage"].ctx.github)
    fake = env["fake"]
    triage.handle(comment_event(fake, "@triagebot bisect good=0.17.1 bad=0.20.0"))
    [job] = env["store"].thread_jobs(REPO, 42)
    [ack] = bot_comments(fake)
    body = ack.body
    assert "Queued** a bisect" in body and "reproduction" not in body.split("\n")[1]
    assert "0.17.1" in body and "0.20.0" in body and "0.25.1" not in body
    # 0.18.0, 0.18.1, 0.19.0 and 0.19.1 lie between: ceil(log2 5) steps and one to
    # confirm the answer.
    assert "4 releases between them" in body and "about 4 steps" in body
    step = env["store"].plan(job.id).estimated_seconds
    assert f"about {words.duration(4 * step)} of GPU time in all" in body


def test_deleting_a_repro_comment_cancels_its_job_and_says_why(env: dict[str, Any]) -> None:
    # Issue 41, item 4: the job ran on after its comment was deleted.
    triage, fake, store = env["triage"], env["fake"], env["store"]
    created = comment_event(fake, "@triagebot repro")
    triage.handle(created)
    [job] = store.thread_jobs(REPO, 42)
    assert created.comment is not None
    fake.delete_comment(created.comment.id)
    triage.handle(comment_event(fake, "@triagebot repro", action="deleted",
                                comment_id=created.comment.id, delivery="d-2"))
    cancelled = store.require(job.id)
    assert cancelled.state == "cancelled"
    triage.publish(job.id)
    [comment] = bot_comments(fake)
    assert "Cancelled** by @maint (the comment that asked for it was deleted)" in comment.body


def test_a_comment_deleted_before_it_was_handled_starts_nothing(env: dict[str, Any]) -> None:
    triage, fake, store = env["triage"], env["fake"], env["store"]
    created = comment_event(fake, "@triagebot repro")
    assert created.comment is not None
    fake.delete_comment(created.comment.id)
    # The deletion is handled first (two worker processes), then the creation.
    triage.handle(comment_event(fake, "@triagebot repro", action="deleted",
                                comment_id=created.comment.id, delivery="d-2"))
    triage.handle(created)
    assert store.thread_jobs(REPO, 42) == [] and bot_comments(fake) == []


def test_a_reaction_on_a_vanished_comment_is_no_failure(env: dict[str, Any]) -> None:
    # The deletion event has not come yet: the job starts, and its +1 finds no comment;
    # that must not fail the event (no ERROR, no failed delivery).
    triage, fake, store = env["triage"], env["fake"], env["store"]
    created = comment_event(fake, "@triagebot repro")
    assert created.comment is not None
    fake.delete_comment(created.comment.id)
    triage.handle(created)
    [job] = store.thread_jobs(REPO, 42)
    assert job.state == "queued"


def test_a_bisect_between_unknown_versions_is_refused_on_arrival(env: dict[str, Any],
                                                                tmp_path: Path) -> None:
    # Issue 41, item 6: it was queued and failed on a runner, "results kept on the job
    # page", though it was no reproduction and had no results.
    from tests.bisect.tiny_engine import build_index

    settings = env["settings"].model_copy(
        update={"bisect_find_links": build_index(tmp_path / "index", nightlies=False)})
    triage = Triage(settings, env["store"], env["triage"].ctx.celery, env["triage"].ctx.github)
    fake = env["fake"]
    triage.handle(comment_event(fake, "@triagebot bisect good=0.17.1 bad=0.99.0"))
    assert env["store"].thread_jobs(REPO, 42) == []
    [reply] = bot_comments(fake)
    assert "bisect" in reply.body and "0.99.0" in reply.body
    assert "could not finish" not in reply.body
