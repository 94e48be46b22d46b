"""Nothing a stranger writes costs a maintainer anything (issue 41, items 1 and 9).

A stranger (no role on the repository: not triage or more, not listed in the repo
config) got the full 2.7 KB help for each `help`, `status` or unknown command. Now they
get one short answer per thread and day, within per-thread and per-user budgets, or a
reaction, or nothing, as the repo config says; and an answer that is the same for whoever
asks (help, status) is not posted twice on a thread.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.threads import bot_comments, comment_event


def _bot_reactions(fake: Any, comment_ids: list[int]) -> list[str]:
    return [content for cid in comment_ids for who, content in fake.reactions(cid)
            if who == "triagebot[bot]"]


def test_a_strangers_ten_commands_get_one_short_answer(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    bodies = ["@triagebot help", "@triagebot status", "@triagebot frobnicate"] * 3 + [
        "@triagebot help"]
    for body in bodies:
        triage.handle(comment_event(fake, body, author="drive-by"))
    [answer] = bot_comments(fake)
    assert len(answer.body) < 500
    assert "`help` was not run" in answer.body and "A maintainer can run it" in answer.body
    assert "| command |" not in answer.body  # never the help table


def test_the_thread_budget_caps_answers_to_many_strangers(env: dict[str, Any]) -> None:
    triage, fake, settings = env["triage"], env["fake"], env["settings"]
    for n in range(6):
        triage.handle(comment_event(fake, "@triagebot help", author=f"stranger{n}"))
    assert len(bot_comments(fake)) == settings.stranger_answers_per_thread_hour


def test_a_repo_may_answer_strangers_with_a_reaction_only(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    fake.set_file(REPO, ".github/triagebot.toml", '[access]\nstrangers = "react"\n')
    ids = []
    for body in ("@triagebot help", "@triagebot status", "@triagebot nope"):
        event = comment_event(fake, body, author="drive-by")
        assert event.comment is not None
        ids.append(event.comment.id)
        triage.handle(event)
    assert bot_comments(fake) == []
    assert _bot_reactions(fake, ids) == ["eyes"]


def test_a_repo_may_ignore_strangers(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    fake.set_file(REPO, ".github/triagebot.toml", '[access]\nstrangers = "ignore"\n')
    triage.handle(comment_event(fake, "@triagebot help", author="drive-by"))
    assert bot_comments(fake) == []


def test_triage_role_gets_the_full_help(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    fake.set_permission(REPO, "triager", "triage")
    triage.handle(comment_event(fake, "@triagebot help", author="triager"))
    [reply] = bot_comments(fake)
    assert "| command |" in reply.body


def test_a_repeated_help_is_not_posted_twice(env: dict[str, Any]) -> None:
    triage, fake = env["triage"], env["fake"]
    triage.handle(comment_event(fake, "@triagebot help"))
    again = comment_event(fake, "@triagebot help")
    triage.handle(again)
    assert len(bot_comments(fake)) == 1
    assert again.comment is not None
    assert _bot_reactions(fake, [again.comment.id]) == ["eyes"]


def test_a_read_only_users_cancel_is_answered_about_cancelling(env: dict[str, Any]) -> None:
    # It got the repro refusal: "Starting GPU work needs write ...".
    triage, fake, store = env["triage"], env["fake"], env["store"]
    triage.handle(comment_event(fake, "@triagebot repro"))
    [job] = store.thread_jobs(REPO, 42)
    fake.set_permission(REPO, "reader", "read")
    fake.set_permission(REPO, "triager", "triage")
    triage.handle(comment_event(fake, "@triagebot cancel", author="reader"))
    triage.handle(comment_event(fake, "@triagebot cancel", author="triager"))
    replies = [c.body for c in bot_comments(fake) if "reply=" in c.body.split("\n")[0]]
    assert len(replies) == 2
    assert all("Starting GPU work" not in body for body in replies)
    assert "`cancel` was not run" in replies[0]
    assert "Cancelling a job needs write" in replies[1]
    assert not store.require(job.id).cancel_requested
