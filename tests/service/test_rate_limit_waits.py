"""Rate limits longer than a worker waits inline (issue 27, item 4): the event is tried
again no earlier than GitHub asked, and waiting never uses up its tries.

The triage task used to retry after min(600, 5 * 2^n) s whatever GitHub said, and drop
the event after 8 tries (about 20 minutes in all), less than one primary-limit reset."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import FakeGitHub
from tests.fakes.services import wait_for
from tests.service.threads import bot_comments
from tests.service.triage_only import triage_service
from triagebot.github.errors import GitHubError
from triagebot.workers.retry_policy import MAX_FAILURES, next_try

WAIT_S = 9


@pytest.mark.parametrize("primary", [False, True], ids=["retry-after", "ratelimit-reset"])
def test_a_long_rate_limit_is_waited_out_not_retried_early(
        fake_github: FakeGitHub, namespace: str, tmp_path: Path, primary: bool) -> None:
    # max_rate_limit_wait_s=0: the client never sleeps on a limit, the task waits instead.
    with triage_service(fake_github, namespace, tmp_path, max_rate_limit_wait_s=0) as svc:
        svc.start_worker()
        svc.wait_ready()
        fake_github.rate_limit("POST", rf"/repos/{REPO}/issues/42/comments", WAIT_S,
                               primary=primary)
        _, raw = svc.comment_delivery("@triagebot help")
        assert svc.post(raw, str(uuid.uuid4())).status_code == 202
        wait_for(lambda: [c for c in bot_comments(fake_github) if "commands" in c.body],
                 60, "the help reply", svc.logs)
    posts = fake_github.calls_to("POST", rf"/repos/{REPO}/issues/42/comments")
    assert [c.status for c in posts][-1] == 201
    assert fake_github.too_early == [], [c.wall - posts[0].wall for c in posts]
    assert posts[0].status in (403, 429) and posts[-1].wall - posts[0].wall >= WAIT_S


def test_waiting_never_runs_out_and_never_comes_early() -> None:
    limited = GitHubError("limited", status=403, transient=True, retry_after_s=3600,
                          rate_limited=True)
    for waits in (0, 8, 50, 500):
        countdown = next_try(limited, failures=MAX_FAILURES, waits=waits)
        assert countdown is not None and countdown.wait and countdown.seconds >= 3600
    unhinted = GitHubError("limited", status=429, transient=True, rate_limited=True)
    first = next_try(unhinted, failures=0, waits=0)
    assert first is not None and first.seconds >= 60
    broken = GitHubError("bad gateway", status=502, transient=True)
    assert next_try(broken, failures=MAX_FAILURES, waits=0) is None
    retried = next_try(broken, failures=0, waits=30)
    assert retried is not None and not retried.wait and retried.seconds <= 10
    assert next_try(GitHubError("no", status=404), failures=0, waits=0) is None
