"""The compare API and a commit's file list, read whole (issue 27, item 1).

GitHub lists at most 250 commits on an unpaged compare (the newest ones) and a commit's
changed files 300 to a page; a client that reads one answer silently loses the rest, and
a bisect over what is left can name the wrong commit."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.fakes.github_fixture import REPO
from tests.fakes.github_server import COMPARE_UNPAGED, FakeGitHub
from triagebot.github.client import GitHubClient
from triagebot.github.errors import GitHubError


def commits(n: int, files: int = 1) -> list[dict[str, Any]]:
    return [{"sha": f"{k + 1:040x}", "message": f"change {k} (#{1000 + k})",
             "files": [f"src/m{k}_{j}.py" for j in range(files)],
             "date": f"2026-01-{1 + k // 20:02d}T{k % 20:02d}:00:00Z"} for k in range(n)]


def test_the_fake_answers_an_unpaged_compare_as_github_does(fake_github: FakeGitHub) -> None:
    fake_github.add_compare(REPO, "v0.1.0", "v0.2.0", commits(300))
    token = "ghp_read"
    fake_github.add_pat(token, "reader")
    data = httpx.get(f"{fake_github.base_url}/repos/{REPO}/compare/v0.1.0...v0.2.0",
                     headers={"Authorization": f"token {token}"}).json()
    assert data["total_commits"] == 300 and len(data["commits"]) == COMPARE_UNPAGED
    assert data["commits"][-1]["sha"] == f"{300:040x}"  # the newest are the ones kept


def test_a_300_commit_compare_is_listed_whole_oldest_first(client: GitHubClient,
                                                          fake_github: FakeGitHub) -> None:
    listed = commits(300)
    fake_github.add_compare(REPO, "v0.1.0", "v0.2.0", listed, base_sha="b" * 40)
    found = client.compare(REPO, "v0.1.0", "v0.2.0", with_files=0)
    assert found is not None
    status, base, items = found
    assert (status, base) == ("ahead", "b" * 40)
    assert [i["sha"] for i in items] == [c["sha"] for c in listed]
    assert items[0]["parents"] == [] and items[1]["parents"] == [listed[0]["sha"]]
    pages = fake_github.calls_to("GET", rf"/repos/{REPO}/compare/v0\.1\.0\.\.\.v0\.2\.0")
    assert all(c.query.get("page") for c in pages) and len(pages) == 3


def test_a_range_github_will_not_list_whole_is_refused(client: GitHubClient,
                                                       fake_github: FakeGitHub) -> None:
    fake_github.add_compare(REPO, "v0.1.0", "v0.2.0", commits(300))
    fake_github.compare_listing_limit = 120
    with pytest.raises(GitHubError, match="listed 120 of the 300 commits") as caught:
        client.compare(REPO, "v0.1.0", "v0.2.0", with_files=0)
    assert not caught.value.transient
    assert "wrong commit" in str(caught.value)


def test_a_commits_changed_files_are_read_from_every_page(client: GitHubClient,
                                                          fake_github: FakeGitHub) -> None:
    [one] = commits(1, files=450)
    fake_github.add_compare(REPO, "v0.1.0", "v0.2.0", [one])
    assert client.commit_files(REPO, one["sha"]) == one["files"]
    found = client.compare(REPO, "v0.1.0", "v0.2.0", with_files=1)
    assert found is not None and found[2][0]["files"] == one["files"]
