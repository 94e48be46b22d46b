"""Rate limits, retries and token refresh, as seen from the fake GitHub's clock."""

from __future__ import annotations

import logging
import time

import pytest

from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import FAST, REPO, settings_for
from triagebot.github.calls import RetryPolicy
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError
from triagebot.settings import SettingsError

ISSUE = rf"/repos/{REPO}/issues/1"
COMMENTS = rf"/repos/{REPO}/issues/1/comments"
MINT = "/app/installations/1/access_tokens"


@pytest.fixture(autouse=True)
def _issue(fake_github: FakeGitHub) -> None:
    fake_github.add_issue(REPO, 1, "t", "b")


def test_429_with_retry_after_is_honoured(fake_github: FakeGitHub,
                                          client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 429, headers={"Retry-After": "1"})
    assert client.read_thread(REPO, 1).title == "t"
    calls = fake_github.calls_to("GET", ISSUE)
    assert [c.status for c in calls] == [429, 200]
    assert calls[1].time - calls[0].time >= 1.0


def test_secondary_limit_on_a_post_waits_then_posts_once(fake_github: FakeGitHub,
                                                         client: GitHubClient) -> None:
    fake_github.fail("POST", COMMENTS, 403, headers={"Retry-After": "1"},
                     body={"message": "You have exceeded a secondary rate limit. Please wait a "
                                      "few minutes before you try again."})
    client.upsert_comment(REPO, 1, "job=abc", "Queued")
    posts = fake_github.calls_to("POST", COMMENTS)
    assert [c.status for c in posts] == [403, 201]
    assert posts[1].time - posts[0].time >= 1.0
    # A rate-limited POST was refused, not stored: no marker search in between.
    assert [c.method for c in fake_github.calls if "comments" in c.path] == [
        "GET", "POST", "POST"]
    assert len(fake_github.comments(REPO, 1)) == 1


def test_primary_limit_waits_for_the_reset(fake_github: FakeGitHub,
                                           client: GitHubClient) -> None:
    reset = int(time.time()) + 1
    fake_github.fail("GET", ISSUE, 403,
                     headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(reset),
                              "x-ratelimit-limit": "5000"},
                     body={"message": "API rate limit exceeded for installation ID 1."})
    client.read_thread(REPO, 1)
    calls = fake_github.calls_to("GET", ISSUE)
    assert [c.status for c in calls] == [403, 200]
    assert calls[1].wall >= reset


def test_unhinted_limits_wait_the_floor_then_double(fake_github: FakeGitHub,
                                                    client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 429, times=2, body={"message": "slow down"})
    client.read_thread(REPO, 1)
    calls = fake_github.calls_to("GET", ISSUE)
    assert [c.status for c in calls] == [429, 429, 200]
    assert calls[1].time - calls[0].time >= FAST.rate_limit_floor_s
    assert calls[2].time - calls[1].time >= 2 * FAST.rate_limit_floor_s


def test_a_wait_above_the_cap_fails_as_transient(fake_github: FakeGitHub,
                                                 client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 429, headers={"Retry-After": "3600"})
    with pytest.raises(GitHubError, match="max_rate_limit_wait_s") as caught:
        client.read_thread(REPO, 1)
    assert caught.value.transient and caught.value.rate_limited
    assert caught.value.status == 429 and caught.value.retry_after_s == 3600
    assert len(fake_github.calls_to("GET", ISSUE)) == 1


def test_the_floor_counts_against_the_cap(fake_github: FakeGitHub) -> None:
    settings = settings_for(fake_github, max_rate_limit_wait_s=0.1)
    fake_github.fail("POST", COMMENTS, 403,
                     body={"message": "You have exceeded a secondary rate limit."})
    with GitHubClient.for_installation(settings, 1, policy=FAST) as client, \
            pytest.raises(GitHubError) as caught:
        client.upsert_comment(REPO, 1, "job=abc", "Queued")
    assert caught.value.transient and caught.value.retry_after_s == FAST.rate_limit_floor_s
    assert len(fake_github.calls_to("POST", COMMENTS)) == 1


def test_server_errors_are_retried_then_visible(fake_github: FakeGitHub,
                                                client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 502, times=2)
    assert client.read_thread(REPO, 1).title == "t"
    fake_github.fail("GET", ISSUE, 500, times=20)
    with pytest.raises(GitHubError, match="gave up after 5 attempts") as caught:
        client.read_thread(REPO, 1)
    assert caught.value.transient and caught.value.status == 500
    assert [c.status for c in fake_github.calls_to("GET", ISSUE)] == [502, 502, 200] + [500] * 5


def test_a_forbidden_answer_is_not_retried(fake_github: FakeGitHub,
                                           client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 403,
                     body={"message": "Resource not accessible by integration"})
    with pytest.raises(GitHubError) as caught:
        client.read_thread(REPO, 1)
    assert caught.value.status == 403 and not caught.value.transient
    assert len(fake_github.calls_to("GET", ISSUE)) == 1


def test_dropped_connections_are_retried(fake_github: FakeGitHub,
                                         client: GitHubClient) -> None:
    fake_github.fail("GET", ISSUE, 0, times=2)
    assert client.read_thread(REPO, 1).title == "t"
    assert [c.status for c in fake_github.calls_to("GET", ISSUE)] == [0, 0, 200]


def test_the_injected_sleep_gets_the_waits(fake_github: FakeGitHub, settings: object) -> None:
    slept: list[float] = []
    fake_github.fail("GET", ISSUE, 429, headers={"Retry-After": "30"})
    fake_github.fail("GET", ISSUE, 429, times=2)
    # Production waits, without PyGithub's pacing between requests.
    policy = RetryPolicy(seconds_between_requests=0, seconds_between_writes=0)
    with GitHubClient.for_installation(settings, 1, slept.append,  # type: ignore[arg-type]
                                       policy=policy) as client:
        client.read_thread(REPO, 1)
    # Production policy: Retry-After as asked, then 60 s and 120 s for unhinted limits.
    assert slept == [30.0, 60.0, 120.0]


def test_an_expired_token_is_replaced_once(fake_github: FakeGitHub,
                                           client: GitHubClient) -> None:
    client.read_thread(REPO, 1)
    fake_github.expire_tokens()
    assert client.upsert_comment(REPO, 1, "job=abc", "Queued")
    assert len(fake_github.calls_to("POST", MINT)) == 2
    statuses = [(c.method, c.status) for c in fake_github.calls if c.path != MINT]
    # The refused GET is repeated with the new token; the POST then goes through once.
    assert statuses[2:] == [("GET", 401), ("GET", 200), ("POST", 201)]
    assert len(fake_github.comments(REPO, 1)) == 1


def test_a_refused_post_is_repeated_with_a_new_token(fake_github: FakeGitHub,
                                                     client: GitHubClient) -> None:
    client.read_thread(REPO, 1)
    fake_github.fail("POST", COMMENTS, 401, body={"message": "Bad credentials"})
    client.upsert_comment(REPO, 1, "job=abc", "Queued")
    assert [c.status for c in fake_github.calls_to("POST", COMMENTS)] == [401, 201]
    assert len(fake_github.calls_to("POST", MINT)) == 2
    assert len(fake_github.comments(REPO, 1)) == 1


def test_short_lived_tokens_are_refreshed_before_use(fake_github: FakeGitHub,
                                                     client: GitHubClient) -> None:
    # PyGithub mints again when a token has less than 20 s left.
    fake_github.token_ttl_s = 15
    client.read_thread(REPO, 1)
    client.read_thread(REPO, 1)
    assert len(fake_github.calls_to("POST", MINT)) == 4
    assert all(c.status != 401 for c in fake_github.calls)


def test_a_key_github_does_not_know_fails_visibly(fake_github: FakeGitHub,
                                                  other_key_pem: str) -> None:
    settings = settings_for(fake_github, app_private_key=other_key_pem)
    with GitHubClient.for_installation(settings, 1, policy=FAST) as client, \
            pytest.raises(GitHubError) as caught:
        client.read_thread(REPO, 1)
    assert caught.value.status == 401 and not caught.value.transient
    assert "private key" in str(caught.value)
    # The mint is refused once; nothing is asked of the repository without a token.
    assert [(c.path, c.status) for c in fake_github.calls] == [
        ("/app/installations/1/access_tokens", 401)]


def test_a_broken_key_is_a_settings_error(fake_github: FakeGitHub) -> None:
    settings = settings_for(fake_github, app_private_key="-----BEGIN nonsense-----")
    with pytest.raises(SettingsError, match="not an RSA private key"):
        GitHubClient.for_installation(settings, 1, policy=FAST)
    settings = settings_for(fake_github, app_id=None)
    with pytest.raises(SettingsError, match="TRIAGEBOT_APP_ID"):
        GitHubClient.for_installation(settings, 1, policy=FAST)
    assert fake_github.calls == []


def test_writes_are_paced(fake_github: FakeGitHub) -> None:
    policy = FAST.model_copy(update={"seconds_between_writes": 0.3})
    with GitHubClient.for_installation(settings_for(fake_github), 1, policy=policy) as client:
        first = client.upsert_comment(REPO, 1, "job=abc", "Queued")
        client.upsert_comment(REPO, 1, "job=abc", "Done", comment_id=first)
    writes = [c for c in fake_github.calls if c.method in ("POST", "PATCH")
              and c.path != MINT]
    assert [c.method for c in writes] == ["POST", "PATCH"]
    assert writes[1].time - writes[0].time >= 0.3


def test_tokens_never_reach_our_logs_or_errors(fake_github: FakeGitHub, client: GitHubClient,
                                               caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG, logger="triagebot")
    client.read_thread(REPO, 1)
    fake_github.expire_tokens()
    client.read_thread(REPO, 1)
    fake_github.fail("GET", ISSUE, 502)
    fake_github.fail("GET", ISSUE, 403, body={"message": "Resource not accessible"})
    with pytest.raises(GitHubError) as caught:
        client.read_thread(REPO, 1)
    assert "retrying" in caplog.text and "minting a new one" in caplog.text
    tokens = [c for c in fake_github.calls_to("POST", MINT)]
    assert len(tokens) == 2
    for token in fake_github._tokens:  # every token the fake issued
        assert token not in caplog.text and token not in str(caught.value)
    assert fake_github.private_key_pem.splitlines()[1] not in caplog.text
