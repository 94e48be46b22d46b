"""Installation tokens ask only for what a call needs, and a token GitHub will not mint
is a failed call, never an answer (issue 27, item 6).

Every token used to ask for `members: read`, which only `[access] teams` needs: on an
installation without it every call failed. And a 404 while minting (the App was
uninstalled) was read as "not found": no permission, no config file, not in the team."""

from __future__ import annotations

import pytest

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import APP_PERMISSIONS, FakeGitHub
from tests.github.conftest import FAST, settings_for
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError

MINT = "/app/installations/7/access_tokens"
WITHOUT_MEMBERS = {k: v for k, v in APP_PERMISSIONS.items() if k != "members"}


def _client(fake: FakeGitHub) -> GitHubClient:
    return GitHubClient.for_installation(settings_for(fake), 7, policy=FAST)


def test_an_installation_without_members_read_serves_every_other_call(
        fake_github: FakeGitHub) -> None:
    fake_github.add_installation(7, [REPO], permissions=WITHOUT_MEMBERS)
    fake_github.set_permission(REPO, "maint", "write")
    fake_github.set_file(REPO, ".github/triagebot.toml", "[triage]\n")
    with _client(fake_github) as gh:
        assert gh.permission(REPO, "maint") == "write"
        assert gh.file_text(REPO, ".github/triagebot.toml") == "[triage]\n"
        # Only a team check asks for members: read, and says what is missing.
        with pytest.raises(GitHubError, match=r"members: read.*\[access\] teams") as caught:
            gh.in_team("acme", "perf", "maint")
        assert caught.value.status == 422 and not caught.value.transient
    asked = [c.body["permissions"] for c in fake_github.calls_to("POST", MINT)]
    assert asked[0] == WITHOUT_MEMBERS and asked[-1] == APP_PERMISSIONS


def test_a_team_check_gets_its_own_token_with_members_read(fake_github: FakeGitHub) -> None:
    fake_github.add_installation(7, [REPO])
    fake_github.add_team_member("acme", "perf", "maint")
    with _client(fake_github) as gh:
        assert gh.in_team("acme", "perf", "maint")
        assert not gh.in_team("acme", "perf", "stranger")
    [asked] = [c.body["permissions"] for c in fake_github.calls_to("POST", MINT)]
    assert asked["members"] == "read"


def test_an_uninstalled_app_is_a_failed_call_not_an_absent_resource(
        fake_github: FakeGitHub) -> None:
    fake_github.add_installation(7, [REPO])
    fake_github.set_permission(REPO, "maint", "write")
    fake_github.add_team_member("acme", "perf", "maint")
    fake_github.set_file(REPO, ".github/triagebot.toml", "[triage]\n")
    fake_github.remove_installation(7)
    with _client(fake_github) as gh:
        for call in (lambda: gh.permission(REPO, "maint"),
                     lambda: gh.file_text(REPO, ".github/triagebot.toml"),
                     lambda: gh.in_team("acme", "perf", "maint")):
            with pytest.raises(GitHubError, match="installation 7") as caught:
                call()
            assert caught.value.status == 404 and not caught.value.transient
            assert "uninstalled" in str(caught.value)
    # Nothing was asked of the repository: there was no token to ask with.
    assert not any(c.path.startswith("/repos/") for c in fake_github.calls)
