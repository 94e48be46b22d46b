"""The sticky comment: created once, edited in place, never duplicated by a retry."""

from __future__ import annotations

import pytest

from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import REPO
from triagebot.github.client import GitHubClient
from triagebot.github.comments import MAX_BODY_CHARS
from triagebot.github.errors import GitHubError
from triagebot.github.markers import marker

COMMENTS = rf"/repos/{REPO}/issues/\d+/comments"
BOT = "triagebot[bot]"


@pytest.fixture
def issue(fake_github: FakeGitHub) -> int:
    fake_github.add_issue(REPO, 1, "MTP slower", "report")
    fake_github.add_comment(REPO, 1, "@triagebot repro", "maint")
    return 1


def _ours(fake: FakeGitHub, number: int = 1) -> list[str]:
    return [c.body for c in fake.comments(REPO, number) if c.author == BOT]


def test_create_then_edit_in_place(fake_github: FakeGitHub, client: GitHubClient,
                                   issue: int) -> None:
    first = client.upsert_comment(REPO, issue, "job=abc123", "Queued (position 2)")
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nQueued (position 2)"]
    assert client.find_marked(REPO, issue, "job=abc123") == first
    # Found by marker: the same comment is edited, no second POST.
    again = client.upsert_comment(REPO, issue, "job=abc123", "Running")
    assert again == first
    # With the stored id: a PATCH and nothing else.
    before = len(fake_github.calls)
    assert client.upsert_comment(REPO, issue, "job=abc123", "Done", comment_id=first) == first
    assert [(c.method, c.path) for c in fake_github.calls[before:]] == [
        ("PATCH", f"/repos/{REPO}/issues/comments/{first}")]
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nDone"]
    assert len(fake_github.calls_to("POST", COMMENTS)) == 1
    # Another key is another comment.
    other = client.upsert_comment(REPO, issue, "reply=77", "Only maintainers can run repros.")
    assert other != first and len(_ours(fake_github)) == 2
    assert client.find_marked(REPO, issue, "job=zzz") is None


def test_ambiguous_post_makes_exactly_one_comment(fake_github: FakeGitHub,
                                                  client: GitHubClient, issue: int) -> None:
    # GitHub stores the first POST and still answers 502; two more 502s would follow.
    fake_github.fail("POST", COMMENTS, 502, times=1, apply=True)
    fake_github.fail("POST", COMMENTS, 502, times=2)
    comment_id = client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nQueued"]
    assert fake_github.comments(REPO, issue)[-1].id == comment_id
    # The marker was found after the first failure, so nothing was posted again.
    assert [c.status for c in fake_github.calls_to("POST", COMMENTS)] == [502]


def test_plain_502s_then_201_make_one_comment(fake_github: FakeGitHub,
                                              client: GitHubClient, issue: int) -> None:
    fake_github.fail("POST", COMMENTS, 502, times=3)
    comment_id = client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nQueued"]
    posts = fake_github.calls_to("POST", COMMENTS)
    assert [c.status for c in posts] == [502, 502, 502, 201]
    assert fake_github.comments(REPO, issue)[-1].id == comment_id
    # Before every repeated POST the thread was searched for the marker.
    methods = [c.method for c in fake_github.calls if "comments" in c.path]
    assert methods == ["GET", "POST", "GET", "POST", "GET", "POST", "GET", "POST"]


def test_a_lost_answer_to_a_stored_post_makes_one_comment(fake_github: FakeGitHub,
                                                          client: GitHubClient,
                                                          issue: int) -> None:
    fake_github.fail("POST", COMMENTS, 0, apply=True)  # stored, then the connection drops
    client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert len(_ours(fake_github)) == 1
    assert len(fake_github.calls_to("POST", COMMENTS)) == 1


def test_a_post_that_keeps_failing_is_visible(fake_github: FakeGitHub,
                                              client: GitHubClient, issue: int) -> None:
    fake_github.fail("POST", COMMENTS, 502, times=10)
    with pytest.raises(GitHubError, match="gave up after 5 attempts") as caught:
        client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert caught.value.transient and caught.value.status == 502
    assert len(fake_github.calls_to("POST", COMMENTS)) == 5
    assert _ours(fake_github) == []


def test_a_refused_post_is_final(fake_github: FakeGitHub, client: GitHubClient,
                                 issue: int) -> None:
    fake_github.fail("POST", COMMENTS, 422, body={"message": "Validation Failed"})
    with pytest.raises(GitHubError) as caught:
        client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert caught.value.status == 422 and not caught.value.transient
    assert len(fake_github.calls_to("POST", COMMENTS)) == 1


def test_deleted_sticky_comment_is_recreated_once(fake_github: FakeGitHub,
                                                  client: GitHubClient, issue: int) -> None:
    first = client.upsert_comment(REPO, issue, "job=abc123", "Running")
    fake_github.delete_comment(first)
    second = client.upsert_comment(REPO, issue, "job=abc123", "Done", comment_id=first)
    assert second != first
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nDone"]
    third = client.upsert_comment(REPO, issue, "job=abc123", "Done!", comment_id=second)
    assert third == second
    assert len(fake_github.calls_to("POST", COMMENTS)) == 2
    assert [c.status for c in fake_github.calls_to("PATCH", r".*/comments/\d+")] == [404, 200]


def test_stale_id_with_the_comment_still_there_edits_it(fake_github: FakeGitHub,
                                                        client: GitHubClient,
                                                        issue: int) -> None:
    first = client.upsert_comment(REPO, issue, "job=abc123", "Running")
    # An id from another thread (say, a stale job record): 404, then the marker wins.
    assert client.upsert_comment(REPO, issue, "job=abc123", "Done", comment_id=99999) == first
    assert _ours(fake_github) == [f"{marker('job=abc123')}\nDone"]


def test_a_human_pasting_our_marker_is_ignored(fake_github: FakeGitHub,
                                               client: GitHubClient, issue: int) -> None:
    spoof = fake_github.add_comment(REPO, issue, f"{marker('job=abc123')}\nall good, no run",
                                    "mallory")
    fake_github.add_comment(REPO, issue, f"{marker('job=abc123')}\nanother bot", "other[bot]",
                            author_type="Bot")
    assert client.find_marked(REPO, issue, "job=abc123") is None
    ours = client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert ours != spoof
    bodies = {c.id: (c.author, c.body) for c in fake_github.comments(REPO, issue)}
    assert bodies[spoof] == ("mallory", f"{marker('job=abc123')}\nall good, no run")
    assert bodies[ours] == (BOT, f"{marker('job=abc123')}\nQueued")
    assert client.find_marked(REPO, issue, "job=abc123") == ours


def test_marker_search_reads_every_page(fake_github: FakeGitHub, client: GitHubClient,
                                        issue: int) -> None:
    for i in range(210):
        fake_github.add_comment(REPO, issue, f"chatter {i}", "bob")
    ours = client.upsert_comment(REPO, issue, "job=abc123", "Queued")
    assert client.find_marked(REPO, issue, "job=abc123") == ours
    assert client.upsert_comment(REPO, issue, "job=abc123", "Done") == ours
    assert len(fake_github.calls_to("POST", COMMENTS)) == 1


def test_overlong_bodies_are_cut_to_githubs_limit(fake_github: FakeGitHub,
                                                  client: GitHubClient, issue: int) -> None:
    client.upsert_comment(REPO, issue, "job=abc123", "y" * 70_000)
    (body,) = _ours(fake_github)
    assert len(body) == MAX_BODY_CHARS and body.startswith(marker("job=abc123"))
    assert body.endswith("65,536 characters)\n")


def test_reactions(fake_github: FakeGitHub, client: GitHubClient, issue: int) -> None:
    command = fake_github.comments(REPO, issue)[0].id
    client.react(REPO, command, "eyes")
    client.react(REPO, command, "eyes")  # GitHub answers 200 for an existing reaction
    fake_github.fail("POST", rf"/repos/{REPO}/issues/comments/\d+/reactions", 502)
    client.react(REPO, command, "rocket")  # idempotent, so retried
    assert fake_github.reactions(command) == [(BOT, "eyes"), (BOT, "rocket")]


def test_comments_can_carry_the_id_of_a_webhook_payload(fake_github: FakeGitHub,
                                                        client: GitHubClient,
                                                        issue: int) -> None:
    assert fake_github.add_comment(REPO, issue, "@triagebot repro", "maint",
                                   comment_id=7001) == 7001
    with pytest.raises(ValueError, match="exists"):
        fake_github.add_comment(REPO, issue, "again", "maint", comment_id=7001)
    client.react(REPO, 7001, "+1")
    assert fake_github.reactions(7001) == [(BOT, "+1")]


def test_labels(fake_github: FakeGitHub, client: GitHubClient, issue: int) -> None:
    client.add_labels(REPO, issue, ["triage:reproduced"])
    fake_github.fail("POST", rf"/repos/{REPO}/issues/\d+/labels", 503)
    client.add_labels(REPO, issue, ["triage:reproduced", "perf"])
    client.add_labels(REPO, issue, [])
    assert fake_github.labels(REPO, issue) == ["triage:reproduced", "perf"]
    assert len(fake_github.calls_to("POST", rf"/repos/{REPO}/issues/\d+/labels")) == 3
