"""Reading through the client: threads, pages, permissions, teams, repo files."""

from __future__ import annotations

import pytest

from tests.fakes.github_server import FakeGitHub
from tests.github.conftest import FAST, REPO, settings_for
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError


def _paths(fake: FakeGitHub) -> list[tuple[str, str]]:
    return [(c.method, c.path) for c in fake.calls if "access_tokens" not in c.path]


def test_read_issue(fake_github: FakeGitHub, client: GitHubClient) -> None:
    fake_github.add_issue(REPO, 7, "MTP slower under graphs", "body text", author="carol",
                          labels=["bug", "perf"])
    fake_github.add_comment(REPO, 7, "same here", "dave")
    fake_github.add_comment(REPO, 7, "ack", "triagebot[bot]", author_type="Bot")
    thread = client.read_thread(REPO, 7)
    assert (thread.repo, thread.number, thread.title, thread.body, thread.author) == (
        REPO, 7, "MTP slower under graphs", "body text", "carol")
    assert (thread.is_pr, thread.state, thread.labels) == (False, "open", ["bug", "perf"])
    assert thread.html_url == f"{fake_github.web_url}/{REPO}/issues/7"
    assert (thread.head_sha, thread.head_ref, thread.base_ref) == (None, None, None)
    assert [(c.author, c.author_type, c.body) for c in thread.comments] == [
        ("dave", "User", "same here"), ("triagebot[bot]", "Bot", "ack")]
    assert thread.comments[0].created_at.tzinfo is not None
    # Lazy objects: one request for the issue, one per page of comments, nothing hidden.
    assert _paths(fake_github) == [("GET", f"/repos/{REPO}/issues/7"),
                                   ("GET", f"/repos/{REPO}/issues/7/comments")]
    mint = fake_github.calls_to("POST", "/app/installations/1/access_tokens")
    # The least a thread needs: no members: read (issue 27, item 6).
    assert len(mint) == 1 and mint[0].body == {"permissions": {
        "issues": "write", "pull_requests": "write", "contents": "read",
        "metadata": "read"}}
    assert {c.auth for c in fake_github.calls} == {"jwt", "token"}


def test_read_pull_request(fake_github: FakeGitHub, client: GitHubClient) -> None:
    fake_github.add_issue(REPO, 8, "Speed up", "", is_pr=True, head_sha="ab" * 20,
                          head_ref="fast-path", base_ref="release")
    thread = client.read_thread(REPO, 8)
    assert thread.is_pr and thread.body == ""
    assert (thread.head_sha, thread.head_ref, thread.base_ref) == ("ab" * 20, "fast-path",
                                                                   "release")
    assert ("GET", f"/repos/{REPO}/pulls/8") in _paths(fake_github)


def test_comments_are_read_page_by_page_up_to_the_limit(fake_github: FakeGitHub,
                                                        client: GitHubClient) -> None:
    fake_github.add_issue(REPO, 9, "t", "b")
    for i in range(250):
        fake_github.add_comment(REPO, 9, f"c{i}", "bob")
    thread = client.read_thread(REPO, 9)
    assert [c.body for c in thread.comments] == [f"c{i}" for i in range(250)]
    pages = fake_github.calls_to("GET", f"/repos/{REPO}/issues/9/comments")
    assert [c.query.get("page") for c in pages] == [None, ["2"], ["3"]]
    assert all(c.query["per_page"] == ["100"] for c in pages)

    limited = client.read_thread(REPO, 9, max_comments=150)
    assert [c.body for c in limited.comments] == [f"c{i}" for i in range(150)]
    # 150 comments need two pages of 100, not three.
    assert len(fake_github.calls_to("GET", f"/repos/{REPO}/issues/9/comments")) == 3 + 2


def test_a_failed_page_resumes_where_it_stopped(fake_github: FakeGitHub,
                                                client: GitHubClient) -> None:
    fake_github.add_issue(REPO, 10, "t", "b")
    for i in range(230):
        fake_github.add_comment(REPO, 10, f"c{i}", "bob")
    # The second page fails twice, then works.
    fake_github.fail("GET", f"/repos/{REPO}/issues/10/comments", 502, times=2)
    fake_github.fail("GET", f"/repos/{REPO}/issues/10/comments", 0)
    fake_github.fail("GET", f"/repos/{REPO}/issues/10/comments", 503)
    thread = client.read_thread(REPO, 10)
    assert [c.body for c in thread.comments] == [f"c{i}" for i in range(230)]


def test_missing_issue_is_a_final_error(client: GitHubClient) -> None:
    with pytest.raises(GitHubError) as caught:
        client.read_thread(REPO, 404)
    assert caught.value.status == 404 and not caught.value.transient


@pytest.mark.parametrize("link_base", ["http://evil.example.com/api/v3",
                                       "http://127.0.0.1:1/api/v3"])
def test_a_link_header_leaving_base_url_is_refused(fake_github: FakeGitHub,
                                                   client: GitHubClient,
                                                   link_base: str) -> None:
    fake_github.add_issue(REPO, 11, "t", "b")
    for i in range(120):
        fake_github.add_comment(REPO, 11, f"c{i}", "bob")
    fake_github.link_base = link_base
    with pytest.raises(GitHubError, match="outside base_url") as caught:
        client.read_thread(REPO, 11)
    assert not caught.value.transient
    # PyGithub refuses before sending anything: the second page is never requested.
    assert len(fake_github.calls_to("GET", f"/repos/{REPO}/issues/11/comments")) == 1


@pytest.mark.parametrize(("permission", "role_name", "expected"), [
    ("admin", None, "admin"),
    ("write", None, "write"),
    ("maintain", None, "maintain"),   # GitHub says permission=write, role_name=maintain
    ("triage", None, "triage"),
    ("read", None, "read"),
    ("write", "security-engineer", "write"),  # a custom role falls back to permission
    ("read", "custom-reader", "read"),
])
def test_permission(fake_github: FakeGitHub, client: GitHubClient, permission: str,
                    role_name: str | None, expected: str) -> None:
    fake_github.set_permission(REPO, "erin", permission, role_name)
    assert client.permission(REPO, "erin") == expected


def test_permission_of_strangers(fake_github: FakeGitHub, client: GitHubClient) -> None:
    # Everyone can read a public repository: "read" is not a trust signal.
    assert client.permission(REPO, "stranger") == "read"
    fake_github.add_repo("acme/private", private=True)
    fake_github.add_installation(2, ["acme/private"])
    with GitHubClient.for_installation(settings_for(fake_github), 2, policy=FAST) as other:
        assert other.permission("acme/private", "stranger") == "none"
    assert fake_github.calls_to("GET", f"/repos/{REPO}/collaborators/stranger/permission")


def test_team_membership(fake_github: FakeGitHub, client: GitHubClient) -> None:
    fake_github.add_team_member("acme", "perf-team", "frank")
    fake_github.add_team_member("acme", "perf-team", "grace", state="pending")
    assert client.in_team("acme", "perf-team", "frank")
    assert not client.in_team("acme", "perf-team", "grace")
    assert not client.in_team("acme", "perf-team", "heidi")
    assert not client.in_team("acme", "other-team", "frank")


def test_file_text(fake_github: FakeGitHub, client: GitHubClient) -> None:
    assert client.file_text(REPO, ".github/triagebot.toml") is None
    fake_github.set_file(REPO, ".github/triagebot.toml", "[repro]\nengine = 'vllm'\n")
    assert client.file_text(REPO, ".github/triagebot.toml") == "[repro]\nengine = 'vllm'\n"
    fake_github.set_file(REPO, "big.txt", "x" * 70_000)
    with pytest.raises(GitHubError, match="70000 bytes") as caught:
        client.file_text(REPO, "big.txt")
    assert not caught.value.transient
    assert client.file_text(REPO, "big.txt", max_bytes=100_000) == "x" * 70_000
    fake_github.set_file(REPO, "huge.bin", b"\0" * (2 * 1024 * 1024))
    with pytest.raises(GitHubError, match="too big for the contents API"):
        client.file_text(REPO, "huge.bin", max_bytes=10 * 1024 * 1024)
    fake_github.set_file(REPO, "latin1.txt", "caf\xe9".encode("latin-1"))
    with pytest.raises(GitHubError, match="not UTF-8"):
        client.file_text(REPO, "latin1.txt")
    with pytest.raises(GitHubError, match="not a file"):
        client.file_text(REPO, ".github")


@pytest.mark.parametrize(("call", "args"), [
    ("read_thread", ("acme/engine/../x", 1)),
    ("read_thread", ("acme", 1)),
    ("read_thread", (REPO, 0)),
    ("read_thread", (REPO, True)),
    ("permission", (REPO, "a/b")),
    ("permission", (REPO, "../admin")),
    ("in_team", ("acme", "team/../x", "bob")),
    ("file_text", (REPO, "../secrets")),
    ("file_text", (REPO, "/etc/passwd")),
    ("file_text", (REPO, "a/./b")),
    ("react", (REPO, 5, "thumbsup")),
    ("add_labels", (REPO, 5, ["x" * 51])),
])
def test_names_from_issues_cannot_steer_requests(fake_github: FakeGitHub,
                                                 client: GitHubClient, call: str,
                                                 args: tuple[object, ...]) -> None:
    with pytest.raises(ValueError):
        getattr(client, call)(*args)
    assert fake_github.calls == []


def test_anonymous_and_token_clients(fake_github: FakeGitHub) -> None:
    fake_github.add_issue(REPO, 12, "public issue", "b")
    settings = settings_for(fake_github, app_id=None, app_private_key=None)
    with GitHubClient.with_token(settings, None, policy=FAST) as anonymous:
        assert anonymous.read_thread(REPO, 12).title == "public issue"
    fake_github.add_repo("acme/private", private=True)
    fake_github.add_issue("acme/private", 1, "private issue", "b")
    fake_github.add_pat("ghp_maintainer", "maint")
    with GitHubClient.with_token(settings, "ghp_maintainer", policy=FAST) as pat:
        assert pat.read_thread("acme/private", 1).title == "private issue"
    with GitHubClient.with_token(settings, "ghp_revoked", policy=FAST) as bad, \
            pytest.raises(GitHubError) as caught:
        bad.read_thread(REPO, 12)
    assert caught.value.status == 401 and not caught.value.transient
    assert {c.auth for c in fake_github.calls} == {"none", "token"}
    assert not fake_github.calls_to("POST", ".*access_tokens")
